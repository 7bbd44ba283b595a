"""The per-key sequencing protocol on its own, scenario by scenario (the property tests in
``test_sequencing_props.py`` try random interleavings): chains, places, pauses, held inputs,
responses, deadlines, restores."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from flink_agents.api.approval import ApprovalRequest, ApprovalResponse
from flink_agents.runtime.core import APPROVAL_DECISION, APPROVAL_REQUEST, DurableRecord, RunResult
from flink_agents.runtime.sequencing import (
    GIVE_BACK,
    JOINED,
    REFUSED,
    STARTED,
    Arrival,
    Commit,
    Drop,
    Fail,
    KeySequencer,
    Pause,
    Resume,
    Run,
    SaveDecision,
    Stop,
)


@dataclass(frozen=True)
class Item:
    id: str


def _request(request_id: str = "r1", key: str = "k", expires_at: float | None = None) -> Any:
    return ApprovalRequest(
        request_id=request_id, key=key, tool_name="refund", created_at=0.0, expires_at=expires_at
    )


def _paused(request: ApprovalRequest) -> RunResult:
    """A run that recorded ``request`` (call 1) and waits for its decision (call 2)."""
    return RunResult(
        key=request.key,
        outputs=[request],
        durable_records={"1": DurableRecord(APPROVAL_REQUEST, result=request)},
        approval=request,
        approval_call_id="2",
    )


def _ok(item: Item) -> RunResult:
    return RunResult(key="k", outputs=[item.id])


def _arrive_and_place(seq: KeySequencer, item: Item) -> str:
    assert seq.arrive(item) is Arrival.PLACE
    return seq.placed().action


class Chain:
    """Drives a key's chain as a host does: ``next_run`` first, then each ``finished``
    answers the next step."""

    def __init__(self, seq: KeySequencer) -> None:
        self.seq = seq
        self.step: Run | Stop | None = None

    def peek(self) -> Run | Stop:
        """The chain's next step (the first: ``next_run``)."""
        if self.step is None:
            self.step = self.seq.next_run()
        return self.step

    def run(self, outcome: Any = None) -> Item:
        """The next step is a run: finish it (by default successfully)."""
        step = self.peek()
        assert isinstance(step, Run), step
        self.step = self.seq.finished(step.item, _ok(step.item) if outcome is None else outcome)
        return step.item  # type: ignore[no-any-return]

    def stop(self) -> Stop:
        """The next step ends the chain."""
        step = self.peek()
        assert isinstance(step, Stop), step
        self.step = None
        return step


def test_inputs_run_one_at_a_time_on_one_chain_and_commit_in_order() -> None:
    seq = KeySequencer("k")
    chain = Chain(seq)
    a, b, c = Item("a"), Item("b"), Item("c")
    assert _arrive_and_place(seq, a) == STARTED
    assert seq.state == "running" and seq.places == 1
    # Later inputs join the running chain: no second chain, no host round trip.
    assert _arrive_and_place(seq, b) == JOINED
    assert chain.run() is a
    assert _arrive_and_place(seq, c) == JOINED
    assert [chain.run(), chain.run()] == [b, c]
    assert chain.stop() == Stop(0)
    assert seq.state == "settled" and seq.places == 0 and not seq.done
    decisions = seq.collect()
    assert [type(d) for d in decisions] == [Commit] * 3
    assert [d.item for d in decisions] == [a, b, c]  # type: ignore[attr-defined]
    assert seq.done and seq.state == "idle" and list(seq.collect()) == []
    # The next input starts a new chain.
    assert _arrive_and_place(seq, Item("d")) == STARTED


def test_a_chain_cannot_be_driven_outside_its_turn() -> None:
    seq = KeySequencer("k")
    with pytest.raises(RuntimeError, match="outside its chain"):
        seq.next_run()
    with pytest.raises(RuntimeError, match="waits for a place"):
        seq.placed()
    _arrive_and_place(seq, Item("a"))
    step = seq.next_run()
    assert isinstance(step, Run)
    with pytest.raises(RuntimeError, match="outside its chain"):
        seq.next_run()  # a run is in progress
    with pytest.raises(RuntimeError, match="not running"):
        seq.finished(Item("other"), _ok(Item("other")))


