"""Operating agent jobs on a standalone cluster: cancelling a job whose model calls hang,
and an upgrade (stop with a savepoint, change the job, resume at another parallelism).

Both submit ``tests/flink/ops_job.py`` with ``flink-agents submit --jobmanager`` to the
session's shared cluster (``standalone_cluster``, 3 slots) in the mode under test.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from flink_agents.ops import jobs
from flink_agents.ops.cluster import cluster_status
from flink_agents.testing.minicluster import committed_records
from tests.cli.test_cli import cli
from tests.flink.harness import MODE

pytestmark = pytest.mark.flink

JOB = Path(__file__).with_name("ops_job.py")
KEYS = 6


@pytest.fixture(scope="module")
def jobmanager(standalone_cluster: Path) -> str:
    """``host:port`` of the shared cluster's REST endpoint."""
    return cluster_status(standalone_cluster).rest_url.removeprefix("http://")


def _submit(
    jobmanager: str, tmp: Path, *job_args: str, parallelism: int, savepoint: str | None = None
) -> str:
    """Submit the ops job detached; its job id."""
    more = ["--from-savepoint", savepoint] if savepoint else []
    proc = cli(
        "submit",
        str(JOB),
        "--jobmanager",
        jobmanager,
        "--detached",
        "-p",
        str(parallelism),
        *more,
        "--",
        str(tmp / "in"),
        str(tmp / "out"),
        str(tmp / "calls.jsonl"),
        "--mode",
        MODE,
        *job_args,
        cwd=tmp,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    job_id = proc.stderr.split("job ", 1)[1].split()[0]
    assert len(job_id) == 32, proc.stderr
    jobs.wait_for_state(jobmanager, job_id, frozenset({"RUNNING"}), timeout=120)
    return job_id


def _send(tmp: Path, name: str, records: list[dict[str, Any]]) -> None:
    """A new input file for the monitored FileSource (renamed into place: never half read)."""
    folder = tmp / "in"
    folder.mkdir(exist_ok=True)
    hidden = folder / f".{name}.tmp"
    hidden.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    hidden.rename(folder / name)


def _wait(what: str, check: Any, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _calls(tmp: Path) -> list[int]:
    path = tmp / "calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(line)["i"] for line in path.read_text().splitlines() if line.strip()]


def _outputs(tmp: Path) -> list[dict[str, Any]]:
    try:
        return committed_records(str(tmp / "out"))
    except (OSError, ValueError):  # a part file renamed or written while reading
        return []


def test_cancelling_a_job_whose_model_hangs_frees_its_slot(
    tmp_path, jobmanager, standalone_cluster
) -> None:
    """The model never answers; with 2 places in flight the operator thread blocks in the
    in-flight gate. Cancelling must finish within 10 s (Flink interrupts the task thread;
    the gate's wait notices) and give the slot back to the same TaskManager."""
    _send(tmp_path, "a.jsonl", [{"key": f"k{i}", "i": i} for i in range(12)])
    job_id = _submit(
        jobmanager, tmp_path, "--latency", "100000", "--max-in-flight", "2", parallelism=1
    )
    started_file = tmp_path / "calls.jsonl.started"
    _wait(
        "two runs to call the model",
        lambda: started_file.exists() and len(started_file.read_text().splitlines()) >= 2,
    )
    time.sleep(1)  # the third input waits in the in-flight gate
    assert len(started_file.read_text().splitlines()) == 2
    assert jobs.job_state(jobmanager, job_id) == "RUNNING"
    assert _calls(tmp_path) == []
    started = time.monotonic()
    jobs.cancel_job(jobmanager, job_id)
    state = jobs.wait_for_state(jobmanager, job_id, timeout=60)
    took = time.monotonic() - started
    print(f"\n[{MODE}] cancelled in {took:.1f}s")
    assert state == "CANCELED"
    assert took < 10
    _wait(
        "the slot to be free",
        lambda: (s := cluster_status(standalone_cluster)).slots_available == s.slots_total,
        timeout=20,
    )
    assert cluster_status(standalone_cluster).taskmanagers == 1


def test_upgrade_stop_with_savepoint_change_and_rescale(tmp_path, jobmanager) -> None:
    """Stop with a savepoint at parallelism 2 while every key has a run in flight (its
    model call done, its output not), resume the changed job (a filter upstream of the
    agent) at parallelism 3 from the savepoint: memory, pending inputs and durable call
    records carry over, and no model call is made twice."""
    first = [{"key": f"k{i % KEYS}", "i": i, "hold": 0} for i in range(2 * KEYS)]
    _send(tmp_path, "a.jsonl", first)
    job_id = _submit(jobmanager, tmp_path, parallelism=2)
    _wait("the first inputs' outputs", lambda: len(_outputs(tmp_path)) == 2 * KEYS)
    # One input per key whose run holds 5 s after its model call: in flight at the stop.
    held = [{"key": f"k{i % KEYS}", "i": i, "hold": 5} for i in range(2 * KEYS, 3 * KEYS)]
    _send(tmp_path, "b.jsonl", held)
    _wait("the held runs' calls", lambda: len(_calls(tmp_path)) == 3 * KEYS)

    stop = cli(
        "stop",
        job_id,
        "--savepoint",
        str(tmp_path / "savepoints"),
        "--jobmanager",
        jobmanager,
        timeout=300,
    )
    assert stop.returncode == 0, stop.stderr[-3000:]
    stopped = json.loads(stop.stdout)
    assert stopped["state"] == "FINISHED" and stopped["savepoint"], stopped
    assert len(_outputs(tmp_path)) == 2 * KEYS, "the held runs were not in flight at the stop"

    resumed = _submit(
        jobmanager, tmp_path, "--filter", parallelism=3, savepoint=stopped["savepoint"]
    )
    last = [{"key": f"k{i % KEYS}", "i": i, "hold": 0} for i in range(3 * KEYS, 4 * KEYS)]
    _send(tmp_path, "c.jsonl", last)
    try:
        _wait("every output", lambda: len(_outputs(tmp_path)) == 4 * KEYS, timeout=120)
    finally:
        jobs.cancel_job(jobmanager, resumed)
        jobs.wait_for_state(jobmanager, resumed, timeout=60)

    outputs = _outputs(tmp_path)
    assert sorted(o["i"] for o in outputs) == list(range(4 * KEYS))
    for k in range(KEYS):
        mine = sorted((o for o in outputs if o["key"] == f"k{k}"), key=lambda o: o["count"])
        inputs = [k, k + KEYS, k + 2 * KEYS, k + 3 * KEYS]
        # Memory carried over the stop: the key's n-th input saw count n and every
        # earlier input, the held one (pending at the stop) included.
        assert [o["count"] for o in mine] == [1, 2, 3, 4], mine
        assert [o["i"] for o in mine] == inputs, mine
        assert mine[-1]["seen"] == inputs, mine
    calls = Counter(_calls(tmp_path))
    repeated = sorted(i for i, n in calls.items() if n > 1)
    print(
        f"\n[{MODE}] model calls: {sum(calls.values())} for {4 * KEYS} inputs, repeated: {repeated}"
    )
    # The held runs' calls were answered from their durable records after the restore.
    assert repeated == []
    assert set(calls) == set(range(4 * KEYS))
