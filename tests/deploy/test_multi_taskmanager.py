"""``flink-agents cluster start --taskmanagers N``: the topology of the compose file (one
JobManager, several TaskManagers), here as local processes. A thread-mode agent job at
parallelism 2 on two one-slot TaskManagers runs a subtask on each (each TaskManager embeds
its own Python) and gives every output once."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from flink_agents.testing.minicluster import committed_records
from flink_agents.testing.ports import free_port
from tests.cli.test_cli import cli

pytestmark = pytest.mark.flink

JOB = Path(__file__).with_name("spread_job.py")


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def test_two_taskmanagers_each_run_a_subtask_of_an_agent_job(tmp_path) -> None:
    workdir = tmp_path / "cluster"
    port = free_port()
    start = [
        *("cluster", "start", "--workdir", str(workdir), "--port", str(port)),
        *("--taskmanagers", "2", "--slots", "1"),
    ]
    proc = cli(*start, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    try:
        started = json.loads(proc.stdout)
        assert started["running"] is True
        assert (started["taskmanagers"], started["slots_total"]) == (2, 2)
        rest = started["rest_url"]
        managers = {tm["id"] for tm in _get(f"{rest}/taskmanagers")["taskmanagers"]}
        assert len(managers) == 2

        output = tmp_path / "out"
        job = cli(
            *("submit", str(JOB), str(output), "--cluster", str(workdir), "-p", "2"),
            cwd=tmp_path,
            timeout=400,
        )
        assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
        outputs = committed_records(output)
        assert sorted(o["i"] for o in outputs) == list(range(60))
        # Memory per key over its 10 inputs, whichever TaskManager ran the key.
        for k in range(6):
            mine = sorted(o["count"] for o in outputs if o["key"] == f"k{k}")
            assert mine == list(range(1, 11)), (k, mine)
        (finished,) = _get(f"{rest}/jobs/overview")["jobs"]
        assert finished["state"] == "FINISHED"
        vertices = _get(f"{rest}/jobs/{finished['jid']}")["vertices"]
        names = [(v["name"], v["parallelism"]) for v in vertices]
        agent = next((v for v in vertices if "agent" in v["name"].lower()), None)
        assert agent is not None and agent["parallelism"] == 2, names
        ran_on = _get(f"{rest}/jobs/{finished['jid']}/vertices/{agent['id']}/taskmanagers")
        assert {tm["taskmanager-id"] for tm in ran_on["taskmanagers"]} == managers
    finally:
        stop = cli("cluster", "stop", "--workdir", str(workdir), timeout=120)
    assert stop.returncode == 0, stop.stderr
    assert json.loads(stop.stdout)["running"] is False
