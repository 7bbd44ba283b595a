"""A Flink upgrade of a running agent job: stopped with a savepoint on the oldest supported
PyFlink (1.20), resumed from that savepoint on the newest (this interpreter's) at another
parallelism. Memory, pending inputs and durable call records carry over; no input is lost,
no output written twice, no model call made twice.

The oldest version runs in a venv of its own, made from the built wheel by
``tests/versions/run.py --flink 1.20.5 --suites ...,upgrade`` (CI and ``make
test-versions``), which passes its interpreter in ``FLINK_AGENTS_UPGRADE_FROM``; both jobs
run on local MiniClusters and share the savepoint folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from flink_agents.testing.minicluster import committed_records
from tests.flink.harness import MODE

pytestmark = pytest.mark.flink

JOB = Path(__file__).with_name("upgrade_job.py")
REPO = Path(__file__).resolve().parents[2]
KEYS = 6
OLD_PYTHON = os.environ.get("FLINK_AGENTS_UPGRADE_FROM")


def _version(python: str) -> str:
    return subprocess.run(
        [python, "-c", "import pyflink.version as v; print(v.__version__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    ).stdout.strip()


def _send(tmp: Path, name: str, records: list[dict[str, Any]]) -> None:
    folder = tmp / "in"
    folder.mkdir(exist_ok=True)
    hidden = folder / f".{name}.tmp"
    hidden.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    hidden.rename(folder / name)


def _outputs(tmp: Path) -> list[dict[str, Any]]:
    try:
        return committed_records(tmp / "out")
    except (OSError, ValueError):  # a part file renamed or written while reading
        return []


def _calls(tmp: Path) -> list[int]:
    path = tmp / "calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(line)["i"] for line in path.read_text().splitlines() if line.strip()]


class _Job:
    """The upgrade job in a child process of ``python``."""

    def __init__(self, python: str, tmp: Path, name: str, *extra: str) -> None:
        self.control = tmp / name
        self.control.mkdir()
        self.log = tmp / f"{name}.log"
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        command = [python, str(JOB), str(tmp / "in"), str(tmp / "out"), str(tmp / "calls.jsonl")]
        command += [str(self.control), "--mode", MODE, *extra]
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(command, cwd=tmp, env=env, stdout=out, stderr=out)
        self.wait("the job to run", lambda: (self.control / "running").exists(), 180)

    def wait(self, what: str, check: Any, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if self.proc.poll() is not None:
                pytest.fail(f"the job ended waiting for {what}:\n{self.log.read_text()[-4000:]}")
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.2)

    def stop_with_savepoint(self) -> str:
        (self.control / "stop").write_text("")
        assert self.proc.wait(timeout=180) == 0, self.log.read_text()[-4000:]
        return (self.control / "savepoint").read_text()


@pytest.mark.skipif(
    not OLD_PYTHON,
    reason="needs a venv with the oldest PyFlink: run by tests/versions/run.py (CI, "
    "make test-versions), which sets FLINK_AGENTS_UPGRADE_FROM",
)
def test_a_savepoint_of_the_oldest_version_resumes_on_the_newest(tmp_path: Path) -> None:
    assert OLD_PYTHON is not None
    old, new = _version(OLD_PYTHON), _version(sys.executable)
    assert old.startswith("1.20.") and old != new, (old, new)

    first = [{"key": f"k{i % KEYS}", "i": i, "hold": 0} for i in range(2 * KEYS)]
    _send(tmp_path, "a.jsonl", first)
    job = _Job(OLD_PYTHON, tmp_path, "old", "--parallelism", "1")
    job.wait("the first outputs", lambda: len(_outputs(tmp_path)) == 2 * KEYS)
    # One input per key whose run holds 5 s after its model call: in flight at the stop.
    held = [{"key": f"k{i % KEYS}", "i": i, "hold": 5} for i in range(2 * KEYS, 3 * KEYS)]
    _send(tmp_path, "b.jsonl", held)
    job.wait("the held runs' calls", lambda: len(_calls(tmp_path)) == 3 * KEYS)
    savepoint = job.stop_with_savepoint()
    assert len(_outputs(tmp_path)) == 2 * KEYS, "the held runs were not in flight at the stop"

    resumed = _Job(
        sys.executable, tmp_path, "new", "--parallelism", "2", "--from-savepoint", savepoint
    )
    last = [{"key": f"k{i % KEYS}", "i": i, "hold": 0} for i in range(3 * KEYS, 4 * KEYS)]
    _send(tmp_path, "c.jsonl", last)
    resumed.wait("every output", lambda: len(_outputs(tmp_path)) == 4 * KEYS, timeout=180)
    resumed.stop_with_savepoint()

    outputs = _outputs(tmp_path)
    assert sorted(o["i"] for o in outputs) == list(range(4 * KEYS))
    for k in range(KEYS):
        mine = sorted((o for o in outputs if o["key"] == f"k{k}"), key=lambda o: o["count"])
        inputs = [k, k + KEYS, k + 2 * KEYS, k + 3 * KEYS]
        # Memory carried over the upgrade: the key's n-th input saw count n and every
        # earlier input, the held one (pending at the stop on 1.20) included.
        assert [o["count"] for o in mine] == [1, 2, 3, 4], mine
        assert mine[-1]["seen"] == inputs, mine
    calls = Counter(_calls(tmp_path))
    print(f"\n[{MODE}] upgrade {old} -> {new}: {sum(calls.values())} model calls")
    # The held runs' calls were answered from their durable records after the restore.
    assert sorted(i for i, n in calls.items() if n > 1) == []
    assert set(calls) == set(range(4 * KEYS))