def test_a_failure_stops_the_chain_and_refuses_later_inputs() -> None:
    seq = KeySequencer("k")
    chain = Chain(seq)
    a, b, c = Item("a"), Item("b"), Item("c")
    _arrive_and_place(seq, a)
    _arrive_and_place(seq, b)
    error = ValueError("boom")
    chain.run(error)
    # b's place goes back; it is not run (it stays in the host's pending state).
    assert chain.stop() == Stop(1) and seq.places == 0
    assert seq.arrive(c) is Arrival.REFUSE
    [fail] = seq.collect()
    assert fail == Fail(a, error) and seq.state == "failed" and not seq.done


def test_an_input_placed_after_its_chain_failed_is_refused() -> None:
    seq = KeySequencer("k")
    chain = Chain(seq)
    _arrive_and_place(seq, Item("a"))
    assert seq.arrive(Item("b")) is Arrival.PLACE  # the host now waits for a place...
    chain.run(ValueError("boom"))  # ...while the chain fails
    assert seq.placed().action == REFUSED


def test_a_pause_holds_later_inputs_without_places_until_the_response() -> None:
    seq = KeySequencer("k")
    chain = Chain(seq)
    a, b, c, d = Item("a"), Item("b"), Item("c"), Item("d")
    request = _request()
    _arrive_and_place(seq, a)
    _arrive_and_place(seq, b)
    chain.run(_paused(request))
    assert seq.state == "halted"
    # Queued behind the pause: b gives its place back; inputs arriving now take none.
    assert chain.stop() == Stop(1)
    assert seq.arrive(c) is Arrival.HOLD
    [pause] = seq.collect()
    assert pause == Pause(a, _paused(request), emit=True) and pause.request is request  # type: ignore[attr-defined]
    assert seq.state == "paused" and seq.waits_for_decision and seq.paused is not None
    assert seq.arrive(d) is Arrival.HOLD
    assert (seq.places, seq.held) == (0, 3)
    # A response for another request, or naming another key, resumes nothing.
    [drop] = seq.respond(ApprovalResponse(request_id="nope", key="k", approved=True))
    assert isinstance(drop, Drop) and "waits for request r1" in drop.reason
    [drop] = seq.respond(ApprovalResponse(request_id="r1", key="x", approved=True))
    assert isinstance(drop, Drop) and "names key 'x' but arrived under key 'k'" in drop.reason
    [resume] = seq.respond(request.approve())
    assert isinstance(resume, Resume) and resume.item is a and resume.call_id == "2"
    assert resume.record.signature == APPROVAL_DECISION and resume.record.result.approved
    assert seq.state == "resuming"
    # The answered request cannot be answered again.
    [drop] = seq.respond(request.approve())
    assert isinstance(drop, Drop) and "no run of this key waits" in drop.reason
    # The resumed input takes a place (waiting for it); the held ones take theirs at once.
    placement = seq.placed()
    assert (placement.action, placement.extra) == (STARTED, 3) and seq.places == 4
    step = chain.peek()
    assert isinstance(step, Run) and step.item is a
    assert step.durable == {"1": _paused(request).durable_records["1"], "2": resume.record}
    chain.run()
    assert [chain.run(), chain.run(), chain.run()] == [b, c, d]
    assert chain.stop() == Stop(0)
    assert [d.item for d in seq.collect()] == [a, b, c, d]  # type: ignore[attr-defined]
    assert seq.done


def test_an_input_placed_while_its_key_paused_is_held_and_its_place_given_back() -> None:
    seq = KeySequencer("k")
    chain = Chain(seq)
    _arrive_and_place(seq, Item("a"))
    assert seq.arrive(Item("b")) is Arrival.PLACE  # the host waits for a place...
    chain.run(_paused(_request()))  # ...while the run pauses
    assert seq.placed().action == GIVE_BACK and seq.held == 1


