"""Long-term memory operations as memory events, on real mem0 (scripted brain, hashing
embeddings, Chroma in a temporary directory): adds, updates, gets, searches, deletes and
cleared sets folded per action execution; a replay from the durable log reports nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.core_options import AgentConfiguration, MemoryEventOptions
from flink_agents.api.events.memory_event import (
    LongTermGetEvent,
    LongTermSearchEvent,
    LongTermUpdateEvent,
)
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import AgentRunner
from tests.runtime.ltm_agents import LTM_CONFIG, MemoryOpsAgent, ltm_resources, ops
from tests.runtime.memory_event_agents import HEARD, Recorder


@pytest.fixture(autouse=True)
def _clear() -> None:
    HEARD.clear()


def _runner(tmp_path: Path, **config: Any) -> AgentRunner:
    agent = ltm_resources(MemoryOpsAgent(), str(tmp_path / "chroma"))
    plan = AgentPlan.from_agent(
        agent, AgentConfiguration({**LTM_CONFIG, "job-identifier": "job-e", **config})
    )
    runner = AgentRunner(plan)
    runner.add_listener(Recorder())
    return runner


def _events(kind: type) -> list[Any]:
    return [e for t, e in HEARD if t == kind.EVENT_TYPE]


def test_operations_fold_into_one_event_per_kind(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    try:
        first = runner.run_sync(
            "alice",
            ops(
                ("add", {"items": "Alice's favourite fruit is watermelon"}),
                ("add", {"items": "Alice drinks green tea"}),
                ("add", {"items": "Alice's favourite fruit is bananas"}),  # an UPDATE
            ),
        )
        (added, tea, updated) = first.outputs[0]
        assert updated == added  # mem0 updated the fruit item
        (update,) = _events(LongTermUpdateEvent)
        assert update.key == "alice" and update.cleared_sets == []
        # the last operation on an item wins
        assert update.value == {
            "facts": {
                added[0]: "Alice's favourite fruit is bananas",
                tea[0]: "Alice drinks green tea",
            }
        }
        HEARD.clear()
        runner.run_sync(
            "alice",
            ops(
                ("search", {"query": "favourite fruit", "limit": 1}),
                ("get", {"ids": [tea[0]]}),
                ("delete", {"ids": tea[0]}),
                ("delete_memory_set", {"name": "facts"}),
                ("add", {"items": "Alice walks to work", "set": "facts"}),
            ),
        )
        (search,) = _events(LongTermSearchEvent)
        (hit,) = search.results["facts"]["favourite fruit"]
        assert hit["id"] == added[0] and hit["value"] == "Alice's favourite fruit is bananas"
        assert isinstance(hit["score"], float)
        (get,) = _events(LongTermGetEvent)
        assert get.value == {"facts": {tea[0]: "Alice drinks green tea"}}
        (update,) = _events(LongTermUpdateEvent)
        # clearing the set dropped the earlier delete; the add after it stays
        assert update.cleared_sets == ["facts"]
        assert list(update.value["facts"].values()) == ["Alice walks to work"]
    finally:
        runner.close()


def test_a_replayed_run_reports_no_long_term_operation(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    try:
        adds = ops(("add", {"items": "Dave collects stamps"}))
        first = runner.run_sync("dave", adds)
        assert len(_events(LongTermUpdateEvent)) == 1
        HEARD.clear()
        replayed = runner.run_sync("dave", adds, durable=first.durable_records)
        assert replayed.outputs == first.outputs
        assert _events(LongTermUpdateEvent) == []  # answered from the log: not executed
    finally:
        runner.close()


def test_switched_off_operations_are_not_noted(tmp_path: Path) -> None:
    runner = _runner(
        tmp_path,
        **{
            MemoryEventOptions.LONG_TERM_UPDATE.key: False,
            MemoryEventOptions.LONG_TERM_SEARCH.key: False,
        },
    )
    try:
        runner.run_sync(
            "erin",
            ops(
                ("add", {"items": "Erin sails"}),
                ("search", {"query": "sails", "limit": 1}),
                ("get", {}),
            ),
        )
        assert [t for t, _ in HEARD if "long_term" in t] == ["_long_term_get_event"]
    finally:
        runner.close()
