"""Trigger-condition dispatch in the run loop: exact matches first, then expressions in
declaration order, each action once; failure strategies; plan-time errors; listeners."""

from __future__ import annotations

import logging

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.core_options import AgentConfigOptions
from flink_agents.api.decorators import action
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.events.event_type import EventType
from flink_agents.api.events.listener import EventContext, EventListener
from flink_agents.errors import ActionError, ConfigurationError, PlanValidationError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.local.runner import LocalRunner

ORDER: list[str] = []


def condition_first_in_plan(event, ctx):
    ORDER.append("condition_first_in_plan")


def first_type_hit(event, ctx):
    ORDER.append("first_type_hit")


def second_type_hit(event, ctx):
    ORDER.append("second_type_hit")


def test_exact_matches_first_then_expressions_each_action_once():
    """Upstream's ordering case: exact-type actions in plan order, then expression actions;
    duplicates and several true conditions run an action once."""
    agent = Agent()
    agent.add_action(
        "condition_first_in_plan", ["type == EventType.InputEvent"], condition_first_in_plan
    )
    agent.add_action(
        "first_type_hit",
        [
            "_input_event",
            "_input_event",
            "type == EventType.InputEvent",
            "type == EventType.InputEvent",
        ],
        first_type_hit,
    )
    agent.add_action("second_type_hit", ["'_input_event'"], second_type_hit)
    plan = AgentPlan.from_agent(agent, {})
    assert plan.actions["first_type_hit"].listen_event_types == ["_input_event"]
    assert plan.actions["condition_first_in_plan"].trigger_conditions == [
        "type == EventType.InputEvent"
    ]
    ORDER.clear()
    with LocalRunner(plan) as runner:
        runner.run([("k", 1)])
    assert ORDER == ["first_type_hit", "second_type_hit", "condition_first_in_plan"]


class ScoreAgent(Agent):
    @action("type == EventType.InputEvent && input.score > 5")
    @staticmethod
    def high(event: Event, ctx) -> None:
        ctx.send_event(OutputEvent(output=f"high {event.input['n']}"))

    @action(EventType.InputEvent)
    @staticmethod
    def rescore(event: Event, ctx) -> None:
        ctx.send_event(Event(type="scored", attributes=dict(event.input)))

    @action('type == "scored" && score < 3', "'scored' == type && has(urgent) && urgent == true")
    @staticmethod
    def low_or_urgent(event: Event, ctx) -> None:
        ctx.send_event(OutputEvent(output=f"low-or-urgent {event.get_attr('n')}"))


def _outputs(plan: AgentPlan, records):
    with LocalRunner(plan) as runner:
        return [(r.key, o) for r in runner.run(records) for o in r.outputs]


def test_expressions_select_actions_by_attributes():
    plan = AgentPlan.from_agent(ScoreAgent(), {})
    outputs = _outputs(
        plan,
        [
            ("a", {"n": 1, "score": 9}),
            ("b", {"n": 2, "score": 1}),
            ("c", {"n": 3, "score": 4, "urgent": True}),
            ("d", {"n": 4, "score": 4}),
        ],
    )
    assert outputs == [("a", "high 1"), ("b", "low-or-urgent 2"), ("c", "low-or-urgent 3")]


class Strict(Agent):
    @action("score > 3")
    @staticmethod
    def scored(event: Event, ctx) -> None:
        ctx.send_event(OutputEvent(output="scored"))

    @action(InputEvent)
    @staticmethod
    def start(event: Event, ctx) -> None:
        ctx.send_event(Event(type="x", attributes=event.input))


def test_a_failing_condition_is_false_with_a_warning_by_default(caplog):
    plan = AgentPlan.from_agent(Strict(), {})
    with caplog.at_level(logging.WARNING, "flink_agents.runtime"):
        assert _outputs(plan, [("k", {"other": 1}), ("j", {"score": 5})]) == [("j", "scored")]
    assert "trigger condition 'score > 3' of action 'scored' failed" in caplog.text
    assert "no attribute 'score'" in caplog.text


def test_a_failing_condition_fails_the_run_with_the_fail_strategy():
    plan = AgentPlan.from_agent(
        Strict(), {AgentConfigOptions.CONDITION_EVALUATION_FAILURE_STRATEGY.key: "FAIL"}
    )
    with LocalRunner(plan) as runner, pytest.raises(ActionError, match="trigger condition"):
        runner.run([("k", {"other": 1})])


def test_a_bad_expression_is_a_plan_error_naming_action_and_column():
    agent = Agent()
    agent.add_action("bad", ["type == EventType.InputEvent &&"], condition_first_in_plan)
    agent.add_action("colon", ["order:created"], first_type_hit)
    with pytest.raises(PlanValidationError) as info:
        AgentPlan.from_agent(agent, {})
    text = str(info.value)
    assert "action 'bad'" in text and "column 32" in text
    assert "action 'colon'" in text and "'order:created'" in text


def test_plans_with_conditions_round_trip_and_plain_plans_carry_no_field():
    plan = AgentPlan.from_agent(ScoreAgent(), {})
    again = AgentPlan.model_validate_json(plan.model_dump_json())
    assert again.actions["low_or_urgent"].trigger_conditions == (
        plan.actions["low_or_urgent"].trigger_conditions
    )
    assert "trigger_conditions" not in plan.model_dump()["actions"]["rescore"]


SEEN: list[tuple[str, str, object]] = []


class Recorder(EventListener):
    def on_event_processed(self, context: EventContext, event: Event) -> None:
        SEEN.append((context.get_event_type(), event.type, context.key))


class Broken(EventListener):
    def on_event_processed(self, context: EventContext, event: Event) -> None:
        raise RuntimeError("listener bug")


def test_event_listeners_see_every_event_and_cannot_break_a_run(caplog):
    SEEN.clear()
    paths = [f"{__name__}.Recorder", f"{__name__}.Broken"]
    plan = AgentPlan.from_agent(ScoreAgent(), {AgentConfigOptions.EVENT_LISTENERS.key: paths})
    with caplog.at_level(logging.ERROR, "flink_agents.runtime"):
        assert _outputs(plan, [("a", {"n": 1, "score": 9})]) == [("a", "high 1")]
    assert SEEN == [
        ("_input_event", "_input_event", "a"),
        ("scored", "scored", "a"),
        ("_output_event", "_output_event", "a"),
    ]
    assert "event listener Broken failed" in caplog.text


def test_a_listener_that_is_no_listener_class_is_a_clear_error():
    plan = AgentPlan.from_agent(
        ScoreAgent(), {AgentConfigOptions.EVENT_LISTENERS.key: ["json.dumps"]}
    )
    with pytest.raises(ConfigurationError, match="not an EventListener class"):
        LocalRunner(plan)