def test_a_request_past_its_deadline_is_rejected_at_the_keys_timer() -> None:
    seq = KeySequencer("k")
    chain = Chain(seq)
    request = _request(expires_at=100.0)
    _arrive_and_place(seq, Item("a"))
    chain.run(_paused(request))
    assert seq.expire(200.0) is None  # not paused yet as far as the host knows
    chain.stop()
    seq.collect()
    assert seq.expire(99.9) is None
    resume = seq.expire(100.0)
    assert isinstance(resume, Resume) and not resume.record.result.approved
    assert "no decision within approval.timeout (100s)" in resume.record.result.reason
    assert seq.expire(300.0) is None  # once


def test_a_restore_runs_the_pending_inputs_first_with_their_records() -> None:
    seq = KeySequencer("k")
    chain = Chain(seq)
    a, b, new = Item("a"), Item("b"), Item("new")
    records = {"a": {"1": DurableRecord("f", result=1)}}
    restored = seq.restore([a, b], records, None)
    assert (restored.places, restored.clear_request) == (2, False)
    assert seq.placed().action == STARTED
    assert seq.arrive(new) is Arrival.PLACE  # a new input waits behind the restored ones
    assert seq.placed().action == JOINED
    assert seq.placed().action == JOINED
    step = chain.peek()
    assert isinstance(step, Run) and step.item is a and step.durable == records["a"]
    chain.run()
    assert [chain.run(), chain.run()] == [b, new]
    with pytest.raises(RuntimeError, match="has inputs already"):
        seq.restore([a], {}, None)


def test_a_restored_pause_is_not_emitted_again_and_an_early_response_is_kept() -> None:
    seq = KeySequencer("k")
    chain = Chain(seq)
    a = Item("a")
    request = _request()
    records = {"a": _paused(request).durable_records}
    assert seq.restore([a], records, "r1").clear_request is False
    seq.placed()
    # The response comes while a re-runs: its decision is saved at once, matched later.
    [save] = seq.respond(request.approve())
    assert save == SaveDecision(
        "a", "2", DurableRecord(APPROVAL_DECISION, result=request.approve())
    )
    chain.run(_paused(request))  # replayed up to the request: it pauses again
    chain.stop()
    pause, resume = seq.collect()
    assert isinstance(pause, Pause) and pause.emit is False  # the key emitted it already
    assert isinstance(resume, Resume) and resume.item is a


def test_early_responses_beyond_the_first_are_dropped_when_the_run_pauses() -> None:
    seq = KeySequencer("k")
    chain = Chain(seq)
    a = Item("a")
    request = _request()
    seq.restore([a], {"a": _paused(request).durable_records}, "r1")
    seq.placed()
    seq.respond(request.approve())
    assert seq.respond(request.reject("late")) != []  # saved too (the last one wins in state)
    chain.run(_paused(request))
    chain.stop()
    pause, resume, drop = seq.collect()
    assert isinstance(resume, Resume) and resume.record.result.approved
    assert isinstance(drop, Drop) and "answered already" in drop.reason


def test_a_restore_that_finds_the_decision_forgets_the_emitted_request() -> None:
    seq = KeySequencer("k")
    request = _request()
    records = {
        "a": {
            **_paused(request).durable_records,
            "2": DurableRecord(APPROVAL_DECISION, result=request.approve()),
        }
    }
    assert seq.restore([Item("a")], records, "r1").clear_request is True
    seq.placed()
    # No early matching: a response for r1 now is a duplicate.
    [drop] = seq.respond(request.approve())
    assert isinstance(drop, Drop)


def test_a_response_to_a_key_without_work_is_dropped() -> None:
    [drop] = KeySequencer("k").respond(ApprovalResponse(request_id="r", key="k", approved=True))
    assert isinstance(drop, Drop) and "no run of this key waits" in drop.reason


def test_a_cancelled_chain_stops() -> None:
    seq = KeySequencer("k")
    chain = Chain(seq)
    _arrive_and_place(seq, Item("a"))
    _arrive_and_place(seq, Item("b"))
    chain.peek()
    seq.cancelled()
    assert seq.state == "idle" and list(seq.collect()) == []
