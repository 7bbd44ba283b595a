"""Tool parameter injection through the built-in tool action: the values come from the
configuration, memory and the key, the model never sees (nor overrides) them, a missing one
fails only that call, a YAML agent declares them, and a replay from the durable log is
answered as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.events.tool_event import ToolResponseEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceType
from flink_agents.api.tools import InjectedArg, ToolParameterSource
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import AgentRunner
from tests.runtime import injection_agents
from tests.runtime.injection_agents import CALLS, OFFERED, injection_agent
from tests.runtime.memory_event_agents import HEARD, RECORDER


@pytest.fixture(autouse=True)
def _clear() -> None:
    CALLS.clear()
    OFFERED.clear()
    HEARD.clear()


def run_local(agent: Any, records: list[tuple[str, Any]], **config: Any) -> list[Any]:
    env = AgentsExecutionEnvironment.get_execution_environment()
    for key, value in config.items():
        env.get_config().set_str(key, value)
    out = env.from_list([{"key": k, "value": v} for k, v in records]).apply(agent).to_list()
    env.execute()
    return [next(iter(o.values())) for o in out]


def test_values_come_from_config_memory_and_key_and_the_model_never_sees_them() -> None:
    out = run_local(
        injection_agent(),
        [("k1", {"order": "o-1", "session": "s-9"})],
        tenant_id="tenant-a",
    )
    assert out == ["tenant-a|s-9|r-o-1|k1|o-1"]
    # The model was offered order_id only; it sent tenant_id anyway, which lost.
    (schema,) = OFFERED
    assert set(schema["properties"]) == {"order_id"} and schema["required"] == ["order_id"]
    assert CALLS == [{"order_id": "o-1", "tenant_id": "tenant-a"}]


def test_a_missing_value_fails_that_call_only(caplog: pytest.LogCaptureFixture) -> None:
    out = run_local(
        injection_agent(),
        [("k1", {"order": "o-1"})],  # no session in short-term memory
        **{"tenant_id": "tenant-a", "event-listeners": [RECORDER]},
    )
    assert CALLS == []
    # The model hears that the call failed, not which hidden parameter was missing ...
    assert out == ["Error: tool 'query_order' failed to execute."]
    # ... the tool response event (and so the event log) says what.
    (response,) = [e for t, e in HEARD if t == ToolResponseEvent.EVENT_TYPE]
    assert response.errors == {
        "c1": "Error: tool 'query_order' failed: Missing memory path for injected tool "
        "parameter: session.id"
    }
    assert response.success == {"c1": False}


def test_missing_config_and_a_memory_object_are_errors_too() -> None:
    from flink_agents.api.runner_context import RunnerContext
    from flink_agents.plan.actions.tool_call_action import resolve_injected_args

    runner = AgentRunner(AgentPlan.from_agent(injection_agent(), AgentConfiguration({})))
    try:
        from flink_agents.api.events.event import InputEvent
        from flink_agents.runtime.core.context import RunContext, _Run

        run = _Run(runner, "k", {"a.b": 1, "a": {"__memory_object__": 1}}, None, None, None)
        action = runner.plan.actions["ask"]
        ctx: RunnerContext = RunContext(run, action, InputEvent(input=1))
        with pytest.raises(LookupError, match="Missing config for injected tool parameter: t"):
            resolve_injected_args({"x": InjectedArg.from_config("t")}, ctx)
        with pytest.raises(TypeError, match="must reference a value: a"):
            resolve_injected_args({"x": InjectedArg.from_short_term_memory("a")}, ctx)
        assert resolve_injected_args(
            {"x": InjectedArg.from_short_term_memory("a.b"), "k": InjectedArg.from_key()}, ctx
        ) == {"x": 1, "k": "k"}
    finally:
        runner.close()


def test_a_replay_from_the_durable_log_is_unaffected() -> None:
    plan = AgentPlan.from_agent(injection_agent(), AgentConfiguration({"tenant_id": "tenant-a"}))
    runner = AgentRunner(plan)
    try:
        first = runner.run_sync("k1", {"order": "o-1", "session": "s-1"})
        assert len(CALLS) == 1 and first.durable_records
        # The restored run is answered from the log: the tool is not called again, the
        # injected values are not read for a call (a changed session does not matter) and
        # the records are those of the first attempt.
        again = runner.run_sync(
            "k1", {"order": "o-1", "session": "s-2"}, durable=first.durable_records
        )
        assert len(CALLS) == 1
        assert again.outputs == first.outputs == ["tenant-a|s-1|r-o-1|k1|o-1"]
        assert again.durable_records == {}  # nothing new: every call came from the log
        signatures = [r.signature for r in first.durable_records.values()]
        assert any(s.endswith("FunctionTool.acall") for s in signatures), signatures
    finally:
        runner.close()


def test_the_plan_keeps_injected_args_and_hides_them_from_the_schema() -> None:
    plan = AgentPlan.from_agent(injection_agent(), AgentConfiguration({}))
    data = json.loads(plan.model_dump_json())
    text = json.dumps(data)
    assert '"injected_args"' in text and '"short_term_memory"' in text
    again = AgentPlan.model_validate_json(plan.model_dump_json())
    runner = AgentRunner(again)
    try:
        tool = runner.resources.get("query_order", ResourceType.TOOL)
        assert tool.injected_args == {
            "tenant_id": InjectedArg.from_config("tenant_id"),
            "session": InjectedArg.from_short_term_memory("session.id"),
            "request": InjectedArg.from_sensory_memory("request.id"),
            "who": InjectedArg(source=ToolParameterSource.KEY, key="who"),
        }
        assert set(tool.metadata.args_schema["properties"]) == {"order_id"}
    finally:
        runner.close()


YAML = """\
agents:
  - name: orders
    chat_model_connections:
      - name: conn
        clazz: flink_agents.testing.scripted_chat_model.ScriptedChatModelConnection
        respond: tests.runtime.injection_agents:respond
    chat_model_setups:
      - name: model
        clazz: flink_agents.testing.scripted_chat_model.ScriptedChatModelSetup
        connection: conn
        tools: [query_order]
    tools:
      - name: query_order
        function: tests.runtime.injection_agents:query_order
        injected_args:
          tenant_id: {source: config, key: tenant_id}
          session: {source: SHORT_TERM_MEMORY, key: session.id}
          request: {key: request.id}
          who: {source: key}
    actions:
      - name: ask
        function: tests.runtime.injection_agents:InjectionAgent.ask
        trigger_conditions: [input]
      - name: answer
        function: tests.runtime.injection_agents:InjectionAgent.answer
        trigger_conditions: [chat_response]
"""


def test_a_yaml_agent_declares_injected_args(tmp_path: Path) -> None:
    path = tmp_path / "orders.yaml"
    path.write_text(YAML)
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.get_config().set_str("tenant_id", "tenant-y")
    env.load_yaml(path)
    records = [{"key": "k2", "value": {"order": "o-7", "session": "s-3"}}]
    result = env.from_list(records).apply("orders").to_list()
    env.execute()
    out = [next(iter(o.values())) for o in result]
    assert out == ["tenant-y|s-3|r-o-7|k2|o-7"]
    assert set(OFFERED[0]["properties"]) == {"order_id"}
    assert injection_agents.CALLS[0]["tenant_id"] == "tenant-y"
