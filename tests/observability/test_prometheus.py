"""Flink's Prometheus reporter (the PyFlink wheel's plugin) on the shared standalone cluster
exports the agent metrics with their action and model labels while a job runs."""

from __future__ import annotations

import http.client
import json
import time
import urllib.request
from pathlib import Path

import pytest

from flink_agents.ops.cluster import cluster_status, submit
from tests.observability.agents import SECRET

pytestmark = pytest.mark.flink

JOB = Path(__file__).with_name("prom_job.py")


def _scrape(first_port: int) -> str:
    """The metrics of every reporter of the cluster (JobManager and TaskManager take ports
    of the configured range in turn). A port of the range that another process holds (a
    Flink RPC or data port speaks a binary protocol) is skipped."""
    texts = []
    for port in range(first_port, first_port + 4):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                texts.append(r.read().decode("utf-8", "replace"))
        except (OSError, http.client.HTTPException):
            continue
    return "\n".join(texts)


def _value(text: str, name: str, *labels: str) -> float | None:
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        metric, _, value = line.rpartition(" ")
        if metric.split("{")[0].endswith(name) and all(label in metric for label in labels):
            return float(value)
    return None


def test_prometheus_reporter_exports_agent_metrics(
    tmp_path: Path, standalone_cluster: Path
) -> None:
    port = int((standalone_cluster / "prometheus-port").read_text())
    release, log_dir = tmp_path / "release", tmp_path / "log"
    result = submit(
        JOB, workdir=standalone_cluster, args=[str(release), str(log_dir)], detached=True
    )
    assert result.returncode == 0 and result.job_id, result.output[-3000:]
    rest = cluster_status(standalone_cluster).rest_url
    try:
        wanted = {
            ("numOfActionsExecuted", 'action="answer"'): 3.0,
            ("numOfActionsExecuted", 'action="chat_model_action"'): 6.0,
            ("promptTokens", 'action="chat_model_action"', 'model="model"'): 90.0,
            ("numOfToolCalls", 'tool="lookup"'): 3.0,
            ("auditEvents",): 3.0,
        }
        seen: dict[tuple[str, ...], float | None] = {}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            text = _scrape(port)
            seen = {k: _value(text, k[0], *k[1:]) for k in wanted}
            if seen == wanted:
                break
            time.sleep(1)
        assert seen == wanted, [line for line in text.splitlines() if "agent" in line.lower()][:40]
        assert "numOfEventProcessedPerSec" in text
    finally:
        release.write_text("go")
        deadline = time.monotonic() + 120
        state = None
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"{rest}/jobs/{result.job_id}", timeout=10) as r:
                state = json.loads(r.read())["state"]
            if state in ("FINISHED", "FAILED", "CANCELED"):
                break
            time.sleep(0.5)
    assert state == "FINISHED"
    files = list(log_dir.glob("events-*.log"))
    assert len(files) == 1 and result.job_id in files[0].name
    assert SECRET not in files[0].read_text()
