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
            memory=FakeMapState(backend),
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
