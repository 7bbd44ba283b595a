"""Memory events and the agent-run-begin event in the run loop (local environment and the
core directly): what is sent, when, in which order, with which switches; the event log and
the trace see them; nothing is made while nothing can see them."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.core_options import (
    AgentConfiguration,
    AgentExecutionOptions,
    ErrorHandlingStrategy,
    MemoryEventOptions,
)
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.events.memory_event import (
    MemoryEvent,
    SensoryWriteEvent,
    ShortTermReadEvent,
    ShortTermWriteEvent,
)
from flink_agents.api.events.run_event import AgentRunBeginEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import AgentRunner
from flink_agents.runtime.core.context import RunContext
from flink_agents.runtime.core.memory_events import ObservedRunContext
from flink_agents.runtime.observability.trace import load_runs
from tests.observability.agents import dump
from tests.runtime import memory_event_agents as agents
from tests.runtime.memory_event_agents import HEARD, RECORDER, flaky_agent, memory_agent


@pytest.fixture(autouse=True)
def _clear() -> None:
    HEARD.clear()


def run_local(agent: Any, records: list[tuple[str, Any]], **config: Any) -> list[Any]:
    env = AgentsExecutionEnvironment.get_execution_environment()
    for key, value in config.items():
        env.get_config().set_str(key, value)
    out = env.from_list([{"key": k, "value": v} for k, v in records]).apply(agent).to_list()
    env.execute()
    return [next(iter(o.values())) for o in out]


def heard_types() -> list[str]:
    return [t for t, _ in HEARD]


def test_writes_become_events_after_the_actions_own_events() -> None:
    out = run_local(memory_agent(), [("u1", {"tier": "gold"})], **{"event-listeners": [RECORDER]})
    assert heard_types() == [
        "_input_event",
        "_output_event",  # the action's own event first
        "_sensory_write_event",  # then writes: sensory, short-term (reads are off)
        "_short_term_write_event",
        "_output_event",  # what `audit` sent
    ]
    sensory = HEARD[2][1]
    write = HEARD[3][1]
    assert isinstance(sensory, SensoryWriteEvent) and isinstance(write, ShortTermWriteEvent)
    assert sensory.key == write.key == "u1"
    assert sensory.value == {"scratch": {"seen": [1, 2]}}
    # One event for the execution; the last write of a path wins; new_object writes None;
    # parents made on the way are not writes.
    assert write.value == {"profile.tier": "gold", "visits": 1, "prefs": None}
    assert list(write.value) == ["profile.tier", "visits", "prefs"]
    # The audit action's own write (`audited`) made no event: no events about events.
    assert out == [{"visits": 1}, {"audit": write.value, "key": "u1"}]


def test_read_events_are_off_by_default_and_on_by_their_switch() -> None:
    config = {"event-listeners": [RECORDER], MemoryEventOptions.SHORT_TERM_READ.key: True}
    run_local(
        memory_agent(with_audit=False),
        [("u1", {"tier": "gold"}), ("u1", {"tier": "gold"})],
        **config,
    )
    reads = [e for t, e in HEARD if t == ShortTermReadEvent.EVENT_TYPE]
    # First run: `visits` did not exist (no read), get_fields read profile.tier (after its
    # write); second run: visits read as 1. Objects and missing paths are never reads.
    assert [r.value for r in reads] == [
        {"profile.tier": "gold"},
        {"visits": 1, "profile.tier": "gold"},
    ]
    assert "_sensory_read_event" not in heard_types()


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({MemoryEventOptions.MEMORY_GENERATE_EVENT.key: False}, set()),
        (
            {
                MemoryEventOptions.MEMORY_GENERATE_EVENT.key: False,
                MemoryEventOptions.SHORT_TERM_WRITE.key: True,
            },
            {"_short_term_write_event"},
        ),
        (
            {MemoryEventOptions.MEMORY_GENERATE_EVENT.key: True},
            {
                "_short_term_write_event",
                "_short_term_read_event",
                "_sensory_write_event",
            },
        ),
        ({MemoryEventOptions.SENSORY_WRITE.key: False}, {"_short_term_write_event"}),
    ],
)
def test_switches_resolve_sub_key_then_master_then_default(
    config: dict[str, Any], expected: set[str]
) -> None:
    run_local(
        memory_agent(with_audit=False),
        [("u1", {"tier": "gold"})],
        **{"event-listeners": [RECORDER], **config},
    )
    assert {t for t in heard_types() if MemoryEvent.is_memory_type(t)} == expected


def test_a_retried_action_reports_its_successful_attempt_only() -> None:
    out = run_local(
        flaky_agent(ErrorHandlingStrategy.RETRY),
        [("k", {"n": 1})],
        **{"event-listeners": [RECORDER], "retry-wait-interval": 0},
    )
    writes = [e for t, e in HEARD if t == ShortTermWriteEvent.EVENT_TYPE]
    assert [w.value for w in writes] == [{"attempt": 2, "only_attempt_2": True}]
    assert out[0] == {"attempt": 2}


def test_an_ignored_failure_reports_no_memory() -> None:
    run_local(
        flaky_agent(ErrorHandlingStrategy.IGNORE),
        [("k", {"n": 1})],
        **{"event-listeners": [RECORDER]},
    )
    assert heard_types() == ["_input_event", "_error_event"]


def test_no_warning_for_memory_events_nobody_acts_on(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="flink_agents.runtime"):
        run_local(
            memory_agent(with_audit=False),
            [("u1", {"tier": "gold"})],
            **{"event-listeners": [RECORDER]},
        )
    assert "_short_term_write_event" in heard_types()
    assert "no action listens" not in caplog.text


def _runner(agent: Any, **config: Any) -> AgentRunner:
    return AgentRunner(AgentPlan.from_agent(agent, AgentConfiguration(config)))


def test_switched_off_the_plain_context_runs_and_counts_are_the_same_either_way() -> None:
    # All switches off: the plain context, whose memory path has no observation code.
    off = _runner(memory_agent(), **{MemoryEventOptions.MEMORY_GENERATE_EVENT.key: False})
    on = _runner(memory_agent(with_audit=False))
    try:
        assert off._context_class is RunContext and off.memory_event_settings is None
        off.run_sync("u1", {"tier": "gold"})
        assert off.counts.events == 2  # input and output
        # On (the default), they are made whether or not anything looks (as upstream): a
        # listener or the event log added later changes no count.
        assert on._context_class is ObservedRunContext
        on.run_sync("u1", {"tier": "gold"})
        assert on.counts.events == 2 + 2  # + sensory and short-term writes
        on.add_listener(agents.Recorder())
        on.run_sync("u1", {"tier": "gold"})
        assert on.counts.events == 4 + 4
    finally:
        off.close()
        on.close()


def test_run_begin_event_is_off_by_default() -> None:
    assert AgentExecutionOptions.AGENT_RUN_BEGIN_EVENT.default is False
    run_local(memory_agent(with_audit=False, with_begin=True), [("u1", {"tier": "gold"})])
    assert not HEARD  # no listener configured: nothing recorded either way
    run_local(
        memory_agent(with_audit=False, with_begin=True),
        [("u1", {"tier": "gold"})],
        **{"event-listeners": [RECORDER]},
    )
    assert "_agent_run_begin_event" not in heard_types()


def test_run_begin_event_carries_the_memory_values_and_runs_first() -> None:
    config = {"event-listeners": [RECORDER], AgentExecutionOptions.AGENT_RUN_BEGIN_EVENT.key: True}
    out = run_local(
        memory_agent(with_audit=True, with_begin=True),
        [("u1", {"tier": "gold"}), ("u1", {"tier": "silver"})],
        **config,
    )
    types = heard_types()
    # Listeners hear of the input first, then the begin event; the begin event's actions
    # run before the input's.
    assert types[:2] == ["_input_event", "_agent_run_begin_event"]
    first, second = [e for t, e in HEARD if t == "_agent_run_begin_event"]
    assert isinstance(first, AgentRunBeginEvent) and first.key == "u1"
    assert first.value == {}
    # Values only (no object nodes such as `profile` or `prefs`), flat dotted paths.
    assert second.value == {"profile.tier": "gold", "visits": 1, "audited": True, "begins": 1}
    run1 = out[: len(out) // 2]
    assert run1[0] == {"begin": {}}  # on_begin ran first
    assert {"audit": {"begins": 1}, "key": "u1"} in run1  # its write is observed
    assert {"visits": 1} in run1 and len(run1) == 4


def _event_log_config(tmp_path: Path) -> dict[str, Any]:
    return {
        "event-log.enabled": True,
        "baseLogDir": str(tmp_path),
        "event-log.writer": "thread",
        "event-log.level": "VERBOSE",
        AgentExecutionOptions.AGENT_RUN_BEGIN_EVENT.key: True,
    }


def test_the_event_log_and_the_trace_show_them(tmp_path: Path) -> None:
    run_local(
        memory_agent(with_audit=False), [("u1", {"tier": "gold"})], **_event_log_config(tmp_path)
    )
    (log_file,) = tmp_path.glob("events-*.log")
    events = [r for r in dump(str(log_file)) if r["record"] == "event"]
    by_type = {r["eventType"]: r for r in events}
    assert [r["eventType"] for r in events] == [
        "_input_event",
        "_agent_run_begin_event",
        "_output_event",
        "_sensory_write_event",
        "_short_term_write_event",
    ]
    input_id = by_type["_input_event"]["eventId"]
    begin = by_type["_agent_run_begin_event"]
    assert begin["parentEventId"] == input_id and begin["action"] == "agent_run_begin_action"
    write = by_type["_short_term_write_event"]
    assert write["parentEventId"] == input_id and write["action"] == "remember"
    assert write["payload"]["key"] == "u1"
    assert write["payload"]["value"] == {"profile.tier": "gold", "visits": 1, "prefs": None}
    (run,) = load_runs(tmp_path)
    assert [a.name for a in run.actions] == ["agent_run_begin_action", "remember"]


def test_a_memory_event_type_in_a_trigger_condition() -> None:
    from flink_agents.api.agents.agent import Agent
    from tests.runtime.memory_event_agents import audit, remember

    agent = Agent()
    agent.add_action("remember", InputEvent, remember)
    agent.add_action(
        "audit", ['type == EventType.ShortTermWriteEvent && attributes.value["visits"] > 1'], audit
    )
    out = run_local(agent, [("u1", {"tier": "a"}), ("u1", {"tier": "b"})])
    assert out[0] == {"visits": 1}
    assert out[1] == {"visits": 2}
    assert out[2]["audit"]["visits"] == 2 and len(out) == 3


def test_outputs_of_actions_triggered_by_memory_events_are_outputs() -> None:
    out = run_local(memory_agent(), [("a", {"tier": "x"}), ("b", {"tier": "y"})])
    audits = [o for o in out if "audit" in o]
    assert [a["key"] for a in audits] == ["a", "b"]
    assert all(isinstance(o, dict) for o in out)
    assert OutputEvent.EVENT_TYPE == "_output_event"
