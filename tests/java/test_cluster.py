"""A local standalone cluster from the pip-installed PyFlink (the session's shared one, see
``tests/conftest.py``): submit an agent job that uses Java resources through the bridge
(thread mode) twice, check its output. Starting and stopping is tested with the CLI
(``tests/cli/test_cli_cluster.py``)."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from flink_agents.ops.cluster import ClusterError, cluster_status, submit

pytestmark = pytest.mark.flink

JOB = Path(__file__).with_name("cluster_job.py")


def test_standalone_cluster_runs_java_bridge_jobs(tmp_path: Path, standalone_cluster: Path) -> None:
    with pytest.raises(ClusterError, match="no cluster was started"):
        cluster_status(tmp_path / "none")
    workdir = standalone_cluster
    started = cluster_status(workdir)
    assert started.running and started.taskmanagers == 1 and started.slots_total == 3
    from pyflink.version import __version__

    assert (workdir / "lib" / f"flink-python-{__version__}.jar").is_symlink()
    # Two jobs in a row on the same TaskManager (the second one is what used to fail with
    # NoSuchFieldException: loadedLibraryNames without flink-python in lib/).
    for run in range(2):
        out, lifecycle = tmp_path / f"out{run}.jsonl", tmp_path / f"life{run}.txt"
        result = submit(JOB, workdir=workdir, args=[str(out), str(lifecycle)])
        assert result.returncode == 0 and result.job_id, result.output[-2000:]
        outputs = {o["id"]: o for o in map(json.loads, out.read_text().splitlines())}
        assert outputs[0]["reply"] == "java=HI python=ih model=scripted-1"
        assert outputs[1]["reply"] == "java=ABC python=cba model=scripted-1"
        assert "java.lang.ArithmeticException: division by zero" in outputs[9]["reply"]
        events = collections.Counter(lifecycle.read_text().splitlines())
        assert events["open org.flinkagents.examples.UpperCaseTool"] == 1
        assert events["close org.flinkagents.examples.UpperCaseTool"] == 1
    assert cluster_status(workdir).running
