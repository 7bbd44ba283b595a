"""``flink-agents cluster start|status|stop`` and ``submit`` on a real standalone cluster."""

from __future__ import annotations

import json

import pytest

from flink_agents.testing.ports import free_port
from tests.cli.test_cli import REPO, cli

pytestmark = pytest.mark.flink


def test_start_submit_status_stop(tmp_path):
    workdir = tmp_path / "cluster"
    port = free_port()
    proc = cli("cluster", "start", "--workdir", str(workdir), "--port", str(port), timeout=240)
    assert proc.returncode == 0, proc.stderr
    try:
        started = json.loads(proc.stdout)
        assert started["running"] is True
        assert started["rest_url"] == f"http://localhost:{port}"
        assert started["taskmanagers"] == 1 and started["slots_total"] >= 1

        status = cli("cluster", "status", "--workdir", str(workdir))
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["running"] is True

        # Job arguments after the file; options may follow them.
        output = tmp_path / "unhappy.jsonl"
        job = cli(
            "submit",
            str(REPO / "examples" / "table_api.py"),
            str(output),
            "--cluster",
            str(workdir),
            cwd=tmp_path,
            timeout=400,
        )
        assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
        assert "finished in" in job.stderr
        rows = [json.loads(line) for line in output.read_text().splitlines()]
        assert [r["review_id"] for r in rows] == ["r2", "r4"]
        assert "'review_id': 'r2'" in job.stdout  # the job's own prints come through
    finally:
        stop = cli("cluster", "stop", "--workdir", str(workdir), timeout=120)
    assert stop.returncode == 0, stop.stderr
    assert json.loads(stop.stdout)["running"] is False
    after = cli("cluster", "status", "--workdir", str(workdir))
    assert after.returncode == 0 and json.loads(after.stdout)["running"] is False


def test_submit_a_one_file_job(tmp_path, standalone_cluster):
    """A job script that defines its agent itself (``__main__``), submitted with ``flink run
    -py`` to the session's shared cluster: its objects reach the TaskManager by value."""
    from tests.flink.test_one_file_jobs import EXPECTED, JOB, read_outputs

    output = tmp_path / "out.jsonl"
    job = cli(
        "submit",
        str(JOB),
        str(output),
        "--cluster",
        str(standalone_cluster),
        cwd=tmp_path,
        timeout=400,
    )
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert "DONE 6" in job.stdout
    assert read_outputs(output) == EXPECTED
