"""A TaskManager lost mid-job: recovery time and repeated model calls (issue 24, item 6).

Runs the scenario of ``tests/deploy/lost_taskmanager.py`` ``--repeat`` times: a local
standalone cluster of 2 TaskManagers x 2 slots, a job at parallelism 4 (2,000 keys, two
inputs each, a 200 ms model, 8 calls in flight per subtask, unaligned checkpoints every 300 ms);
one TaskManager is killed with ``kill -9`` once a quarter of the calls were made and a new
one started. Reports per run: the outputs (exactly once?), the model calls made again, the
recovery time (kill -> every task RUNNING again) and the job's time after the kill.

Next to the repeated calls, their bound (``tests/deploy/lost_taskmanager.py`` says why):
the calls that completed between the restored checkpoint's trigger and the failure Flink
noticed plus one model latency (the failed attempt's last calls), and that window's parts:
the kill's distance from the restored checkpoint (at most the checkpoint interval plus a
checkpoint's duration, under load more) and the time Flink took to notice the loss; the
rate bound is the largest call rate (parallelism x max-in-flight / latency) times the window.

``--jobmanager``: the JobManager is killed instead. Standalone mode without high
availability keeps no job across a JobManager restart: a new JobManager is started, the
TaskManagers register with it, and the job is submitted again from its latest checkpoint.

Usage::

    .venv/bin/python -m benchmarks.lost_taskmanager [--repeat 3] [--kill-at 0.25]
        [--jobmanager]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from tests.deploy import lost_taskmanager as scenario


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kill-at", type=float, default=0.25, help="share of calls made")
    parser.add_argument(
        "--jobmanager",
        action="store_true",
        help="kill the JobManager instead; start a new one, resubmit from the latest checkpoint",
    )
    args = parser.parse_args()
    total = scenario.KEYS * scenario.PASSES
    if args.jobmanager:
        _jobmanager(args, total)
        return
    print(
        f"{scenario.KEYS} keys x {scenario.PASSES} inputs, {scenario.LATENCY} s model, "
        f"{scenario.MAX_IN_FLIGHT} in flight per subtask, checkpoint every "
        f"{scenario.CHECKPOINT_MS} ms; load average {os.getloadavg()[0]:.1f} at start",
        flush=True,
    )
    repeats, recoveries, bounds = [], [], []
    for n in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="lost-tm-") as tmp:
            result = scenario.run_scenario(Path(tmp), kill_at=args.kill_at)
        ids = sorted(o["i"] for o in result["outputs"])
        once = ids == list(range(total))
        repeated = result["calls"] - total
        repeats.append(100 * repeated / total)
        recoveries.append(result["recovery_s"])
        if result.get("repeated") is not None:
            bounds.append(100 * result["window_calls"] / total)
            bound = (
                f"; bound: {result['window_calls']} calls ({bounds[-1]:.1f} %) completed in "
                f"the {result['window_s']:.2f} s from the restored checkpoint's trigger to the "
                f"failure noticed + {scenario.LATENCY} s (kill "
                f"{result['kill_after_checkpoint_s']:.2f} s after that trigger, noticed "
                f"{result['noticed_after_kill_s']:.2f} s after "
                f"the kill; rate bound {result['rate_bound']}); repeated inputs whose first "
                f"call completed before the trigger: {result['first_before']}"
            )
        else:
            bound = "; bound: unknown (restored checkpoint or failure time not found)"
        print(
            f"run {n + 1}: {result['state']}, outputs exactly once: {once} "
            f"restored from a checkpoint: {result['restored'] >= 1}, "
            f"({len(ids)} of {total}), restarts {result['restarts']}, killed after "
            f"{result['calls_at_kill']} calls, repeated calls {repeated} "
            f"({repeats[-1]:.1f} %), recovery {result['recovery_s']:.1f} s, "
            f"job after the kill {result['after_kill_s']:.1f} s, whole scenario "
            f"{result['scenario_s']:.0f} s (cluster start {result['cluster_start_s']:.0f} s)"
            f"{bound}",
            flush=True,
        )
    bounded = f" (bound {statistics.median(bounds):.1f} %)" if bounds else ""
    print(
        f"median: repeated calls {statistics.median(repeats):.1f} %{bounded}, recovery "
        f"{statistics.median(recoveries):.1f} s; load average {os.getloadavg()[0]:.1f} at end"
    )


def _jobmanager(args: argparse.Namespace, total: int) -> None:
    for n in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="lost-jm-") as tmp:
            result = scenario.run_jobmanager_scenario(Path(tmp), kill_at=args.kill_at)
        ids = sorted(o["i"] for o in result["outputs"])
        counts: dict[str, list[int]] = {}
        for o in result["outputs"]:
            counts.setdefault(o["key"], []).append(o["count"])
        memory = all(sorted(c) == list(range(1, scenario.PASSES + 1)) for c in counts.values())
        repeated = result["calls"] - total
        print(
            f"JobManager run {n + 1}: {result['state']}, outputs exactly once: "
            f"{ids == list(range(total))} ({len(ids)} of {total}), memory intact: {memory}, "
            f"killed after {result['calls_at_kill']} calls, repeated calls {repeated} "
            f"({100 * repeated / total:.1f} %), new JobManager with the TaskManagers back "
            f"{result['jobmanager_back_s']:.1f} s after the kill, resubmitted from "
            f"{result['restored_from']}, done {result['after_kill_s']:.0f} s after the kill",
            flush=True,
        )


if __name__ == "__main__":
    main()
