"""The hosts with poison records, dead letters, unhashable keys and approval responses of a
subclass: the local environment, and the Flink function without a cluster."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.approval import ApprovalRequest, ApprovalResponse
from flink_agents.api.dead_letter import DeadLetter
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.runner_context import RunnerContext
from flink_agents.errors import InputRecordError


def echo(event: Event, ctx: RunnerContext) -> None:
    value = event.get_attr("input")
    if value == "refuse":
        raise ValueError("refused")
    ctx.send_event(OutputEvent(output=value))


def _agent() -> Agent:
    agent = Agent()
    agent.add_action("echo", [InputEvent], echo)
    return agent


def _inputs() -> list[dict[str, Any]]:
    return [
        {"key": "a", "value": 1},
        {"key": "b", "value": threading.Lock()},  # cannot become an input event
        {"key": "a", "value": 2},
        {"key": "c", "value": "refuse"},  # its action fails
        {"key": "b", "value": 3},
    ]


def _run(strategy: str) -> tuple[list[dict[str, Any]], list[DeadLetter]]:
    env = AgentsExecutionEnvironment.get_execution_environment(
        **{"error-handling-strategy": strategy}
    )
    builder = env.from_list(_inputs()).apply(_agent())
    out = builder.to_list()
    env.execute()
    return out, builder.dead_letters()


def test_a_poison_record_under_ignore_leaves_the_batch_alone() -> None:
    out, letters = _run("ignore")
    assert out == [{"a": 1}, {"a": 2}, {"b": 3}]
    assert letters == []


def test_dead_letters_of_the_local_environment() -> None:
    out, letters = _run("dead-letter")
    assert out == [{"a": 1}, {"a": 2}, {"b": 3}]
    assert [(d.key, d.error_type) for d in letters] == [
        ("b", "InputRecordError"),
        ("c", "ActionError"),
    ]
    assert "_thread.lock" in letters[0].record


def test_a_poison_record_under_fail_fails_the_batch() -> None:
    with pytest.raises(InputRecordError, match="cannot become an input event"):
        _run("fail")


def test_an_unhashable_key_is_a_clear_error() -> None:
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.from_list([{"key": "ok", "value": 1}, {"key": {"a": 1}, "value": 2}]).apply(
        _agent()
    ).to_list()
    with pytest.raises(TypeError, match=r"input 1 has the key \{'a': 1\}, a dict.*hashable"):
        env.execute()


class MyResponse(ApprovalResponse):
    """An application's own response type."""

    reviewer: str = "alice"


def test_a_response_of_a_subclass_resumes_on_flink_as_locally() -> None:
    pytest.importorskip("pyflink")
    from flink_agents.plan.agent_plan import AgentPlan
    from flink_agents.runtime.flink import function as fn
    from flink_agents.runtime.flink.environment import _ApprovalKey
    from flink_agents.runtime.flink.slot import SlotRuntime
    from flink_agents.runtime.flink.state import KeyedState
    from tests.fakes import FakeListState, FakeMapState, FakePythonBackend, FakeValueState
    from tests.runtime import approval_agents
    from tests.runtime.test_flink_approval_paths import _Ctx

    def key_of(record: Any) -> Any:
        return record["key"]

    routed = _ApprovalKey(key_of)
    assert routed(MyResponse(request_id="r", key="u1", approved=True)) == "u1"

    plan = AgentPlan.from_agent(approval_agents.refund_agent(), {})
    backend = FakePythonBackend()
    function = fn.AgentProcessFunction(plan.model_dump_json(), {}, key_of=routed)
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
        backend.set_current_key(routed(record))
        return [out for _, out in function.process_element(record, ctx)]

    def settle(key: str) -> list[Any]:
        work = function._active[key]
        assert work.wait_idle(10)
        backend.set_current_key(key)
        return [out for _, out in function.on_timer(work.timer_at or 0, ctx)]

    try:
        send({"key": "u1", "tool": "refund", "args": {"order_id": "o1", "amount": 30}})
        (request,) = settle("u1")
        assert isinstance(request, ApprovalRequest)
        response = MyResponse(request_id=request.request_id, key="u1", approved=True)
        assert send(response) == []
        assert settle("u1") == ["#1 refund[c1]=refunded 30 on o1"]
    finally:
        slot.close()
