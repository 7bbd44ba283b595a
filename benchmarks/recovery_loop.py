"""The failover scenario, N times in a row: how often does a restart get its slot back?

Runs ``tests/flink/test_recovery.py`` (a failure in the middle of a checkpointed job with
exactly the slots the job needs, restarted by Flink's fixed-delay strategy; exactly-once
outputs, memory and durable calls checked) ``--runs`` times, each in a fresh pytest process
(a fresh MiniCluster), and reports the passes. A restart that finds no slot
(``NoResourceAvailableException``) fails its run. The Flink log of a failed run (PyFlink
writes one per JVM, overwritten by the next run) is kept in ``--logs``.

Usage::

    .venv/bin/python benchmarks/recovery_loop.py [--runs 20] [--mode thread|process]
        [--backend hashmap|rocksdb|both] [-k EXPR] [--logs DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTEST = [
    sys.executable,
    "-m",
    "pytest",
    "tests/flink/test_recovery.py",
    "-q",
    "-p",
    "no:cacheprovider",
]


def _flink_logs() -> list[Path]:
    """PyFlink's log files of the MiniCluster JVM (in the installed package's ``log``)."""
    spec = importlib.util.find_spec("pyflink")
    if spec is None or not spec.submodule_search_locations:
        return []
    log_dir = Path(next(iter(spec.submodule_search_locations))) / "log"
    return sorted(log_dir.glob("flink-*.log*"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--mode", choices=["thread", "process"], default="thread")
    parser.add_argument(
        "-k",
        default="failure_and_restart",
        help="which recovery test (pytest -k; default: the failure-and-restart scenario)",
    )
    parser.add_argument(
        "--backend", choices=["hashmap", "rocksdb", "both"], default="hashmap", help="state backend"
    )
    parser.add_argument(
        "--logs", default="/tmp/recovery-loop-logs", help="where to keep failed runs' Flink logs"
    )
    args = parser.parse_args()
    if args.backend != "both":
        args.k = f"({args.k}) and {args.backend}"
    env = {**os.environ, "FLINK_AGENTS_TEST_MODE": args.mode}
    passes, seconds = 0, []
    for run in range(1, args.runs + 1):
        started = time.monotonic()
        proc = subprocess.run(
            [*PYTEST, "-k", args.k],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        took = time.monotonic() - started
        seconds.append(took)
        ok = proc.returncode == 0
        passes += ok
        why = ""
        if not ok:
            lines = (proc.stdout + proc.stderr).splitlines()
            slot = any("NoResourceAvailable" in line for line in lines)
            why = " (no slot for the restart)" if slot else f": {lines[-1] if lines else ''}"
            kept = Path(args.logs) / f"{args.mode}-run{run}"
            kept.mkdir(parents=True, exist_ok=True)
            (kept / "pytest.out").write_text(proc.stdout + proc.stderr, encoding="utf-8")
            for log in _flink_logs():
                shutil.copy(log, kept / log.name)
            why += f" (logs in {kept})"
        print(f"run {run:2d}: {'pass' if ok else 'FAIL'} in {took:.0f}s{why}", flush=True)
    print(
        f"{args.mode} mode: {passes}/{args.runs} passed "
        f"(median {sorted(seconds)[len(seconds) // 2]:.0f}s a run)"
    )
    return 0 if passes == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
