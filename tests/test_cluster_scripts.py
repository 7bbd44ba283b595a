"""How flink_agents.ops.cluster runs Flink's bin/ scripts (real bash processes, no Flink)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from flink_agents.errors import ClusterError
from flink_agents.ops import cluster


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped does not count)."""
    status = Path(f"/proc/{pid}/status")
    try:
        return "\nState:\tZ" not in status.read_text()
    except FileNotFoundError:
        return False


def _home_with(tmp_path: Path, script: str, text: str) -> Path:
    home = tmp_path / "pyflink"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / script).write_text(text, encoding="utf-8")
    return home


def test_a_script_that_hangs_is_stopped_with_what_it_started(tmp_path):
    child = tmp_path / "child.pid"
    # Like start-cluster.sh: starts a daemon in the background, then (here) hangs.
    home = _home_with(
        tmp_path, "start-cluster.sh", f"sleep 300 &\necho $! > {child}\necho started\nsleep 300\n"
    )
    started = time.monotonic()
    with pytest.raises(ClusterError, match=r"start-cluster.sh did not finish within 1s.*started"):
        cluster._run_script(home, tmp_path, "start-cluster.sh", timeout=1)
    assert time.monotonic() - started < 10
    pid = int(child.read_text())
    deadline = time.monotonic() + 5
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(pid), "the daemon the script started outlived it"


def test_a_failing_script_is_a_cluster_error_with_its_output(tmp_path):
    home = _home_with(tmp_path, "stop-cluster.sh", "echo 'no cluster here' >&2\nexit 3\n")
    with pytest.raises(ClusterError, match=r"stop-cluster.sh failed \(3\): no cluster here"):
        cluster._run_script(home, tmp_path, "stop-cluster.sh", timeout=10)


def test_a_script_that_finishes_gives_its_output_and_leaves_its_daemons(tmp_path):
    child = tmp_path / "child.pid"
    home = _home_with(
        tmp_path, "start-cluster.sh", f"sleep 30 > /dev/null 2>&1 &\necho $! > {child}\necho ok\n"
    )
    assert cluster._run_script(home, tmp_path, "start-cluster.sh", timeout=10) == "ok"
    pid = int(child.read_text())
    try:
        assert _running(pid)  # a started daemon keeps running after the script
    finally:
        os.kill(pid, signal.SIGKILL)
