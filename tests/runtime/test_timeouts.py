"""Timeouts of tool calls, model calls and actions on the local environment."""

from __future__ import annotations

import asyncio
import time
from typing import Any

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


class _Owner:
    async def work(self) -> str:
        return "done"


def test_a_bounded_method_keeps_its_owner_for_the_metrics():
    from flink_agents.api.timeouts import bounded

    owner = _Owner()
    call = bounded(owner.work, 5, "tool", "t")
    assert call.__self__ is owner  # type: ignore[attr-defined]
    assert call.__wrapped__ == owner.work  # type: ignore[attr-defined]
    assert asyncio.run(call()) == "done"


def _expired() -> CallTimeoutError:
    return CallTimeoutError("expired", kind="tool", name="t", timeout=0.05)


def test_await_within_keeps_the_awaitables_own_timeout_error():
    from flink_agents.api.timeouts import await_within

    async def raises() -> None:
        raise TimeoutError("mine")

    with pytest.raises(TimeoutError, match="mine") as info:
        asyncio.run(await_within(raises(), 5, _expired))
    assert not isinstance(info.value, CallTimeoutError)


def test_nested_deadlines_each_report_their_own():
    from flink_agents.api.timeouts import await_within

    def named(name: str) -> Any:
        return lambda: CallTimeoutError(name, kind="tool", name=name, timeout=0)

    async def inner_first() -> None:
        await await_within(await_within(asyncio.sleep(30), 0.05, named("inner")), 30, named("o"))

    async def outer_first() -> None:
        await await_within(await_within(asyncio.sleep(30), 30, named("inner")), 0.05, named("o"))

    with pytest.raises(CallTimeoutError) as info:
        asyncio.run(inner_first())
    assert info.value.name == "inner"
    with pytest.raises(CallTimeoutError) as info:
        asyncio.run(outer_first())
    assert info.value.name == "o"


def test_a_cancellation_from_outside_stays_a_cancellation():
    from flink_agents.api.timeouts import await_within

    async def main() -> None:
        task = asyncio.ensure_future(await_within(asyncio.sleep(30), 30, _expired))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_a_swallowed_cancellation_does_not_hit_a_later_await():
    from flink_agents.api.timeouts import await_within

    async def stubborn() -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return "ignored the deadline"
        return "slept"

    async def main() -> str:
        result = await await_within(stubborn(), 0.05, _expired)
        await asyncio.sleep(0.01)  # would raise CancelledError if the request were left
        return result

    assert asyncio.run(main()) == "ignored the deadline"


def test_default_deadlines_of_tools_and_model_calls():
    from flink_agents.api.chat_message import ChatMessage
    from flink_agents.integrations.chat_models.openai.openai_chat_model import (
        OpenAIChatModelConnection,
        OpenAIChatModelSetup,
    )
    from flink_agents.plan.actions.calls import model_timeout

    config = AgentConfiguration()
    assert config.get(TimeoutOptions.TOOL_TIMEOUT) == 120.0
    config.set_str("tool.timeout", "none")
    assert config.get(TimeoutOptions.TOOL_TIMEOUT) is None

    class Ctx:
        def __init__(self, **options: Any) -> None:
            self.config = AgentConfiguration()
            for k, v in options.items():
                self.config.set_str(k, v)

    resources = {
        "openai": OpenAIChatModelConnection(api_base_url="http://127.0.0.1:1/v1"),
        "scripted": ScriptedChatModelConnection(replies=[ChatMessage(content="x")]),
    }

    def setup(connection: str, **kw: Any) -> Any:
        made = (OpenAIChatModelSetup if connection == "openai" else ScriptedChatModelSetup)(
            connection=connection, model="m", **kw
        )
        made.get_resource = lambda name, rtype: resources[name]
        return made

    # The built-in providers bound their calls themselves (total_timeout, 300 s).
    assert model_timeout(setup("openai"), Ctx()) is None  # type: ignore[arg-type]
    # Any other connection: 300 s, unless the option or the setup says otherwise.
    assert model_timeout(setup("scripted"), Ctx()) == 300.0  # type: ignore[arg-type]
    assert model_timeout(setup("scripted"), Ctx(**{"model.timeout": "7"})) == 7.0  # type: ignore[arg-type]
    assert model_timeout(setup("openai", timeout=3), Ctx()) == 3.0  # type: ignore[arg-type]


def test_await_within_arms_no_timer_for_a_call_that_does_not_wait():
    from flink_agents.api.timeouts import await_within

    async def quick() -> int:
        return 7

    async def main() -> None:
        loop = asyncio.get_running_loop()
        assert await await_within(quick(), 5, _expired) == 7
        assert not loop._scheduled  # type: ignore[attr-defined]  # no timer was made

    asyncio.run(main())


def test_await_within_counts_the_first_steps_time():
    from flink_agents.api.timeouts import await_within

    async def busy_then_waits() -> None:
        time.sleep(0.2)  # past the deadline before the first wait
        await asyncio.sleep(30)

    async def main() -> None:
        started = time.monotonic()
        with pytest.raises(CallTimeoutError):
            await await_within(busy_then_waits(), 0.1, _expired)
        assert time.monotonic() - started < 20  # the timer was due at once, not 0.1 s later

    asyncio.run(main())


def test_await_within_deadline_is_due_from_the_calls_start():
    from flink_agents.api.timeouts import await_within

    async def busy_then_waits_a_little() -> str:
        time.sleep(0.2)  # the first step uses 0.2 s of the 0.3 s
        await asyncio.sleep(0.2)  # ends at 0.4 s: past a deadline counted from the start
        return "late"

    async def main() -> None:
        with pytest.raises(CallTimeoutError):
            await await_within(busy_then_waits_a_little(), 0.3, _expired)

    asyncio.run(main())


def test_a_runner_resolves_a_model_once_and_again_when_its_achat_is_patched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flink_agents.runtime.core import AgentRunner
    from tests.flink import agents

    runner = AgentRunner(AgentPlan.from_agent(agents.chat_agent()))
    looked_up: list[str] = []
    real_get = runner.resources.get

    def get(name: str, rtype: Any) -> Any:
        looked_up.append(name)
        return real_get(name, rtype)

    monkeypatch.setattr(runner.resources, "get", get)
    patched_calls: list[int] = []
    original = ScriptedChatModelSetup.achat

    async def patched(self: Any, *args: Any, **kwargs: Any) -> Any:
        patched_calls.append(1)
        return await original(self, *args, **kwargs)

    async def runs(n: int) -> list[Any]:
        return [(await runner.run("k", {"i": i})).outputs for i in range(n)]

    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(runs(3)) == [[{"i": 0}], [{"i": 1}], [{"i": 2}]]
        assert looked_up.count("model") == 1  # once per runner and model name
        monkeypatch.setattr(ScriptedChatModelSetup, "achat", patched)
        assert loop.run_until_complete(runs(2)) == [[{"i": 0}], [{"i": 1}]]
        assert patched_calls == [1, 1]  # the patched method, with its deadline
    finally:
        loop.close()
        runner.close()
    assert runner.model_calls == {}  # their setups were closed
