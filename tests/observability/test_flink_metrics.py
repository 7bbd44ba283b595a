"""Agent metrics in Flink's metric system, read through the MiniCluster's REST API, and the
event log of the same job (one file per subtask)."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from flink_agents.testing.ports import free_port
from tests.observability import agents
from tests.observability.agents import SECRET, dump, tool_agent

pytestmark = pytest.mark.flink

INPUTS = 5


def _get(port: int, path: str) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return json.loads(r.read())


def _subtask_metrics(port: int, job: str, vertex: str, names: list[str]) -> dict[str, float]:
    found = _get(port, f"/jobs/{job}/vertices/{vertex}/subtasks/metrics?get={','.join(names)}")
    return {m["id"]: m.get("sum", m.get("max")) for m in found}


def test_metrics_reach_flink_rest_api_and_event_log_is_written(tmp_path: Path) -> None:
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment

    from flink_agents.api.execution_environment import AgentsExecutionEnvironment
    from flink_agents.testing.minicluster import source
    from tests.flink.harness import MODE

    port = free_port()
    conf = Configuration()
    conf.set_string("rest.port", str(port))
    conf.set_string("rest.address", "127.0.0.1")
    conf.set_string("metrics.fetcher.update-interval", "300")
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(1)
    log_dir = tmp_path / "log"
    release = tmp_path / "release"
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env,
        **{
            "python.execution-mode": MODE,
            "event-log.enabled": True,
            "baseLogDir": str(log_dir),
            # The opt-in writer process: its interpreter is found inside pemja / Beam too.
            "event-log.writer": "process",
            # Upstream main's run-begin event: in the log and the counts.
            "agent-run.begin-event": True,
        },
    )
    # The last input waits for the release file: the job stays running while the metrics
    # of the first INPUTS runs are read.
    records = [{"name": f"name{i}"} for i in range(INPUTS)]
    records.append({"name": "last", "hold": str(release)})
    (
        agents_env.from_datastream(source(env, records), key_selector=lambda r: r["name"])
        .apply(tool_agent())
        .to_datastream()
        .print()
    )
    client = env.execute_async("observability")
    job = str(client.get_job_id())
    try:
        vertex = None
        expected = {
            # counted when a run ends: the held run's events are not in yet
            # + the run-begin event per input
            "numOfEventProcessed": (agents.EVENTS_PER_INPUT + 1) * INPUTS,
            "numOfActionsExecuted": agents.ACTIONS_PER_INPUT * INPUTS,
            "action.answer.numOfActionsExecuted": INPUTS,
            "action.chat_model_action.numOfActionsExecuted": 2 * INPUTS,
            "action.chat_model_action.model.model.promptTokens": agents.PROMPT_TOKENS_PER_INPUT
            * INPUTS,
            "action.chat_model_action.model.model.completionTokens": (
                agents.COMPLETION_TOKENS_PER_INPUT * INPUTS
            ),
            "auditEvents": INPUTS,  # a user metric
            "runsInFlight": 1,
        }
        seen: dict[str, float] = {}
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            time.sleep(0.5)
            if vertex is None:
                vertices = _get(port, f"/jobs/{job}")["vertices"]
                agent_vertices = [v for v in vertices if "agent" in v["name"].lower()]
                if not agent_vertices:
                    continue
                vertex = agent_vertices[0]["id"]
            listed = [
                m["id"] for m in _get(port, f"/jobs/{job}/vertices/{vertex}/subtasks/metrics")
            ]
            # ids are "<operator name>.<group>...<metric>"
            wanted = {
                name: full for name in expected for full in listed if full.partition(".")[2] == name
            }
            if len(wanted) < len(expected):
                continue
            values = _subtask_metrics(port, job, vertex, list(wanted.values()))
            seen = {name: values[full] for name, full in wanted.items()}
            if seen == expected:
                break
        assert seen == expected, (seen, listed)
        meters = [m for m in listed if m.endswith("numOfEventProcessedPerSec")]
        assert meters, listed
        assert any(m.endswith("action.answer.answerLength") for m in listed), listed
    finally:
        release.write_text("go")
        client.get_job_execution_result().result()
    files = sorted(log_dir.glob("events-*.log"))
    assert len(files) == 1, files
    assert job in files[0].name  # Flink's job id, in both modes
    text = files[0].read_text()
    assert SECRET not in text
    records_written = dump(str(files[0]))
    runs = [r for r in records_written if r["record"] == "run"]
    assert len(runs) == INPUTS + 1 and all(r["status"] == "ok" for r in runs)
    events = [r for r in records_written if r["record"] == "event"]
    inputs = {r["runId"]: r["eventId"] for r in events if r["eventType"] == "_input_event"}
    begins = [r for r in events if r["eventType"] == "_agent_run_begin_event"]
    assert len(begins) == INPUTS + 1
    for begin in begins:
        assert begin["parentEventId"] == inputs[begin["runId"]]
        assert begin["action"] == "agent_run_begin_action"
        assert begin["payload"]["key"] == begin["key"] and begin["payload"]["value"] == {}
    writes = [r for r in events if r["eventType"] == "_sensory_write_event"]
    assert len(writes) == INPUTS + 1 and {w["action"] for w in writes} == {"chat_model_action"}
