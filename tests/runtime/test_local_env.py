"""The run loop through the local environment and directly (no host)."""

from __future__ import annotations

import time

import pytest

from flink_agents.api.core_options import AgentConfigOptions, ErrorHandlingStrategy
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.errors import ActionError, MemoryValueError, PlanValidationError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import AgentRunner, DurableRecord
from flink_agents.runtime.local.runner import LocalRunner
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup
from tests.runtime import agents


def run_local(agent, records, **config):
    env = AgentsExecutionEnvironment.get_execution_environment()
    for k, v in config.items():
        env.get_config().set_str(k, v)
    out = env.from_list(records).apply(agent).to_list()
    env.execute()
    return out


def test_echo_keys_and_values():
    out = run_local(agents.EchoAgent(), [{"key": "a", "value": 1}, {"k": "b", "v": 2}, 3])
    assert out[0] == {"a": 1}
    assert out[1] == {"b": 2}
    assert list(out[2].values()) == [3]


def test_short_term_memory_persists_per_key_and_sensory_is_cleared():
    records = [{"key": k, "value": f"{k}{i}"} for i in range(3) for k in ("x", "y")]
    out = run_local(agents.CounterAgent(), records)
    by_key: dict[str, list] = {}
    for item in out:
        ((key, value),) = item.items()
        by_key.setdefault(key, []).append(value)
    assert [v["count"] for v in by_key["x"]] == [1, 2, 3]
    assert by_key["x"][-1]["items"] == ["x0", "x1", "x2"]
    assert by_key["y"][-1]["items"] == ["y0", "y1", "y2"]  # never leaks across keys


def test_memory_survives_across_execute_calls_of_one_runner():
    plan = AgentPlan.from_agent(agents.CounterAgent())
    runner = LocalRunner(plan)
    runner.run([("k", "a")])
    results = runner.run([("k", "b")])
    assert results[0].outputs[0]["count"] == 2
    runner.close()


def test_custom_events_type_strings_and_async_actions():
    out = run_local(agents.BranchAgent(), [{"key": "a", "value": 21}, {"key": "b", "value": "hi"}])
    assert out == [{"a": 42}, {"b": "HI"}]


def test_invalid_memory_value_names_key_action_and_event():
    with pytest.raises(ActionError) as info:
        run_local(agents.BadMemoryAgent(), [{"key": "k1", "value": 1}])
    err = info.value
    assert err.key == "k1" and err.action == "store" and err.event_id
    assert "cannot store object at memory path 'obj'" in str(err)
    assert isinstance(err.__cause__, MemoryValueError)


def test_action_raising_fail_strategy():
    with pytest.raises(ActionError) as info:
        run_local(agents.FailingAgent(), [{"key": "k", "value": "bad"}])
    message = str(info.value)
    assert "action 'check' failed on _input_event: ValueError: bad input" in message
    assert "key='k'" in message and "event=" in message


def test_action_raising_ignore_strategy_sends_error_event_and_goes_on(caplog):
    out = run_local(
        agents.FailingAgent(),
        [{"key": "k", "value": "bad"}, {"key": "k", "value": "good"}],
        **{"error-handling-strategy": "ignore"},
    )
    assert out == [{"k": {"error": "bad input", "action": "check"}}, {"k": "good"}]
    assert any("ignored failure" in r.message and "key='k'" in r.message for r in caplog.records)


def test_action_raising_retry_strategy_recovers_and_rolls_back_memory():
    agents.CALLS.pop("flaky", None)
    out = run_local(
        agents.FailingAgent(),
        [{"key": "k", "value": "flaky"}],
        **{"error-handling-strategy": "retry", "max-retries": 3, "retry-wait-interval": 0.01},
    )
    assert out == [{"k": "flaky"}]
    assert agents.CALLS["flaky"] == 3


def test_retry_strategy_gives_up_after_max_retries():
    with pytest.raises(ActionError, match="bad input"):
        run_local(
            agents.FailingAgent(),
            [{"key": "k", "value": "bad"}],
            **{"error-handling-strategy": "retry", "max-retries": 2, "retry-wait-interval": 0},
        )


def test_bad_configuration_is_a_clear_error():
    from flink_agents.errors import ConfigurationError

    env = AgentsExecutionEnvironment.get_execution_environment()
    with pytest.raises(ConfigurationError, match="'max-retries'.*expected an integer"):
        env.get_config().set_str("max-retries", "many")
    with pytest.raises(ConfigurationError, match="'batch.size'"):
        env.get_config().set_str("batch.size", "0")
    with pytest.raises(ConfigurationError, match="'batch.linger-ms'.*expected an integer"):
        env.get_config().set_str("batch.linger-ms", "soon")
    with pytest.raises(ConfigurationError, match="fail, retry, ignore|'fail', 'retry'"):
        env.get_config().set(AgentConfigOptions.ERROR_HANDLING_STRATEGY, "sometimes")
    env.get_config().set(AgentConfigOptions.ERROR_HANDLING_STRATEGY, ErrorHandlingStrategy.IGNORE)
    assert (
        env.get_config().get(AgentConfigOptions.ERROR_HANDLING_STRATEGY)
        is ErrorHandlingStrategy.IGNORE
    )


