"""Timeouts of tool calls, model calls and actions on the local environment."""

from __future__ import annotations

import time

import pytest

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.decorators import action
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.timeouts import TimeoutOptions
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.errors import CallTimeoutError, ConfigurationError, PlanValidationError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup
from tests.runtime import timeout_agents

ECHO = "tests.runtime.agents:echo_tool_results"


def _run(agent, records, *, conn=None, setup=None, **config):
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.add_resource(
        "conn", ResourceDescriptor(clazz=ScriptedChatModelConnection, **(conn or {"respond": ECHO}))
    )
    env.add_resource(
        "model",
        ResourceDescriptor(
            clazz=ScriptedChatModelSetup,
            connection="conn",
            tools=["hang", "slow", "multiply"]
            if isinstance(agent, timeout_agents.HangingToolAgent)
            else [],
            **(setup or {}),
        ),
    )
    for key, value in config.items():
        env.get_config().set_str(key, value)
    out = env.from_list(records).apply(agent).to_list()
    env.execute()
    return {next(iter(o)): next(iter(o.values())) for o in out}


def test_a_hung_sync_tool_times_out_and_other_keys_go_on():
    start = time.monotonic()
    out = _run(
        timeout_agents.HangingToolAgent(),
        [
            {"key": "hung", "value": {"tool": "hang", "args": {"seconds": 3}}},
            {"key": "fine", "value": {"tool": "multiply", "args": {"a": 6, "b": 7}}},
        ],
    )
    elapsed = time.monotonic() - start
    # The model sees the timeout as the tool's error (like every tool failure).
    assert out["hung"].startswith("hang[c1]=Error: tool 'hang' failed: CallTimeoutError")
    assert "within its timeout of 0.5s" in out["hung"]
    assert out["fine"] == "multiply[c1]=42"
    # Abandoned at 0.5 s, not waited for (the thread itself sleeps on for 3 s).
    assert elapsed < 2.5, elapsed


def test_the_tool_timeout_option_bounds_tools_without_their_own():
    out = _run(
        timeout_agents.HangingToolAgent(),
        [
            {"key": "a", "value": {"tool": "slow", "args": {"seconds": 2}}},
            {"key": "b", "value": {"tool": "slow", "args": {"seconds": 0.01}}},
        ],
        **{"tool.timeout": "0.3"},
    )
    assert "CallTimeoutError" in out["a"] and "'slow'" in out["a"]
    assert out["b"] == "slow[c1]=done"


def test_a_hung_async_model_call_is_cancelled_and_fails_by_the_strategy():
    start = time.monotonic()
    with pytest.raises(CallTimeoutError) as info:
        _run(
            timeout_agents.HangingToolAgent(),
            [{"key": "k", "value": {"tool": "multiply", "args": {"a": 1, "b": 2}}}],
            conn={"respond": ECHO, "latency": 30},
            **{"model.timeout": "0.3"},
        )
    assert time.monotonic() - start < 5
    err = info.value
    assert isinstance(err, TimeoutError)
    assert (err.kind, err.name, err.timeout, err.key) == ("chat model", "model", 0.3, "k")
    assert err.action == "chat_model_action"


def test_a_setup_timeout_overrides_the_option_and_ignore_passes_the_error_on():
    out = _run(
        timeout_agents.HangingToolAgent(),
        [{"key": "k", "value": {"tool": "multiply", "args": {"a": 1, "b": 2}}}],
        conn={"respond": ECHO, "latency": 30},
        setup={"timeout": 0.2},
        **{"model.timeout": "60", "error-handling-strategy": "ignore"},
    )
    assert out == {}  # the answer never came; the error event went on (nobody listens)


def test_action_timeout_option_and_an_actions_own_timeout():
    with pytest.raises(CallTimeoutError) as info:
        _run(
            timeout_agents.SlowActionAgent(),
            [{"key": "k", "value": 5}],
            **{"action.timeout": "0.2"},
        )
    assert (info.value.kind, info.value.name) == ("action", "nap")
    assert _run(
        timeout_agents.SlowActionAgent(), [{"key": "k", "value": 0.01}], **{"action.timeout": "2"}
    ) == {"k": "slept 0.01"}
    start = time.monotonic()
    with pytest.raises(CallTimeoutError):
        _run(
            timeout_agents.OwnTimeoutActionAgent(),
            [{"key": "k", "value": 5}],
            **{"action.timeout": "60"},
        )
    assert time.monotonic() - start < 3


def test_bad_timeouts_are_clear_errors():
    config = AgentConfiguration()
    for bad in ("-1", "0", "soon"):
        with pytest.raises(ConfigurationError, match="model.timeout"):
            config.set_str("model.timeout", bad)
    config.set_str("tool.timeout", "1.5")
    assert config.get(TimeoutOptions.TOOL_TIMEOUT) == 1.5
    assert AgentConfiguration().get(TimeoutOptions.ACTION_TIMEOUT) is None
    with pytest.raises(ValueError, match="greater than 0"):
        FunctionTool.from_callable(timeout_agents.HangingToolAgent.multiply, timeout=0)

    class BadTool(timeout_agents.HangingToolAgent):
        pass

    from flink_agents.api.decorators import tool

    def bad(x: int) -> int:
        """Bad.

        Args:
            x: x.
        """
        return x

    BadTool.bad = staticmethod(tool(timeout=-2)(bad))  # type: ignore[attr-defined]
    with pytest.raises(PlanValidationError, match="bad"):
        AgentPlan.from_agent(BadTool())


class BadActionTimeoutAgent(timeout_agents.SlowActionAgent):
    """Its action's timeout config is no number."""

    @action(InputEvent, timeout="soon")
    @staticmethod
    async def nap(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event.input))


def test_a_bad_action_timeout_config_names_the_action():
    with pytest.raises(ConfigurationError, match="action 'nap': timeout must be a number"):
        _run(BadActionTimeoutAgent(), [{"key": "k", "value": 1}])


async def _first(x: int) -> int:
    return x


async def _second(x: int) -> int:
    return x


def test_a_bounded_call_keeps_its_durable_signature():
    from flink_agents.api.timeouts import bounded
    from flink_agents.runtime.core.context import _call_info

    assert bounded(_first, None, "tool", "t") is _first
    one, two = bounded(_first, 1, "tool", "t"), bounded(_second, 1, "tool", "t")
    assert one.__code__ is two.__code__  # one wrapper code for every bounded call
    for _ in range(2):  # also once the plain functions are cached
        assert _call_info(one) == _call_info(_first) == (f"{__name__}._first", True)
        assert _call_info(two) == _call_info(_second) == (f"{__name__}._second", True)
