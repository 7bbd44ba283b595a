"""What keeps trigger-condition dispatch cheap: an expression names the event types it can
be true for, and the loop evaluates it only for those, with the same results (errors next to
a false ``type == ...`` are absorbed, as CEL's ``&&`` does), and ``id`` only when read."""

from __future__ import annotations

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.events.event_type import event_type_constants
from flink_agents.api.trigger_conditions import compile_condition
from flink_agents.errors import ActionError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import AgentRunner


@pytest.mark.parametrize(
    ("text", "types", "reads_id"),
    [
        ('type == "scored" && attributes.score > 5', {"scored"}, False),
        ('attributes.score > 5 && type == "scored"', {"scored"}, False),
        (
            "(type == EventType.InputEvent || type == 'b') && score > 1",
            {"_input_event", "b"},
            False,
        ),
        ('"a" == type && type == "b"', set(), False),
        ('type == "a" || score > 1', None, False),  # an alternative of any type
        ("type != 'a'", None, False),
        ('id == "x" && type == "a"', {"a"}, True),
        ("score > 5", None, False),
    ],
)
def test_an_expression_names_the_types_it_can_select(
    text: str, types: set[str] | None, reads_id: bool
) -> None:
    compiled = compile_condition(text, event_type_constants())
    assert compiled.event_types == (None if types is None else frozenset(types))
    assert compiled.reads_id is reads_id


SEEN: list[str] = []


def route(event: InputEvent, ctx) -> None:
    ctx.send_event(Event(type=event.input["type"], attributes=event.input["attributes"]))


def high(event: Event, ctx) -> None:
    SEEN.append(f"high:{event.type}")
    ctx.send_event(OutputEvent(output=event.get_attr("score")))


def _runner(condition: str) -> AgentRunner:
    agent = Agent()
    agent.add_action("route", InputEvent, route)
    agent.add_action("high", [condition], high)
    config = {"action.trigger-condition.evaluate-failure-strategy": "FAIL"}
    return AgentRunner(AgentPlan.from_agent(agent, AgentConfiguration(config)))


def test_skipped_types_give_what_evaluation_would() -> None:
    # With FAIL, an error that CEL would not absorb fails the run: events of other types
    # (without `score`) must neither fail nor match, as evaluating them would give.
    runner = _runner('attributes.score > 5 && type == "scored"')
    SEEN.clear()
    try:
        quiet = runner.run_sync("k", {"type": "other", "attributes": {}})
        assert quiet.outputs == [] and SEEN == []
        hit = runner.run_sync("k", {"type": "scored", "attributes": {"score": 9}})
        assert hit.outputs == [9] and SEEN == ["high:scored"]
        with pytest.raises(ActionError, match="no such key|score"):
            runner.run_sync("k", {"type": "scored", "attributes": {}})
        assert set(runner._conditional._by_type) >= {"_input_event", "other", "scored"}  # type: ignore[union-attr]
        assert runner._conditional._by_type["other"] == []  # type: ignore[union-attr]
    finally:
        runner.close()


def test_an_expression_of_any_type_is_evaluated_for_every_event() -> None:
    runner = _runner("score > 5")
    SEEN.clear()
    try:
        # the input event has no `score`: an error with FAIL, as before the skipping
        with pytest.raises(ActionError, match="score"):
            runner.run_sync("k", {"type": "other", "attributes": {"score": 9}})
    finally:
        runner.close()
