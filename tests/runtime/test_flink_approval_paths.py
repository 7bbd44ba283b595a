"""The Flink function's approval path without a cluster (fake keyed state, a real slot
runtime): a paused key's later inputs wait without taking in-flight places, other keys go
on, a response resumes the run and the held inputs in order, and every place comes back."""

from __future__ import annotations

import threading
from typing import Any

import pytest

pytest.importorskip("pyflink")

from pyflink.datastream.time_domain import TimeDomain  # noqa: E402

from flink_agents.api.approval import ApprovalRequest, ApprovalResponse  # noqa: E402
from flink_agents.plan.agent_plan import AgentPlan  # noqa: E402
from flink_agents.runtime.flink import function as fn  # noqa: E402
from flink_agents.runtime.flink.slot import SlotRuntime  # noqa: E402
from flink_agents.runtime.flink.state import KeyedState  # noqa: E402
from tests.fakes import FakeListState, FakeMapState, FakePythonBackend, FakeValueState  # noqa: E402
from tests.runtime import approval_agents  # noqa: E402


class _Ctx:
    """The function's context: the current key, no timestamp, a timer service that
    records timers."""

    def __init__(self, backend: FakePythonBackend) -> None:
        self.backend = backend
        self.timers: list[int] = []
        self.domain = TimeDomain.PROCESSING_TIME

    def get_current_key(self) -> Any:
        return self.backend.get_current_key()

    def timestamp(self) -> None:
        return None

    def time_domain(self) -> Any:
        return self.domain

    def timer_service(self) -> _Ctx:
        return self

    def current_processing_time(self) -> int:
        return 0

    def register_processing_time_timer(self, at: int) -> None:
        self.timers.append(at)

    def register_event_time_timer(self, at: int) -> None:
        pass

    def delete_processing_time_timer(self, at: int) -> None:
        pass

    def delete_event_time_timer(self, at: int) -> None:
        pass


def _key(record: Any) -> Any:
    return record.key if isinstance(record, ApprovalResponse) else record["key"]


def test_a_paused_key_holds_its_inputs_without_in_flight_places() -> None:
    plan = AgentPlan.from_agent(approval_agents.refund_agent(), {"max-in-flight": 2})
    backend = FakePythonBackend()
    function = fn.AgentProcessFunction(plan.model_dump_json(), {}, key_of=_key)
    slot = SlotRuntime(plan)
    function.bind(
        KeyedState(
            memory=FakeValueState(backend),
            pending=FakeListState(backend),
            durable=FakeMapState(backend),
            approval=FakeValueState(backend),
            check_restored=False,
        ),
        slot,
    )
    ctx = _Ctx(backend)

    def send(record: Any) -> list[Any]:
        backend.set_current_key(_key(record))
        return [out for _, out in function.process_element(record, ctx)]

    def settle(key: str) -> list[Any]:
        """Outputs of the key's timer once its chain stopped."""
        work = function._active[key]
        assert work.wait_idle(10)
        backend.set_current_key(key)
        return [out for _, out in function.on_timer(work.timer_at or 0, ctx)]

    refund = {"key": "u1", "tool": "refund", "args": {"order_id": "o1", "amount": 30}}
    assert send(refund) == []  # the model call waits (a thread hop): a timer collects it
    (request,) = settle("u1")
    assert isinstance(request, ApprovalRequest) and ctx.timers  # the expiry timer
    # Five more inputs of u1 and one of u2, with two in-flight places: none waits for a
    # place (a held input would otherwise block the operator thread here).
    fed: list[list[Any]] = []
    feeder = threading.Thread(
        target=lambda: fed.extend(
            [send({"key": "u1", "tool": "lookup", "args": {"order_id": f"h{i}"}}) for i in range(5)]
            + [send({"key": "u2", "tool": "lookup", "args": {"order_id": "x"}})]
        )
    )
    feeder.start()
    feeder.join(10)
    assert not feeder.is_alive(), "the operator thread blocked on the in-flight gate"
    assert fed == [[]] * 6
    assert settle("u2") == ["#1 lookup[c1]=x: shipped"]
    assert slot._in_flight == 0
    backend.set_current_key("u1")
    assert len(function.state.pending.get()) == 6  # u1's paused input and the held ones
    # A response for another request id is dropped; the right one resumes u1.
    assert send(ApprovalResponse(request_id="nope", key="u1", approved=True)) == []
    assert slot.runner.metrics.get_counter("numOfApprovalResponsesDropped").get_count() == 1
    assert send(request.approve()) == []
    assert settle("u1") == ["#1 refund[c1]=refunded 30 on o1"] + [
        f"#{i + 2} lookup[c1]=h{i}: shipped" for i in range(5)
    ]
    assert "u1" not in function._active and slot._in_flight == 0
    assert function.state.pending.get() in (None, [])
    assert function.state.approval.value() is None
    slot.close()


def test_a_response_during_the_rerun_after_a_restore_survives_another_failure() -> None:
    """A response that arrives while the key's run re-runs after a restore (before it pauses
    again) is in keyed state at once: a second failure before the pause does not lose it."""
    plan = AgentPlan.from_agent(approval_agents.refund_agent(), {"max-in-flight": 2})
    backend = FakePythonBackend()
    states = {
        "memory": FakeValueState(backend),
        "pending": FakeListState(backend),
        "durable": FakeMapState(backend),
        "approval": FakeValueState(backend),
    }
    ctx = _Ctx(backend)

    def start() -> tuple[fn.AgentProcessFunction, SlotRuntime]:
        """A function on the same keyed state: a (re)start of the task."""
        function = fn.AgentProcessFunction(plan.model_dump_json(), {}, key_of=_key)
        slot = SlotRuntime(plan)
        function.bind(KeyedState(**states, check_restored=True), slot)
        return function, slot

    def send(function: fn.AgentProcessFunction, record: Any) -> list[Any]:
        backend.set_current_key(_key(record))
        return [out for _, out in function.process_element(record, ctx)]

    def settle(function: fn.AgentProcessFunction, key: str) -> list[Any]:
        work = function._active[key]
        assert work.wait_idle(10)
        backend.set_current_key(key)
        return [out for _, out in function.on_timer(work.timer_at or 0, ctx)]

    first, slot = start()
    refund = {"key": "u1", "tool": "refund", "args": {"order_id": "o1", "amount": 30}}
    assert send(first, refund) == []
    (request,) = settle(first, "u1")
    assert isinstance(request, ApprovalRequest)
    slot.close()  # the task fails while u1 waits for a decision

    second, slot = start()
    # The response comes first after the restore: u1's run re-runs (its model call is
    # answered from the log, after a thread hop) and has not paused again.
    assert send(second, request.approve()) == []
    assert second._active["u1"].seq.paused is None
    slot.close()  # the task fails again before the run pauses

    third, slot = start()
    later = {"key": "u1", "tool": "lookup", "args": {"order_id": "h1"}}
    assert send(third, later) == []
    outputs = settle(third, "u1")
    assert outputs == ["#1 refund[c1]=refunded 30 on o1", "#2 lookup[c1]=h1: shipped"]
    backend.set_current_key("u1")
    assert third.state is not None and third.state.approval.value() is None
    assert slot.runner.metrics.get_counter("numOfApprovalResponsesDropped").get_count() == 0
    slot.close()
