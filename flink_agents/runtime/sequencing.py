"""The per-key sequencing protocol: one pure state machine that both hosts drive.

A :class:`KeySequencer` decides, for one key, which input runs when, what happens to the
key's later inputs while a run waits for a human decision, and in which order finished runs
are committed. It has no threads, no Flink and no asyncio: a host tells it what happened
(an input arrived, an in-flight place was taken, a run finished, failed or paused, an
approval response arrived, a deadline passed, a restore handed back pending inputs and
durable records) and gets back what to do (start or continue the key's chain, hold the
input, give in-flight places back, commit and emit in input order, pause and emit the
request once, resume, drop a response and say why, fail). The hosts only store state, emit
and schedule: ``runtime/local/runner.py`` on one asyncio loop, ``runtime/flink/function.py``
and ``slot.py`` on the operator thread and the slot's loop thread, which call a key's
sequencer under the key's lock (the lock is the host's; the sequencer is not thread-safe).

States, transitions and how each host drives them: docs/ARCHITECTURE.md, "The per-key
protocol". The decision types are frozen; a host handles every one of them (a test checks
that each host names each type), so a new outcome (a dead letter, say) is a new type here
and a branch in each host.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple, Protocol

from flink_agents.api.approval import ApprovalRequest, ApprovalResponse
from flink_agents.runtime.approval import PausedRun, expired_response, response_problem
from flink_agents.runtime.core.records import (
    APPROVAL_DECISION,
    APPROVAL_REQUEST,
    DurableRecord,
    RunResult,
    decision_call_id,
)

#: A run's durable call log: call id -> record.
Log = dict[str, DurableRecord]


class Input(Protocol):
    """What the protocol needs of an input: a unique id (its durable records' name)."""

    @property
    def id(self) -> str: ...


# -- modes of a key (the diagram's states are derived from the mode and the queues) ----------
NORMAL: Final = "normal"
HALTED: Final = "halted"  # a run paused on the chain; the host has not seen the pause yet
PAUSED: Final = "paused"  # the host has the pause: the request is out, a decision awaited
RESUMING: Final = "resuming"  # a decision came; the paused input waits for its place
FAILED: Final = "failed"  # a run failed; the host fails the task


# -- what arrive() says ------------------------------------------------------------------------
class Arrival:
    """What to do with an input that arrived (:meth:`KeySequencer.arrive`)."""

    #: Take an in-flight place for it (waiting for one is the backpressure), then call
    #: :meth:`KeySequencer.placed`.
    PLACE: Final = "place"
    #: Keep it (in keyed state) without a place: it waits behind a run that waits for a
    #: decision and gets a place when that run resumes.
    HOLD: Final = "hold"
    #: The key's chain failed; the input is not run (it stays pending: the task fails and a
    #: restore runs it).
    REFUSE: Final = "refuse"


# -- decisions -----------------------------------------------------------------------------------
# Decisions, like everything the protocol hands out, are immutable named tuples rather than
# frozen dataclasses: the synchronous path makes two per record (a Run, a Commit), and a
# frozen dataclass costs ten times a tuple to make (``tuple.__new__`` below: no Python-level
# __init__).


class Commit(NamedTuple):
    """A run finished: commit its memory changes, emit its outputs, forget its input.

    Attributes:
        item: the input.
        result: the run's result.
    """

    item: Any
    result: RunResult


class Pause(NamedTuple):
    """A run paused for a human decision: keep its input and durable records uncommitted,
    emit the request if ``emit`` (not when a run paused again after a restore with a request
    the key emitted before), and wake the key at ``request.expires_at``.

    Attributes:
        item: the paused input.
        result: the paused run's result (its one output is the request).
        emit: whether to emit the request (and note its id as emitted).
    """

    item: Any
    result: RunResult
    emit: bool

    @property
    def request(self) -> ApprovalRequest:
        """The request the run waits for."""
        assert self.result.approval is not None
        return self.result.approval


class Fail(NamedTuple):
    """A run failed: the host raises ``error`` (the Flink task fails, a restore runs the
    uncommitted inputs again; the local batch fails).

    Attributes:
        item: the input whose run failed.
        error: the exception.
    """

    item: Any
    error: BaseException


class Resume(NamedTuple):
    """A paused run has its decision (a response, or a rejection at the deadline): write
    ``record`` as the input's durable record ``call_id``, forget the emitted request, take an
    in-flight place for the input (waiting if need be) and call :meth:`KeySequencer.placed`.

    Attributes:
        item: the paused input, which runs again.
        call_id: the durable call id the decision goes under.
        record: the decision record.
    """

    item: Any
    call_id: str
    record: DurableRecord


class Drop(NamedTuple):
    """An approval response resumes nothing: log ``reason`` and count it
    (``numOfApprovalResponsesDropped``).

    Attributes:
        response: the response.
        reason: why it was dropped.
    """

    response: ApprovalResponse
    reason: str


class SaveDecision(NamedTuple):
    """A response came while the key's input re-runs after a restore, before it paused
    again: write its decision record at once (it is matched when the run pauses; a second
    failure before that does not lose it).

    Attributes:
        item_id: the input whose request it answers.
        call_id: the durable call id of the decision.
        record: the decision record.
    """

    item_id: str
    call_id: str
    record: DurableRecord


#: What :meth:`KeySequencer.collect`, :meth:`~KeySequencer.respond` and
#: :meth:`~KeySequencer.expire` hand to the host, in the order the host must act on them.
Decision = Commit | Pause | Fail | Resume | Drop | SaveDecision


class Run(NamedTuple):
    """The chain's next step: run ``item`` with the durable log ``durable`` (None: none).

    Attributes:
        item: the input.
        durable: durable records to answer its calls from (a restore's, or a paused run's
            with its decision), or None.
    """

    item: Any
    durable: Log | None


class Stop(NamedTuple):
    """The chain stops (nothing to run now): give back ``release`` in-flight places, of
    queued inputs that will not run now (held behind a paused run, or behind a failure).

    Attributes:
        release: places to give back.
    """

    release: int


class Placement(NamedTuple):
    """What to do once a place was taken for the key's next waiting input
    (:meth:`KeySequencer.placed`).

    Attributes:
        action: :data:`STARTED` (start the key's chain), :data:`JOINED` (the running chain
            takes it), :data:`GIVE_BACK` (it waits behind a paused run after all: give the
            place back) or :data:`REFUSED` (the chain failed: give the place back).
        extra: places to take at once, without waiting and past ``max-in-flight`` if need
            be, for inputs that waited behind a paused run and run again now (waiting could
            wait on places only they would give back).
    """

    action: str
    extra: int = 0


STARTED: Final = "started"
JOINED: Final = "joined"
GIVE_BACK: Final = "give back"
REFUSED: Final = "refused"

_STOP: Final = Stop(0)
_START: Final = Placement(STARTED)
_JOIN: Final = Placement(JOINED)
_GIVE_BACK: Final = Placement(GIVE_BACK)
_REFUSE: Final = Placement(REFUSED)
_NOTHING: Final[tuple[Decision, ...]] = ()
_new = tuple.__new__


class Restored(NamedTuple):
    """What :meth:`KeySequencer.restore` says.

    Attributes:
        places: places to take, one after another, each followed by
            :meth:`KeySequencer.placed` (the restored inputs run first, in their order).
        clear_request: the emitted request's decision is among the durable records (it came
            before the failure): forget the emitted request id; the run replays past it.
    """

    places: int
    clear_request: bool


class _Approval:
    """What a key keeps once one of its runs paused for a decision (made then, or by a
    restore of a key with an emitted request): rare, so kept apart from the hot fields."""

    __slots__ = ("early", "emitted", "held", "paused", "replay", "resuming")

    def __init__(self) -> None:
        #: Inputs without a place, behind the run that waits (arrival order).
        self.held: list[Any] = []
        #: The run that waits for a decision (set when it pauses; cleared on resume).
        self.paused: PausedRun | None = None
        #: The paused input after its decision, until its place is taken.
        self.resuming: Any = None
        #: Id of the request the key emitted and that waits for a decision (the Flink host
        #: keeps it in keyed state, so that a run paused again after a restore does not
        #: emit it twice).
        self.emitted: str | None = None
        #: A restore's durable records while its emitted request is undecided (to find the
        #: request an early response answers).
        self.replay: dict[str, Log] | None = None
        #: Responses that came while the key re-runs after a restore, before it paused.
        self.early: list[ApprovalResponse] | None = None


class KeySequencer:
    """The sequencing protocol of one key.

    Inputs of the key run one at a time, in arrival order, on a *chain*: whoever finishes a
    run asks :meth:`next_run` for the next one, so consecutive inputs need no round trip
    through the host. Finished runs wait in order until the host collects them. A run that
    pauses for approval halts the chain; the key's later inputs are held without in-flight
    places until a decision resumes it.

    The host calls, for the key:

    - ``KeySequencer(key, first=item)`` for a key without work whose input got a place: its
      chain has started (a key without work takes every input; this is the synchronous
      path, so it skips ``arrive`` and ``placed``);
    - ``arrive(item)`` for each later input, then (``Arrival.PLACE``) takes an in-flight
      place and calls ``placed()``;
    - ``restore(items, durable, emitted)`` once, first, when keyed state holds inputs of the
      key from before a restore;
    - ``next_run()``, then ``finished(item, outcome)`` after each run, on the chain (after
      ``STARTED``): each answers the chain's next step;
    - ``collect()`` to commit what finished, ``respond(response)`` for an approval response,
      ``expire(now)`` when the key's timer fires.

    Args:
        key: the key.
        first: the first input of a key without work, with its place taken: the chain
            starts with it (the host starts it).

    Attributes:
        key: the key.
    """

    __slots__ = (
        "_approval",
        "_chain_on",
        "_current",
        "_finished",
        "_logs",
        "_mode",
        "_places",
        "_runnable",
        "_to_place",
        "key",
    )

    def __init__(self, key: Any, first: Input | None = None) -> None:
        self.key = key
        self._mode: str = NORMAL
        #: Inputs waiting for the host to take their place (first first), made when needed.
        self._to_place: list[Any] | None = None
        #: The run in progress (its input and log), if any.
        self._current: Run | None = None
        #: Finished runs not collected yet, as decisions, in input order (a pause: None).
        self._finished: list[Decision | None] = []
        #: Durable logs to run inputs with, by input id (a restore's, a resume's).
        self._logs: dict[str, Log] | None = None
        self._approval: _Approval | None = None
        if first is None:
            #: Inputs with an in-flight place, next to run first (a list: cheaper to make
            #: than a deque, and a key's queue is short: at most its places and held inputs).
            self._runnable: list[Any] = []
            #: Whether a chain runs the key (between STARTED and the Stop it ends with).
            self._chain_on = False
            #: In-flight places the key holds: its ready inputs and its running one.
            self._places = 0
        else:
            self._runnable = [first]
            self._chain_on = True
            self._places = 1

    def __repr__(self) -> str:
        return (
            f"KeySequencer({self.key!r}, {self.state}, ready={len(self._runnable)}, "
            f"held={self.held}, places={self._places})"
        )

    # -- queries ----------------------------------------------------------------------------
    @property
    def state(self) -> str:
        """The key's state in docs/ARCHITECTURE.md's diagram: ``idle``, ``running``,
        ``settled`` (finished runs to collect, nothing running), ``halted``, ``paused``,
        ``resuming`` or ``failed``."""
        if self._mode is not NORMAL:
            return self._mode
        if self._chain_on or self._runnable or self._to_place:
            return "running"
        return "settled" if self._finished else "idle"

    @property
    def done(self) -> bool:
        """Nothing of the key is waiting, queued, running, uncollected or paused: the host
        may forget the key."""
        return (
            self._mode is NORMAL
            and not self._chain_on
            and not self._runnable
            and not self._finished
            and not self._to_place
        )

    @property
    def waits_for_decision(self) -> bool:
        """A run of the key waits for an approval decision and nothing else of the key runs:
        it wakes up for a response or at the request's deadline only."""
        return self._mode is PAUSED and not self._chain_on

    @property
    def paused(self) -> PausedRun | None:
        """The run waiting for a decision, once the host has its pause."""
        approval = self._approval
        return approval.paused if self._mode is PAUSED and approval is not None else None

    @property
    def places(self) -> int:
        """In-flight places the key holds."""
        return self._places

    @property
    def held(self) -> int:
        """Inputs held without a place behind a run that waits for a decision."""
        return len(self._approval.held) if self._approval is not None else 0

    # -- inputs (the host's side: the operator thread, the local key's task) ------------------
    def arrive(self, item: Input) -> str:
        """An input of the key arrived (the host keeps it until it is committed).

        Returns:
            An :class:`Arrival` constant.
        """
        mode = self._mode
        if mode is NORMAL:
            if self._to_place is None:
                self._to_place = [item]
            else:
                self._to_place.append(item)
            return Arrival.PLACE
        if mode is FAILED:
            return Arrival.REFUSE
        assert self._approval is not None  # halted, paused or resuming
        self._approval.held.append(item)
        return Arrival.HOLD

    def placed(self) -> Placement:
        """The host took an in-flight place for the first waiting input (an arrival, a
        restored input or a resumed one)."""
        if not self._to_place:
            raise RuntimeError(f"no input of key {self.key!r} waits for a place")
        item = self._to_place.pop(0)
        approval = self._approval
        if approval is not None and item is approval.resuming:
            # The paused input runs again first, then the held ones, which take their places
            # now without waiting.
            approval.resuming = None
            self._mode = NORMAL
            held = approval.held
            self._runnable[:0] = [item]
            self._runnable.extend(held)
            extra = len(held)
            approval.held = []
            self._places += 1 + extra
            if self._chain_on:
                return Placement(JOINED, extra) if extra else _JOIN
            self._chain_on = True
            return Placement(STARTED, extra) if extra else _START
        mode = self._mode
        if mode is NORMAL:
            self._runnable.append(item)
            self._places += 1
            if self._chain_on:
                return _JOIN
            self._chain_on = True
            return _START
        if mode is FAILED:
            return _REFUSE
        assert approval is not None
        approval.held.append(item)  # the key's run paused meanwhile
        return _GIVE_BACK

    def restore(self, items: list[Any], durable: dict[str, Log], emitted: str | None) -> Restored:
        """Keyed state holds ``items`` of the key from before a restore (in arrival order),
        their durable records ``durable`` (by input id) and the id of the approval request
        the key emitted (``emitted``, None: none). Call it on a new sequencer, before any
        other input of the key: the restored inputs run first."""
        if (
            self._mode is not NORMAL
            or self._chain_on
            or self._runnable
            or self._to_place
            or self._finished
        ):
            raise RuntimeError(f"restore() on key {self.key!r} that has inputs already")
        self._to_place = list(items)
        self._logs = dict(durable) if durable else None
        decided = emitted is not None and (
            _approval_record(durable, APPROVAL_DECISION, emitted) is not None
        )
        if emitted is not None and not decided:
            approval = self._approval = _Approval()
            approval.emitted = emitted
            approval.replay = durable
        return Restored(places=len(items), clear_request=decided)

    def collect(self) -> Sequence[Decision]:
        """Finished runs, to commit in this order (a failure: raise; a pause: the last one,
        possibly followed by what responses that came early say)."""
        done = self._finished
        if not done:
            return _NOTHING
        self._finished = []
        if self._mode is not HALTED:
            return done  # type: ignore[return-value]  # None only while halted
        # The last one paused: the host has the pause now.
        approval = self._approval
        assert approval is not None and approval.paused is not None and done[-1] is None
        paused = approval.paused
        request_id = paused.request.request_id
        done[-1] = Pause(paused.item, paused.result, emit=request_id != approval.emitted)
        approval.emitted = request_id
        self._mode = PAUSED
        early, approval.early = approval.early, None
        for response in early or ():
            if self._mode is PAUSED:
                done.append(self._answer(response))
            else:
                done.append(Drop(response, "the request was answered already"))
        return done  # type: ignore[return-value]

    def respond(self, response: ApprovalResponse) -> list[Decision]:
        """An approval response arrived under the key."""
        if self._mode is PAUSED:
            return [self._answer(response)]
        approval = self._approval
        if approval is not None and response.request_id == approval.emitted:
            # The key re-runs after a restore and has not paused again yet: matched when it
            # does; its decision goes to keyed state now.
            if approval.early is None:
                approval.early = []
            approval.early.append(response)
            if response.key == self.key and approval.replay is not None:
                found = _approval_record(approval.replay, APPROVAL_REQUEST, response.request_id)
                if found is not None:
                    item_id, call_id = found
                    record = DurableRecord(APPROVAL_DECISION, result=response)
                    return [SaveDecision(item_id, decision_call_id(call_id), record)]
            return []
        problem = response_problem(None, self.key, response)
        assert problem is not None
        return [Drop(response, problem)]

    def expire(self, now: float) -> Resume | None:
        """The key's timer fired at ``now`` (seconds since the epoch): a request past its
        deadline is rejected."""
        paused = self.paused
        if paused is None:
            return None
        deadline = paused.request.expires_at
        if deadline is None or now < deadline:
            return None
        return self._resume(expired_response(paused.request))

    # -- the chain (the loop thread, the local key's task) -----------------------------------
    def next_run(self) -> Run | Stop:
        """The first step of a chain (the later ones come from :meth:`finished`). A
        :class:`Stop` ends the chain (a new one starts with the next ``STARTED``)."""
        if not self._chain_on or self._current is not None:
            raise RuntimeError(f"next_run() on key {self.key!r} outside its chain")
        if self._mode is not NORMAL:
            return self._stop()
        runnable = self._runnable
        if runnable:
            item = runnable.pop(0)
            logs = self._logs
            run = self._current = _new(Run, (item, logs.pop(item.id, None) if logs else None))
            return run
        self._chain_on = False
        return _STOP

    def finished(self, item: Input, outcome: RunResult | BaseException) -> Run | Stop:
        """The run of ``item`` ended with ``outcome`` (a result, or the exception it raised);
        its in-flight place is free. Returns the chain's next step, as :meth:`next_run`.

        A paused result changes no memory (the resumed run makes its changes), so the chain
        may carry any result's memory on to the next run.
        """
        run = self._current
        if run is None or run[0] is not item:
            raise RuntimeError(f"finished() for an input of key {self.key!r} that is not running")
        self._current = None
        self._places -= 1
        if not isinstance(outcome, RunResult):
            self._mode = FAILED
            self._finished.append(Fail(item, outcome))
            return self._stop()
        if outcome.approval is not None:
            self._mode = HALTED
            if self._approval is None:
                self._approval = _Approval()
            self._approval.paused = PausedRun.of(item, run[1], outcome)
            self._finished.append(None)
            return self._stop()
        self._finished.append(_new(Commit, (item, outcome)))
        # The next step, as next_run (written out: this is every run's path).
        runnable = self._runnable
        if runnable and self._mode is NORMAL:
            item = runnable.pop(0)
            logs = self._logs
            run = self._current = _new(Run, (item, logs.pop(item.id, None) if logs else None))
            return run
        if self._mode is not NORMAL:
            return self._stop()
        self._chain_on = False
        return _STOP

    def cancelled(self) -> None:
        """The chain was cancelled (the task stops; nothing of it will be committed, and
        the slot's places go with the slot)."""
        self._places = 0
        self._runnable.clear()
        self._chain_on = False
        self._current = None

    # -- helpers ----------------------------------------------------------------------------
    def _stop(self) -> Stop:
        """End the chain of a key whose run failed or waits for a decision: its queued
        inputs give their places back (held behind the decision, or left to the restore)."""
        self._chain_on = False
        runnable = self._runnable
        count = len(runnable)
        if not count:
            return _STOP
        self._places -= count
        if self._mode is not FAILED:
            assert self._approval is not None
            self._approval.held[:0] = runnable
        runnable.clear()
        return Stop(count)

    def _answer(self, response: ApprovalResponse) -> Decision:
        paused = self.paused
        problem = response_problem(
            paused.request if paused is not None else None, self.key, response
        )
        if problem is not None:
            return Drop(response, problem)
        return self._resume(response)

    def _resume(self, response: ApprovalResponse) -> Resume:
        approval = self._approval
        assert approval is not None and approval.paused is not None and self._mode is PAUSED
        paused = approval.paused
        approval.paused = None
        approval.emitted = None
        approval.replay = None
        approval.resuming = paused.item
        self._mode = RESUMING
        record = DurableRecord(APPROVAL_DECISION, result=response)
        if self._logs is None:
            self._logs = {}
        self._logs[paused.item.id] = {**paused.durable, paused.call_id: record}
        if self._to_place is None:
            self._to_place = [paused.item]
        else:
            self._to_place.insert(0, paused.item)
        return Resume(paused.item, paused.call_id, record)


def _approval_record(
    durable: dict[str, Log], signature: str, request_id: str
) -> tuple[str, str] | None:
    """``(input id, call id)`` of the first approval record (``signature``: the request or
    the decision) of ``request_id`` in the durable records ``durable``, if any."""
    for item_id, calls in durable.items():
        for call_id, rec in calls.items():
            if rec.signature == signature and getattr(rec.result, "request_id", None) == request_id:
                return item_id, call_id
    return None