def test_durable_calls_are_recorded_and_replayed():
    plan = AgentPlan.from_agent(agents.DurableAgent())
    runner = AgentRunner(plan)
    agents.CALLS.clear()
    seen: dict[str, DurableRecord] = {}
    first = runner.run_sync("k", 3, on_record=lambda cid, rec: seen.__setitem__(cid, rec))
    assert first.outputs == [36]
    assert set(first.durable_records) == {"1", "2"} and seen == first.durable_records
    assert agents.CALLS == {"slow_double": 1, "square": 1}
    # A replay after a restore gets the recorded results: nothing is called again.
    replay = runner.run_sync("k", 3, durable=first.durable_records)
    assert replay.outputs == [36]
    assert agents.CALLS == {"slow_double": 1, "square": 1}
    runner.close()


def test_durable_replay_with_changed_function_calls_again():
    plan = AgentPlan.from_agent(agents.DurableAgent())
    runner = AgentRunner(plan)
    agents.CALLS.clear()
    stale = {"1": DurableRecord("some.other.function", result=100)}
    assert runner.run_sync("k", 1, durable=stale).outputs == [4]
    assert agents.CALLS["slow_double"] == 1
    runner.close()


def test_keys_run_concurrently_while_actions_await():
    plan = AgentPlan.from_agent(agents.AsyncCallAgent())
    runner = LocalRunner(plan)
    agents.IN_PROGRESS.update(now=0, most=0)
    results = runner.run([(f"k{i}", i) for i in range(50)])
    assert len(results) == 50
    # Keys overlapped while their actions awaited (serial runs would never exceed one).
    assert agents.IN_PROGRESS["most"] == 50, agents.IN_PROGRESS
    runner.close()


def test_inputs_of_one_key_run_in_order_with_scripted_latency():
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.add_resource(
        "conn",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection,
            respond="tests.runtime.agents:echo_tool_results",
            latency=[0.0, 0.03],
        ),
    )
    env.add_resource(
        "model",
        ResourceType.CHAT_MODEL,
        ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn", tools=["multiply"]),
    )
    records = [
        {"key": f"k{k}", "value": {"tool": "multiply", "args": {"a": k, "b": i}}}
        for i in range(5)
        for k in range(10)
    ]
    out = env.from_list(records).apply(agents.ToolAgent()).to_list()
    env.execute()
    per_key: dict[str, list[str]] = {}
    for item in out:
        ((key, value),) = item.items()
        per_key.setdefault(key, []).append(value)
    for k in range(10):
        assert per_key[f"k{k}"] == [f"multiply[c1]={k * i}" for i in range(5)]


def test_plan_errors_surface_at_apply():
    env = AgentsExecutionEnvironment.get_execution_environment()
    with pytest.raises(PlanValidationError, match="takes `self`"):
        env.from_list([1]).apply(agents.SelfAgent())


def _tool_agent_plan() -> AgentPlan:
    """ToolAgent with a scripted model that calls the tool named in the input."""
    return AgentPlan.from_agent(
        agents.ToolAgent(),
        resources={
            ResourceType.CHAT_MODEL_CONNECTION: {
                "conn": ResourceDescriptor(
                    clazz=ScriptedChatModelConnection,
                    respond="tests.runtime.agents:echo_tool_results",
                )
            },
            ResourceType.CHAT_MODEL: {
                "model": ResourceDescriptor(
                    clazz=ScriptedChatModelSetup, connection="conn", tools=["multiply"]
                )
            },
        },
    )


def test_resources_are_created_once_per_runner():
    plan = _tool_agent_plan()
    runner = LocalRunner(plan)
    runner.run([(f"k{i}", {"tool": "multiply", "args": {"a": 1, "b": i}}) for i in range(20)])
    created = runner.runner.resources.created
    assert created[(ResourceType.CHAT_MODEL_CONNECTION, "conn")] == 1
    assert created[(ResourceType.CHAT_MODEL, "model")] == 1
    assert created[(ResourceType.TOOL, "multiply")] == 1
    runner.close()


def test_runner_runs_again_after_a_run_that_used_worker_threads():
    plan = _tool_agent_plan()
    runner = LocalRunner(plan)
    value = {"tool": "multiply", "args": {"a": 2, "b": 3}}
    assert runner.run([("k", value)])[0].outputs == ["multiply[c1]=6"]
    assert runner.run([("k", value)])[0].outputs == ["multiply[c1]=6"]
    runner.close()


def test_events_nobody_listens_to_are_reported(caplog):
    out = run_local(agents.UnheardAgent(), [{"key": "k", "value": 1}])
    assert out == [{"k": 1}]
    assert any(
        "no action listens to events of type 'tests.runtime.agents.CountEvent'" in r.message
        for r in caplog.records
    )


def test_short_term_memory_expires_after_its_ttl():
    plan = AgentPlan.from_agent(agents.CounterAgent(), {"short-term-memory.ttl": 0.3})
    runner = LocalRunner(plan)
    counts = [runner.run([("k", i)])[0].outputs[0]["count"] for i in range(2)]
    time.sleep(0.5)
    counts += [runner.run([("k", i)])[0].outputs[0]["count"] for i in range(2)]
    assert counts == [1, 2, 1, 2]
    runner.close()
