"""run_agent in the local environment: outputs per key in order, memory, event log and
metrics, logs, keys, bad arguments. (The Flink modes: test_run_agent_flink.py.)"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.decorators import action
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.runner_context import RunnerContext
from flink_agents.testing import (
    assert_exactly_once,
    assert_memory,
    assert_no_repeated_calls,
    assert_per_key_order,
    run_agent,
)
from flink_agents.testing._harness import Fed
from tests.testing import agents

log = logging.getLogger("flink_agents.tests.kit")


def test_outputs_memory_event_log_and_metrics_locally():
    records = agents.inputs(7)
    run = run_agent(agents.weather_agent(latency=[0.0, 0.02]), records, key="id")

    assert run.mode == "local" and run.failures == 0
    assert run.outputs == agents.expected_outputs(records)
    assert list(run.outputs) == ["k0", "k1", "k2"]  # keys in order of first input
    assert run.output_of_input(4) == [{"answer": f"{json.dumps(records[4])} -> sunny in Oslo"}]
    assert run.memory["k0"] == {"count": 3, "seen": [0, 3, 6]}
    assert [c.seq for c in run.runs_of("k1")] == [1, 4]
    assert_exactly_once(run, agents.expected_outputs(records))
    assert_per_key_order(run)
    assert_memory(run, "k2", {"count": 2, "seen": [2, 5]})
    assert_no_repeated_calls(run)
    assert_no_repeated_calls(run, kind="tool")

    metrics = run.metrics
    assert metrics["numOfRuns"] == 7 and metrics["numOfRunsFailed"] == 0
    assert metrics["numOfModelCalls"] == 14 and metrics["numOfToolCalls"] == 7
    assert metrics["tool.lookup.numOfToolCalls"] == 7
    assert metrics["action.ask.numOfActionsExecuted"] == 7
    assert len(run.event_log.calls("model", key="k0")) == 6
    assert {r["status"] for r in run.event_log.runs()} == {"ok"}
    assert run.event_log.events("_input_event")[0]["payload"]["input"] == records[0]
    assert '"clazz"' in run.plan_json and "__flink_agents_testing_capture__" in run.plan_json


def test_metrics_from_the_event_log_equal_the_local_metric_group():
    """The event log's counts are the built-in metrics' (the local environment has both)."""
    records = agents.inputs(5)
    env = AgentsExecutionEnvironment.get_execution_environment()
    builder = env.from_list([{"key": r["id"], "value": r} for r in records]).apply(
        agents.weather_agent()
    )
    builder.to_list()
    env.execute()
    group = builder.get_metric_group().to_dict()
    derived = run_agent(agents.weather_agent(), records, key="id").metrics
    for name in (
        "numOfRuns",
        "numOfRunsFailed",
        "numOfEventProcessed",
        "numOfActionsExecuted",
        "numOfModelCalls",
        "numOfToolCalls",
        "numOfCallsReplayed",
        "numOfActionsFailed",
    ):
        assert derived[name] == group[name], name
    for name, sub in group["action"].items():
        assert derived.get(f"action.{name}.numOfActionsExecuted", 0) == sub["numOfActionsExecuted"]


class Shout(Agent):
    """Outputs the input upper-cased; logs each one."""

    @action(InputEvent)
    @staticmethod
    def shout(event: InputEvent, ctx: RunnerContext) -> None:
        log.info("shouting %s", event.input)
        ctx.send_event(OutputEvent(output=str(event.input).upper()))


class Picky(Agent):
    """Raises on the input ``"bad"``."""

    @action(InputEvent)
    @staticmethod
    def check(event: InputEvent, ctx: RunnerContext) -> None:
        if event.input == "bad":
            raise ValueError("no 'bad' here")
        ctx.send_event(OutputEvent(output=event.input))


def test_a_failing_run_fails_run_agent():
    with pytest.raises(Exception, match="no 'bad' here"):
        run_agent(Picky(), ["fine", "bad"])


@dataclass
class Order:
    customer: str
    item: str


def test_keys_by_field_attribute_function_or_position():
    assert run_agent(Shout(), ["a", "b", "a"]).outputs == {0: ["A"], 1: ["B"], 2: ["A"]}
    orders = [Order("ann", "tea"), Order("bob", "jam"), Order("ann", "cake")]
    by_attr = run_agent(Shout(), orders, key="customer").outputs
    assert list(by_attr) == ["ann", "bob"] and len(by_attr["ann"]) == 2
    by_func = run_agent(Shout(), ["x", "yy", "zz"], key=len).outputs
    assert by_func == {1: ["X"], 2: ["YY", "ZZ"]}
    with pytest.raises(ValueError, match="input 1 has no field 'id'"):
        run_agent(Shout(), [{"id": 1}, {"name": 2}], key="id")


def test_logs_of_the_run_are_captured_and_levels_restored():
    before = logging.getLogger("flink_agents").level
    run = run_agent(Shout(), ["hello"])
    assert any("shouting hello" in line for line in run.logs)
    assert "shouting hello" in run.log_text
    assert logging.getLogger("flink_agents").level == before


def test_the_agent_sees_plain_inputs_and_hooks_of_its_own_still_run():
    agent = Shout()
    agent.add_hook("mine_before", "before_agent", _record_before)
    agent.add_hook("mine_after", "after_agent", _append_after)
    run = run_agent(agent, ["x"])
    assert run.outputs == {0: ["X", "from my hook"]}
    assert _SEEN == ["x"]  # not the kit's Fed wrapper


_SEEN: list = []


def _record_before(hc) -> None:
    _SEEN.append(hc.input)
    assert not isinstance(hc.input, Fed)


def _append_after(hc) -> None:
    hc.outputs.append("from my hook")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"mode": "cluster"}, ValueError, "mode must be one of local, thread, process"),
        ({"fail_after": 1}, ValueError, "fail_after needs a Flink mode"),
        ({"mode": "thread", "fail_after": 3}, ValueError, "from 1 to len"),
        ({"parallelism": 0}, ValueError, "parallelism must be an int >= 1"),
        ({"key": 3.5}, TypeError, "key must be a field name"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        run_agent(Shout(), ["a", "b", "c"], **kwargs)


def test_not_an_agent_or_not_a_list():
    with pytest.raises(TypeError, match="needs an Agent"):
        run_agent(object(), ["a"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list of input values"):
        run_agent(Shout(), "abc")
