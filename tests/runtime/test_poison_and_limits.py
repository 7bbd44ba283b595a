"""The core, without a host: records that cannot become an input event, failed runs set
aside as dead letters, and runs bounded in events and action time."""

from __future__ import annotations

import asyncio
import pickle
import threading
from typing import Any

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.dead_letter import DeadLetter
from flink_agents.api.events.event import ErrorEvent, Event, InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext
from flink_agents.errors import ConfigurationError, InputRecordError, RunLimitError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import AgentRunner, RunResult


def _deep(levels: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(levels):
        child: list[Any] = []
        node.append(child)
        node = child
    return root


POISON = {
    "unserializable": threading.Lock(),
    "nested-too-deep": _deep(5000),
    "self-referencing": (lambda d: (d.__setitem__("self", d), d)[1])({}),
}


def echo(event: Event, ctx: RunnerContext) -> None:
    ctx.short_term_memory.set("seen", True)
    ctx.send_event(OutputEvent(output=event.get_attr("input")))


def _runner(agent: Agent, **config: Any) -> AgentRunner:
    return AgentRunner(AgentPlan.from_agent(agent, AgentConfiguration(config)))


def _echo_agent() -> Agent:
    agent = Agent()
    agent.add_action("echo", [InputEvent], echo)
    return agent


def _run(runner: AgentRunner, value: Any, key: Any = "k") -> RunResult:
    try:
        return runner.run_sync(key, value)
    finally:
        pass


@pytest.mark.parametrize("poison", list(POISON), ids=list(POISON))
@pytest.mark.parametrize("strategy", ["fail", "retry"])
def test_a_poison_record_fails_under_fail_and_retry(poison: str, strategy: str) -> None:
    runner = _runner(_echo_agent(), **{"error-handling-strategy": strategy, "max-retries": 5})
    try:
        with pytest.raises(InputRecordError, match="cannot become an input event") as err:
            _run(runner, POISON[poison])
        assert err.value.key == "k"
        counts = runner.metrics.to_dict()
        assert counts["numOfInputsRejected"] == 1 and counts["numOfRunsFailed"] == 1
        assert counts["numOfActionsRetried"] == 0  # a poison record is never retried
    finally:
        runner.close()


@pytest.mark.parametrize("poison", list(POISON), ids=list(POISON))
def test_a_poison_record_under_ignore_is_an_error_event_and_a_count(poison: str) -> None:
    runner = _runner(_echo_agent(), **{"error-handling-strategy": "ignore"})
    try:
        result = _run(runner, POISON[poison])
        assert result.outputs == [] and result.memory_updates == {}
        assert result.dead_letter is None
        [error] = result.errors
        assert isinstance(error, ErrorEvent) and error.error_type == "InputRecordError"
        assert error.failed_event_type == InputEvent.EVENT_TYPE and error.key == "k"
        good = _run(runner, {"fine": 1}, key="other")  # the runner goes on
        assert good.outputs == [{"fine": 1}]
        counts = runner.metrics.to_dict()
        assert counts["numOfInputsRejected"] == 1 and counts["numOfRunsFailed"] == 1
        assert counts["numOfRuns"] == 2
    finally:
        runner.close()


@pytest.mark.parametrize("poison", list(POISON), ids=list(POISON))
def test_a_poison_record_under_dead_letter_is_a_dead_letter(poison: str) -> None:
    runner = _runner(_echo_agent(), **{"error-handling-strategy": "dead-letter"})
    try:
        result = _run(runner, POISON[poison])
        assert result.outputs == [] and result.errors == [] and result.memory_updates == {}
        letter = result.dead_letter
        assert isinstance(letter, DeadLetter)
        assert letter.key == "k" and letter.error_type == "InputRecordError"
        assert letter.event_type == InputEvent.EVENT_TYPE and letter.action is None
        assert "cannot become an input event" in letter.reason
        assert letter.record  # its repr (bounded)
        assert pickle.loads(pickle.dumps(letter)) == letter  # it crosses to Flink pickled
        assert DeadLetter.model_validate_json(letter.model_dump_json()) == letter
        assert runner.metrics.to_dict()["numOfDeadLetters"] == 1
    finally:
        runner.close()


def first(event: Event, ctx: RunnerContext) -> None:
    """Writes memory and sends an output before the second action fails."""
    ctx.short_term_memory.set("half", "written")
    ctx.send_event(OutputEvent(output="early"))
    ctx.send_event(Event(type="check", attributes={"input": event.get_attr("input")}))


def failing(event: Event, ctx: RunnerContext) -> None:
    value = event.get_attr("input")
    if isinstance(value, dict) and value.get("bad"):
        raise ValueError(f"cannot handle {value['bad']}")


def _two_step_agent() -> Agent:
    agent = Agent()
    agent.add_action("first", [InputEvent], first)
    agent.add_action("second", ["check"], failing)
    return agent


def test_a_failed_run_under_dead_letter_commits_nothing() -> None:
    runner = _runner(_two_step_agent(), **{"error-handling-strategy": "dead-letter"})
    try:
        result = _run(runner, {"bad": "x" * 20_000}, key=("tuple", 1))
        assert result.outputs == [] and result.memory_updates == {}
        assert result.durable_records == {} and result.errors == []
        letter = result.dead_letter
        assert letter is not None
        assert letter.key == repr(("tuple", 1))  # no JSON value: its repr
        assert letter.action == "second" and letter.event_type == "check"
        assert letter.error_type == "ActionError" and "cannot handle" in letter.reason
        # bounded: dead-letter.max-chars (4096) per text, the cut noted
        assert len(letter.reason) < 4200 and letter.reason.endswith("more chars]")
        assert len(letter.record) < 4200 and letter.record.endswith("more chars]")
        assert _run(runner, {"bad": ""}).dead_letter is None  # the next run is unaffected
    finally:
        runner.close()


def test_dead_letters_are_masked_and_bounded_by_the_option() -> None:
    agent = _two_step_agent()
    config = {
        "error-handling-strategy": "dead-letter",
        "dead-letter.max-chars": 100,
        "webhook.token": "tok-secret-in-plan-77",
    }
    runner = _runner(agent, **config)
    try:
        letter = _run(runner, {"bad": "tok-secret-in-plan-77 http://u:pw-5521@h"}).dead_letter
        assert letter is not None
        text = letter.model_dump_json()
        assert "tok-secret-in-plan-77" not in text and "pw-5521" not in text
        assert len(letter.record) <= 100 + len("...[999 more chars]")
    finally:
        runner.close()
    with pytest.raises(ConfigurationError, match="dead-letter.max-chars"):
        AgentConfiguration({"dead-letter.max-chars": 0})


def test_a_per_action_dead_letter_strategy() -> None:
    agent = Agent()
    agent.add_action("first", [InputEvent], first)
    agent.add_action("second", ["check"], failing, **{"error-handling-strategy": "dead-letter"})
    runner = _runner(agent)  # the agent's own strategy: fail
    try:
        assert _run(runner, {"bad": 1}).dead_letter is not None
    finally:
        runner.close()


# -- runaway runs -------------------------------------------------------------------------------


def ping(event: Event, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output="tick"))
    ctx.send_event(Event(type="pong", attributes={}))


