"""A poison record on a MiniCluster: under ``ignore`` and ``dead-letter`` the other records'
outputs all arrive exactly once, the dead letters arrive once each on the side output, and
nothing fails (the job runs without a restart strategy: a failure would fail it)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyflink.common import Configuration
from pyflink.common.typeinfo import Types
from pyflink.datastream import StreamExecutionEnvironment

from flink_agents.api.agents.agent import Agent
from flink_agents.api.dead_letter import DeadLetter
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.runner_context import RunnerContext
from flink_agents.testing.minicluster import collect, source
from tests.flink.harness import MODE

POISON_ID = 7
FAILING_ID = 11
RECORDS = [{"id": i, "key": f"k{i % 4}"} for i in range(24)]

pytestmark = pytest.mark.flink


def _deep(levels: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(levels):
        child: list[Any] = []
        node.append(child)
        node = child
    return root


def poison(record: dict[str, Any]) -> dict[str, Any]:
    """Record 7 nested deeper than JSON allows: picklable, so Flink carries it, but it
    cannot become an input event."""
    if record["id"] == POISON_ID:
        return {**record, "payload": _deep(400)}
    return record


def handle(event: Event, ctx: RunnerContext) -> None:
    record = event.get_attr("input")
    if record["id"] == FAILING_ID:
        raise ValueError(f"record {FAILING_ID} is refused")
    ctx.send_event(OutputEvent(output={"id": record["id"], "key": record["key"]}))


def _agent() -> Agent:
    agent = Agent()
    agent.add_action("handle", [InputEvent], handle)
    return agent


def _tagged_output(output: Any) -> str:
    return "out " + json.dumps(output, sort_keys=True)


def _tagged_letter(letter: DeadLetter) -> str:
    return "dead " + letter.model_dump_json()


def _run(strategy: str) -> tuple[list[dict[str, Any]], list[DeadLetter]]:
    conf = Configuration()
    conf.set_string("restart-strategy.type", "none")  # any failure fails the job
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(2)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env, **{"python.execution-mode": MODE, "error-handling-strategy": strategy}
    )
    stream = source(env, RECORDS).map(poison, output_type=Types.PICKLED_BYTE_ARRAY())
    builder = agents_env.from_datastream(stream, key_selector=lambda r: r["key"]).apply(_agent())
    outputs = builder.to_datastream().map(_tagged_output, output_type=Types.STRING())
    letters = builder.dead_letters().map(_tagged_letter, output_type=Types.STRING())
    lines = collect(outputs.union(letters))
    return (
        [json.loads(line[4:]) for line in lines if line.startswith("out ")],
        [DeadLetter.model_validate_json(line[5:]) for line in lines if line.startswith("dead ")],
    )


def test_a_poison_record_under_dead_letter() -> None:
    outputs, letters = _run("dead-letter")
    good = sorted(r["id"] for r in RECORDS if r["id"] not in (POISON_ID, FAILING_ID))
    assert sorted(o["id"] for o in outputs) == good  # each exactly once
    assert sorted(letter.key for letter in letters) == ["k3", "k3"]  # 7 and 11: key k3
    by_type = {letter.error_type: letter for letter in letters}
    assert set(by_type) == {"InputRecordError", "ActionError"}
    assert "cannot become an input event" in by_type["InputRecordError"].reason
    assert "'id': 7" in by_type["InputRecordError"].record
    assert by_type["ActionError"].action == "handle" and "refused" in by_type["ActionError"].reason


def test_a_poison_record_under_ignore() -> None:
    outputs, letters = _run("ignore")
    good = sorted(r["id"] for r in RECORDS if r["id"] not in (POISON_ID, FAILING_ID))
    assert sorted(o["id"] for o in outputs) == good
    assert letters == []  # ignore: an error event and a count, no dead letter


def test_dead_letters_without_the_bridge_jar(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyFlink's operators (no jar): a Python process function sends them to the side
    output."""
    import flink_agents.runtime.java as java

    monkeypatch.setattr(java, "bridge_jars", lambda: [])
    outputs, letters = _run("dead-letter")
    assert len(outputs) == len(RECORDS) - 2
    assert sorted(letter.error_type for letter in letters) == ["ActionError", "InputRecordError"]
