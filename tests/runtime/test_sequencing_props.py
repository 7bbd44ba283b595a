"""Property-based tests of the per-key sequencing protocol (hypothesis stateful testing).

A model host drives one :class:`KeySequencer` per key the way the Flink host does: inputs,
in-flight places under a small ``max-in-flight`` (a full slot makes the chains progress, as
the loop thread does while the operator thread waits), chain steps, runs that finish, fail
or pause for approval, collects at timers, approval responses (right, for another request,
naming another key, duplicate), deadlines, and failures of the task that restore every key
from what keyed state holds. After every step it checks:

- per key, runs commit in arrival order and each input at most once; a committed input
  never runs again (also after a restore);
- nothing is lost: every input is committed or still in the keyed state's pending list,
  and at the end, once every request is answered and every chain ran, all are committed;
- a key whose run waits for a decision holds its later inputs (no places, no runs);
- a request is emitted once, also when its run pauses again after a restore;
- in-flight places: the slot's count is the keys' sum, never negative, never above
  ``max-in-flight`` except by places taken at once for inputs that were held;
- the protocol's queue matches a plain model of it (ready inputs, held inputs, places).

The fast suite runs a fixed, derandomized budget; ``make test-props`` runs a long one
(``FLINK_AGENTS_PROPS=long``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from flink_agents.api.approval import ApprovalRequest, ApprovalResponse
from flink_agents.runtime.core import APPROVAL_REQUEST, DurableRecord, RunResult
from flink_agents.runtime.sequencing import (
    GIVE_BACK,
    JOINED,
    REFUSED,
    STARTED,
    Arrival,
    Commit,
    Decision,
    Drop,
    Fail,
    KeySequencer,
    Pause,
    Resume,
    Run,
    SaveDecision,
    Stop,
)

KEYS = ("a", "b", "c")
BOUND = 2  # max-in-flight: small, so that the slot is often full
TIMEOUT = 10.0  # approval.timeout of the model agent (seconds)

_PROFILES = {
    # The fast suite: the same examples every time.
    "fast": settings(
        max_examples=200,
        stateful_step_count=60,
        derandomize=True,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    ),
    # make test-props
    "long": settings(
        max_examples=int(os.environ.get("FLINK_AGENTS_PROPS_EXAMPLES", "20000")),
        stateful_step_count=80,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    ),
}
PROFILE = os.environ.get("FLINK_AGENTS_PROPS", "fast")


@dataclass(frozen=True)
class Item:
    """An input: ``approvals`` is how many decisions its run asks for, one after another."""

    id: str
    key: str
    seq_no: int
    approvals: int


@dataclass
class Mirror:
    """A plain model of one key's queue: ``(input id, has a place, took it past the bound)``
    in run order, the running input, the inputs waiting for the host to take a place."""

    queue: list[tuple[str, bool, bool]] = field(default_factory=list)
    running: tuple[str, bool] | None = None
    waiting: list[str] = field(default_factory=list)
    #: normal / halted / paused / resuming / failed, as the host sees the decisions.
    mode: str = "normal"
    resuming: str | None = None


class Deadlock(AssertionError):
    """The slot is full and no chain can make progress."""


class SequencingMachine(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        # Keyed state (survives failures).
        self.pending: dict[str, list[Item]] = {k: [] for k in KEYS}
        self.durable: dict[str, dict[str, dict[str, DurableRecord]]] = {k: {} for k in KEYS}
        self.noted: dict[str, str | None] = {k: None for k in KEYS}  # fa-approval
        # What left the job (never rolled back in this model: every step is a checkpoint).
        self.committed: dict[str, list[Item]] = {k: [] for k in KEYS}
        self.emitted: set[str] = set()
        self.answered: dict[str, list[ApprovalRequest]] = {k: [] for k in KEYS}
        # The task (lost on failure).
        self.seqs: dict[str, KeySequencer] = {}
        self.mirrors: dict[str, Mirror] = {}
        self.running: dict[str, tuple[Item, dict[str, DurableRecord] | None]] = {}
        #: Keys whose chain started and has not taken its first step (next_run) yet.
        self.starting: set[str] = set()
        self.in_flight = 0
        self.failures = 0
        self.clock = 1000.0
        self.counter = 0
        self.live: dict[str, dict[str, DurableRecord]] = {}

    # -- the model agent --------------------------------------------------------------------
    def _outcome(self, item: Item, log: dict[str, DurableRecord] | None) -> RunResult:
        """What a run of ``item`` with the durable log ``log`` ends with: call ids 2k-1 and
        2k are the k-th request and its decision (as ``RunContext.request_approval``)."""
        log = dict(log or {})
        new: dict[str, DurableRecord] = {}
        decisions = []
        for k in range(item.approvals):
            request_call, decision_call = str(2 * k + 1), str(2 * k + 2)
            if request_call in log:
                request = log[request_call].result
            else:
                self.counter += 1
                request = ApprovalRequest(
                    request_id=f"r{self.counter}",
                    key=item.key,
                    tool_name="t",
                    created_at=self.clock,
                    expires_at=self.clock + TIMEOUT,
                )
                new[request_call] = log[request_call] = DurableRecord(
                    APPROVAL_REQUEST, result=request
                )
            if decision_call not in log:
                return RunResult(
                    key=item.key,
                    outputs=[request],
                    durable_records=new,
                    approval=request,
                    approval_call_id=decision_call,
                )
            decisions.append(log[decision_call].result.approved)
        return RunResult(key=item.key, outputs=[(item.id, decisions)], durable_records=new)

    # -- the host -------------------------------------------------------------------------------
    def _seq(self, key: str) -> KeySequencer:
        """The key's sequencer; after a failure, restored first from keyed state."""
        seq = self.seqs.get(key)
        if seq is not None:
            return seq
        seq = self.seqs[key] = KeySequencer(key)
        mirror = self.mirrors[key] = Mirror()
        items = list(self.pending[key])
        if items:
            durable = {i: dict(c) for i, c in self.durable[key].items()}
            restored = seq.restore(items, durable, self.noted[key])
            assert restored.places == len(items)
            event("restore")
            if restored.clear_request:
                event("restore: the decision came before the failure")
                self.noted[key] = None
            mirror.waiting.extend(i.id for i in items)
            for _ in range(restored.places):
                self._place(key)
        return seq

    def _place(self, key: str, *, failing: bool = False) -> None:
        """Take a place (a full slot: the chains progress meanwhile, their runs failing if
        ``failing``) and do what the protocol says."""
        while self.in_flight >= BOUND:
            event("slot full: chains progress")
            self._progress(failing)
        self.in_flight += 1
        mirror = self.mirrors[key]
        placement = self.seqs[key].placed()
        item_id = mirror.waiting.pop(0)
        if item_id == mirror.resuming:
            held = [q for q in mirror.queue if not q[1]]
            assert placement.extra == len(held)
            assert placement.action in (STARTED, JOINED)
            mirror.queue = [(item_id, True, False)] + [
                (i, True, has or True) if not has else (i, has, extra)
                for i, has, extra in mirror.queue
            ]
            mirror.resuming = None
            mirror.mode = "normal"
            self.in_flight += placement.extra
            if placement.action == STARTED:
                self.starting.add(key)
            if placement.extra:
                event("resume: held inputs take places at once")
            if self.in_flight > BOUND:
                event("in flight past max-in-flight")
            return
        assert placement.extra == 0
        if mirror.mode == "normal":
            assert placement.action in (STARTED, JOINED)
            mirror.queue.append((item_id, True, False))
            if placement.action == STARTED:
                self.starting.add(key)
        elif mirror.mode == "failed":
            assert placement.action == REFUSED
            event("placed: refused")
            self.in_flight -= 1
        else:
            assert placement.action == GIVE_BACK  # paused meanwhile: held
            event("placed: given back")
            mirror.queue.append((item_id, False, False))
            self.in_flight -= 1

    def _progress(self, failing: bool) -> None:
        """What the loop thread does while the operator thread waits for a place."""
        for key in KEYS:
            if key in self.running:
                self._finish(key, fail=failing)
                return
            if key in self.seqs and self._chain(key):
                return
        raise Deadlock("the slot is full and no chain can go on")

    def _chain(self, key: str) -> bool:
        """The first step of ``key``'s chain, if a chain started and has not taken it."""
        if key not in self.starting:
            return False
        self.starting.discard(key)
        return self._step(key, self.seqs[key].next_run())

    def _step(self, key: str, step: Run | Stop) -> bool:
        """The chain's next step (from next_run or finished); whether it freed places or
        started a run."""
        mirror = self.mirrors[key]
        if isinstance(step, Stop):
            placed = [q for q in mirror.queue if q[1]]
            assert step.release == len(placed)
            if mirror.mode == "failed":
                mirror.queue = []
            else:
                assert step.release == 0 or mirror.mode != "normal"
                mirror.queue = [(i, False, False) for i, _, _ in mirror.queue]
            self.in_flight -= step.release
            return step.release > 0
        assert isinstance(step, Run)
        item: Item = step.item
        item_id, has_place, extra = mirror.queue.pop(0)
        assert (item.id, has_place) == (item_id, True), "ran out of order or without a place"
        assert mirror.mode == "normal", "a run started while its key waits for a decision"
        assert all(item.id != c.id for c in self.committed[key]), "a committed input ran again"
        mirror.running = (item.id, extra)
        self.running[key] = (item, step.durable)
        return True

    def _finish(self, key: str, *, fail: bool) -> None:
        """The key's run ends; the chain goes on with the step the protocol answers."""
        item, log = self.running.pop(key)
        mirror = self.mirrors[key]
        mirror.running = None
        outcome: Any
        if fail:
            outcome = RuntimeError(f"run of {item.id} failed")
            mirror.mode = "failed"
        else:
            outcome = self._outcome(item, log)
            self.live[item.id] = {**(log or {}), **outcome.durable_records}
            if outcome.approval is not None:
                mirror.mode = "halted"
        step = self.seqs[key].finished(item, outcome)
        self.in_flight -= 1
        self._step(key, step)

    def _apply(self, key: str, decisions: Any) -> None:
        for decision in decisions:
            self._apply_one(key, decision)
            if key not in self.seqs:
                return  # the task failed

    def _apply_one(self, key: str, decision: Decision) -> None:
        mirror = self.mirrors[key]
        if isinstance(decision, Commit):
            item = decision.item
            oldest = self.pending[key][0]
            assert item.id == oldest.id, "committed out of input order"
            self.pending[key].pop(0)
            self.durable[key].pop(item.id, None)
            self.committed[key].append(item)
        elif isinstance(decision, Pause):
            item = decision.item
            assert item.id == self.pending[key][0].id, "a later input paused first"
            self.durable[key][item.id] = dict(self.live[item.id])
            request_id = decision.request.request_id
            if decision.emit:
                assert request_id not in self.emitted, "a request was emitted twice"
                self.emitted.add(request_id)
                self.noted[key] = request_id
            else:
                event("pause: request not emitted again")
                assert request_id in self.emitted and self.noted[key] == request_id
            mirror.mode = "paused"
        elif isinstance(decision, Fail):
            event("a run failed")
            self._fail_task()
        elif isinstance(decision, Resume):
            event("resume")
            item_id = decision.item.id
            self.durable[key].setdefault(item_id, {})[decision.call_id] = decision.record
            self.answered[key].append(self._request_of(key, item_id, decision.call_id))
            self.noted[key] = None
            mirror.mode = "resuming"
            mirror.resuming = item_id
            mirror.waiting.insert(0, item_id)
            self._place(key)
        elif isinstance(decision, Drop):
            pass
        elif isinstance(decision, SaveDecision):
            event("early response saved")
            self.durable[key].setdefault(decision.item_id, {})[decision.call_id] = decision.record
        else:
            raise AssertionError(f"unknown decision {decision!r}")

    def _request_of(self, key: str, item_id: str, decision_call: str) -> ApprovalRequest:
        request_call = str(int(decision_call) - 1)
        return self.durable[key][item_id][request_call].result  # type: ignore[no-any-return]

    def _fail_task(self) -> None:
        """The task fails: everything but keyed state is gone; keys restore lazily."""
        self.failures += 1
        self.seqs.clear()
        self.mirrors.clear()
        self.running.clear()
        self.starting.clear()
        self.live.clear()
        self.in_flight = 0

    # -- rules ----------------------------------------------------------------------------------
    @rule(
        key=st.sampled_from(KEYS),
        approvals=st.sampled_from([0, 0, 0, 1, 1, 2]),
        failing=st.sampled_from([False] * 5 + [True]),
    )
    def an_input_arrives(self, key: str, approvals: int, failing: bool) -> None:
        """An input of ``key`` whose run asks for ``approvals`` decisions; if the slot is
        full, the runs that end while it waits for a place fail if ``failing``."""
        seq = self._seq(key)
        mirror = self.mirrors[key]
        self.counter += 1
        item = Item(f"{key}{self.counter}", key, self.counter, approvals)
        self.pending[key].append(item)
        arrival = seq.arrive(item)
        if mirror.mode in ("halted", "paused", "resuming"):
            assert arrival is Arrival.HOLD, "a key waiting for a decision took an input"
            mirror.queue.append((item.id, False, False))
        elif mirror.mode == "failed":
            assert arrival is Arrival.REFUSE
        else:
            assert arrival is Arrival.PLACE
            mirror.waiting.append(item.id)
            self._place(key, failing=failing)

    @rule(key=st.sampled_from(KEYS), fail=st.sampled_from([False, False, False, True]))
    def the_loop_thread_works(self, key: str, fail: bool) -> None:
        """The key's run ends (failing if ``fail``), or its chain takes its next step."""
        if key in self.running:
            self._finish(key, fail=fail)
        elif key in self.seqs:
            self._chain(key)

    @rule(key=st.sampled_from(KEYS))
    def the_keys_timer_fires(self, key: str) -> None:
        if key not in self.seqs and not self.pending[key]:
            return  # a stale timer
        seq = self._seq(key)
        self._apply(key, seq.collect())
        if key not in self.seqs:
            return
        expired = seq.expire(self.clock)
        if expired is not None:
            event("expired")
            self._apply(key, [expired])
        if key in self.seqs and seq.done:
            assert not self.pending[key], "a key went idle with uncommitted inputs"
            del self.seqs[key], self.mirrors[key]
            assert key not in self.starting and key not in self.running

    @rule(
        key=st.sampled_from(KEYS),
        kind=st.sampled_from(["right", "right", "other id", "other key", "duplicate"]),
        approve=st.booleans(),
    )
    def a_response_arrives(self, key: str, kind: str, approve: bool) -> None:
        seq = self._seq(key) if self.pending[key] or key in self.seqs else None
        request_id = self.noted[key]
        if kind == "right" and request_id is None:
            kind = "duplicate"
        if kind == "duplicate":
            if not self.answered[key]:
                return
            request_id = self.answered[key][-1].request_id
        if kind == "other id" or request_id is None:
            request_id = "unknown"
        named = "elsewhere" if kind == "other key" else key
        response = ApprovalResponse(request_id=request_id, key=named, approved=approve)
        if seq is None:
            [drop] = KeySequencer(key).respond(response)
            assert isinstance(drop, Drop)
            return
        paused = seq.paused
        decisions = seq.respond(response)
        right = paused is not None and kind == "right"
        assert any(isinstance(d, Resume) for d in decisions) == right
        if kind in ("other id", "other key", "duplicate"):
            assert all(isinstance(d, Drop) for d in decisions) or (
                kind == "other key" and decisions == []  # kept early, not saved
            )
        self._apply(key, decisions)

    @rule(seconds=st.sampled_from([1.0, 5.0, 20.0]))
    def time_passes(self, seconds: float) -> None:
        self.clock += seconds

    @precondition(lambda self: self.failures < 4 and any(self.pending.values()))
    @rule()
    def the_task_fails(self) -> None:
        self._fail_task()

    # -- invariants -----------------------------------------------------------------------------
    @invariant()
    def places_add_up(self) -> None:
        if not hasattr(self, "seqs"):
            return
        total = sum(seq.places for seq in self.seqs.values())
        assert self.in_flight == total >= 0
        modelled = 0
        past_bound = 0
        for key, mirror in self.mirrors.items():
            assert self.seqs[key].places == sum(1 for q in mirror.queue if q[1]) + (
                mirror.running is not None
            )
            modelled += self.seqs[key].places
            past_bound += sum(1 for q in mirror.queue if q[1] and q[2])
            past_bound += 1 if mirror.running is not None and mirror.running[1] else 0
        assert self.in_flight == modelled <= BOUND + past_bound

    @invariant()
    def held_inputs_wait_without_places(self) -> None:
        if not hasattr(self, "seqs"):
            return
        for key, seq in self.seqs.items():
            mirror = self.mirrors[key]
            if mirror.mode in ("paused", "resuming"):
                assert key not in self.running
            held = [q for q in mirror.queue if not q[1]]
            assert seq.held == len(held) and all(not extra for _, _, extra in held)

    @invariant()
    def nothing_lost_nothing_twice(self) -> None:
        if not hasattr(self, "seqs"):
            return
        for key in KEYS:
            done = [i.seq_no for i in self.committed[key]]
            assert done == sorted(set(done)), "outputs out of order or twice"
            left = [i.seq_no for i in self.pending[key]]
            assert left == sorted(left)
            assert not set(done) & set(left)

    def teardown(self) -> None:
        """Answer every request, let every chain and timer finish: all inputs committed."""
        if not hasattr(self, "seqs"):
            return
        for _ in range(200):
            busy = False
            for key in KEYS:
                if not self.pending[key] and key not in self.seqs:
                    continue
                busy = True
                if key in self.running:
                    self._finish(key, fail=False)
                elif key in self.seqs and self._chain(key):
                    pass
                else:
                    self.the_keys_timer_fires(key)
                    seq = self.seqs.get(key)
                    if seq is not None and seq.paused is not None:
                        self._apply(key, seq.respond(seq.paused.request.approve()))
            if not busy:
                break
        for key in KEYS:
            assert not self.pending[key], f"inputs of {key} never committed: {self.pending[key]}"
            assert key not in self.seqs


SequencingMachine.TestCase.settings = _PROFILES[PROFILE]
TestSequencing = SequencingMachine.TestCase
