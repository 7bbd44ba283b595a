"""CPU per run of each thread of a thread-mode agent job (the MiniCluster's JVM, Python in it).

Runs ``benchmarks/flink_host.py``'s agent job with the metrics on (``agent``), with the event
log at STANDARD and the default writer (``eventlog``: the writer process when 2 or more CPUs
are usable) and with the thread writer (``eventlog-thread``), alternating rounds, and reads
``/proc/<jvm>/task/<tid>/stat`` over the middle of each job's processing span (sampled through
the job; ``--margin`` of the span left out at each end): CPU time per run by
thread, and the operator thread's figure (the one that runs the agent's Python) per
configuration, as medians. Less disturbed by other work on the machine than throughput, and
it says which thread a cost lands on.

Threads are told apart by id: a Python thread started from a JVM thread inherits that
thread's name (a writer thread started by the operator is also called ``flink-agents ->...``).

Usage::

    .venv/bin/python -m benchmarks.thread_cpu [--records 60000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyflink.java_gateway import get_gateway

from benchmarks.flink_host import _run

#: Seconds between two samples of the threads' CPU ticks.
_SAMPLE = 0.25
#: Shortest window measured (seconds): ticks are 10 ms.
_MIN_WINDOW = 2.0


def _ticks(pid: int) -> dict[str, tuple[str, int]]:
    """``tid -> (thread name, user + system clock ticks)`` of a process's threads now."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm", encoding="utf-8") as fh:
                name = fh.read().strip()
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="ascii") as fh:
                fields = fh.read().rpartition(")")[2].split()
        except OSError:  # the thread ended
            continue
        out[tid] = (name, int(fields[11]) + int(fields[12]))
    return out


def _measure(config: dict[str, Any], records: int, margin: float) -> dict[str, Any]:
    """One job of ``records``; thread CPU over the part of its processing span that leaves
    out ``margin`` of the span at each end (the pipeline's start and drain).

    The threads' ticks are sampled every :data:`_SAMPLE` seconds while the job runs; the
    window is the samples inside the span, known once the job ended (a window fixed in
    advance misses the span when the job is faster or slower than guessed)."""
    pid = get_gateway().jvm.java.lang.ProcessHandle.current().pid()
    result: dict[str, Any] = {}
    job = threading.Thread(
        target=lambda: result.update(_run("thread", records, 100, "agent", config=config))
    )
    samples: list[tuple[float, dict[str, tuple[str, int]]]] = []
    job.start()
    while job.is_alive():
        samples.append((time.time(), _ticks(pid)))
        job.join(_SAMPLE)
    if "rate" not in result:
        raise RuntimeError("the job failed")
    first, last = result["span"]
    lo, hi = first + margin * (last - first), last - margin * (last - first)
    inside = [(t, ticks) for t, ticks in samples if lo <= t <= hi]
    if len(inside) < 2 or inside[-1][0] - inside[0][0] < _MIN_WINDOW:
        raise RuntimeError(
            f"the job processed for {last - first:.2f} s only: too short for a window of "
            f"{_MIN_WINDOW} s inside it; pass more --records"
        )
    (started, before), (ended, after) = inside[0], inside[-1]
    runs = result["rate"] * (ended - started)
    per_run = 1e6 / os.sysconf("SC_CLK_TCK") / runs
    threads = Counter(
        {
            f"{name} [{tid}]": (ticks - before[tid][1]) * per_run
            for tid, (name, ticks) in after.items()
            if tid in before
        }
    )
    return {
        "rate": result["rate"],
        "threads": threads,
        "total": sum(threads.values()),
        "window": ended - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=60_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--margin",
        type=float,
        default=0.2,
        help="share of the processing span left out at each end (start-up, drain)",
    )
    args = parser.parse_args()
    log_dir = tempfile.mkdtemp(prefix="thread-cpu-log-")
    configs: dict[str, dict[str, Any]] = {
        "agent": {},
        "eventlog": {"event-log.enabled": True, "baseLogDir": log_dir},
        "eventlog-thread": {
            "event-log.enabled": True,
            "baseLogDir": log_dir,
            "event-log.writer": "thread",
        },
    }
    _run("thread", 5_000, 100, "agent")  # warm-up: the JVM's first job runs slower
    operator: dict[str, list[float]] = {name: [] for name in configs}
    totals: dict[str, list[float]] = {name: [] for name in configs}
    for _ in range(args.rounds):
        for name, config in configs.items():
            measured = _measure(config, args.records, args.margin)
            top = measured["threads"].most_common(4)
            operator[name].append(top[0][1])  # the busiest thread: the operator's
            totals[name].append(measured["total"])
            print(
                f"{name:<16} {measured['rate']:6.0f} runs/s, us CPU per run: "
                + ", ".join(f"{thread} {value:.1f}" for thread, value in top)
                + f", JVM total {measured['total']:.1f} (over {measured['window']:.1f} s)",
                flush=True,
            )
    print("median us CPU per run, operator thread / whole JVM:")
    for name in configs:
        print(
            f"  {name:<16} {statistics.median(operator[name]):6.1f} / "
            f"{statistics.median(totals[name]):6.1f}"
        )


if __name__ == "__main__":
    main()