def pong(event: Event, ctx: RunnerContext) -> None:
    ctx.short_term_memory.set("pongs", (ctx.short_term_memory.get("pongs") or 0) + 1)
    ctx.send_event(Event(type="ping", attributes={}))


def start(event: Event, ctx: RunnerContext) -> None:
    ctx.send_event(Event(type="ping", attributes={}))


def _ping_pong() -> Agent:
    agent = Agent()
    agent.add_action("start", [InputEvent], start)
    agent.add_action("bounce", ["ping"], ping)
    agent.add_action("back", ["pong"], pong)
    return agent


def test_a_runaway_run_is_stopped_and_its_cycle_named() -> None:
    runner = _runner(_ping_pong())  # max-events-per-run: 1000 by default
    try:
        with pytest.raises(RunLimitError) as err:
            _run(runner, 1)
        message = str(err.value)
        assert "1000 events (max-events-per-run)" in message
        assert "ping -> [bounce] -> pong -> [back] -> ping" in message
        assert set(err.value.event_types) == {"ping", "pong"}
        assert runner.metrics.to_dict()["numOfRunsOverLimit"] == 1
    finally:
        runner.close()


def test_a_runaway_run_under_ignore_keeps_what_it_did() -> None:
    runner = _runner(
        _ping_pong(), **{"error-handling-strategy": "ignore", "max-events-per-run": 50}
    )
    try:
        result = _run(runner, 1)
        [error] = result.errors
        assert error.error_type == "RunLimitError" and "bounce" in error.error
        assert result.outputs and set(result.outputs) == {"tick"}
        assert result.memory_updates.get("pongs")  # memory so far is kept
        assert len(result.outputs) < 50
    finally:
        runner.close()


def test_a_runaway_run_under_dead_letter() -> None:
    runner = _runner(
        _ping_pong(), **{"error-handling-strategy": "dead-letter", "max-events-per-run": 20}
    )
    try:
        result = _run(runner, 1)
        assert result.outputs == [] and result.memory_updates == {}
        assert result.dead_letter is not None
        assert result.dead_letter.error_type == "RunLimitError"
        assert "max-events-per-run" in result.dead_letter.reason
    finally:
        runner.close()


async def slow_ping(event: Event, ctx: RunnerContext) -> None:
    await asyncio.sleep(0.02)
    ctx.send_event(Event(type="ping", attributes={}))


def test_a_run_is_bounded_in_action_time() -> None:
    agent = Agent()
    agent.add_action("start", [InputEvent], start)
    agent.add_action("slow", ["ping"], slow_ping)
    runner = _runner(agent, **{"max-events-per-run": 1_000_000, "max-action-time-per-run": 0.3})
    try:
        with pytest.raises(RunLimitError, match="max-action-time-per-run") as err:
            _run(runner, 1)
        assert "ping (1, actions slow)" in str(err.value)  # what it was doing when stopped
    finally:
        runner.close()


@pytest.mark.parametrize(
    ("key", "value"),
    [("max-events-per-run", 0), ("max-events-per-run", -5), ("max-action-time-per-run", -1)],
)
def test_run_limits_have_checked_ranges(key: str, value: Any) -> None:
    with pytest.raises(ConfigurationError, match=key):
        AgentConfiguration({key: value})


def test_a_long_but_finite_run_is_not_stopped() -> None:
    """A run near the limit (sending fewer events than it) ends normally."""
    agent = Agent()
    agent.add_action("go", [InputEvent], lambda_free_start)
    agent.add_action("chain", ["step"], chain)
    runner = _runner(agent, **{"max-events-per-run": 45})
    try:
        assert _run(runner, 1).outputs == [40]
    finally:
        runner.close()


def lambda_free_start(event: Event, ctx: RunnerContext) -> None:
    ctx.send_event(Event(type="step", attributes={"n": 0}))


def chain(event: Event, ctx: RunnerContext) -> None:
    n = event.get_attr("n")
    if n < 40:
        ctx.send_event(Event(type="step", attributes={"n": n + 1}))
    else:
        ctx.send_event(OutputEvent(output=n))
