"""A TaskManager lost mid-job: recovery time and repeated model calls (issue 24, item 6).

Runs the scenario of ``tests/deploy/lost_taskmanager.py`` ``--repeat`` times: a local
standalone cluster of 2 TaskManagers x 2 slots, a job at parallelism 4 (2,000 keys, two
inputs each, a 200 ms model, 8 calls in flight per subtask, unaligned checkpoints every 300 ms);
one TaskManager is killed with ``kill -9`` once a quarter of the calls were made and a new
one started. Reports per run: the outputs (exactly once?), the model calls made again, the
recovery time (kill -> every task RUNNING again) and its parts (the job RUNNING again, the
new TaskManager registered), and the job's time after the kill.

Next to the repeated calls, their bound (``tests/deploy/lost_taskmanager.py`` says why):
the calls that completed between the restored checkpoint's trigger and the end of the failed
attempt's agent tasks, and that window's parts: the kill's distance from the restored
checkpoint (at most the checkpoint interval plus a checkpoint's duration, under load more),
the time Flink took to notice the loss (heartbeat.interval x heartbeat.rpc-failure-threshold
plus the JVMs' reaction) and the time the survivor's tasks took to stop; the rate
bound is the largest call rate (parallelism x max-in-flight / latency) times the window.

``--heartbeat 1000x2 --heartbeat 500x1`` alternates heartbeat settings run by run.

``--source-rate 0 --source-rate 0.9`` alternates the source: ``0`` (the default) sends as fast as
the agent takes the inputs (a backlog of thousands of records waits in the network buffers
in front of it), a fraction of the agent's capacity (160 calls/s) paces a streaming source
at that share, still sending when the TaskManager dies. The two differ in how the survivor
notices the loss: a saturated agent reads its input slowly, so the broken data connection
to the dead TaskManager surfaces only once the records buffered ahead of it are processed,
and the heartbeats usually notice first; an agent that keeps up reads it at once.

``--jobmanager``: the JobManager is killed instead. Standalone mode without high
availability keeps no job across a JobManager restart: a new JobManager is started, the
TaskManagers register with it, and the job is submitted again from its latest checkpoint.

Usage::

    .venv/bin/python -m benchmarks.lost_taskmanager [--repeat 3] [--kill-at 0.25]
        [--heartbeat INTERVALxTHRESHOLD ...] [--source-rate SHARE ...] [--jobmanager]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from tests.deploy import lost_taskmanager as scenario


def _heartbeat(text: str) -> dict[str, int]:
    """``INTERVALxTHRESHOLD`` (ms, failed RPCs), e.g. ``500x1``."""
    interval, _, threshold = text.partition("x")
    return {"interval": int(interval), "threshold": int(threshold or 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kill-at", type=float, default=0.25, help="share of calls made")
    parser.add_argument(
        "--heartbeat",
        action="append",
        type=_heartbeat,
        help="INTERVALxTHRESHOLD: heartbeat.interval (ms) and heartbeat.rpc-failure-threshold;"
        " given more than once, the settings alternate run by run (default: the scenario's "
        f"{scenario.HEARTBEAT['interval']}x{scenario.HEARTBEAT['threshold']})",
    )
    parser.add_argument(
        "--source-rate",
        action="append",
        type=float,
        help="the source's rate as a share of the agent's capacity (0: as fast as it takes "
        "the inputs, the default); given more than once, the rates alternate run by run",
    )
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
    beats = args.heartbeat or [
        {"interval": scenario.HEARTBEAT["interval"], "threshold": scenario.HEARTBEAT["threshold"]}
    ]
    print(
        f"{scenario.KEYS} keys x {scenario.PASSES} inputs, {scenario.LATENCY} s model, "
        f"{scenario.MAX_IN_FLIGHT} in flight per subtask, checkpoint every "
        f"{scenario.CHECKPOINT_MS} ms; load average {os.getloadavg()[0]:.1f} at start",
        flush=True,
    )
    figures: dict[str, dict[str, list[float]]] = {}
    shares = args.source_rate or [0.0]
    for n in range(args.repeat):
        for beat in beats:
            for share in shares:
                name = f"heartbeat {beat['interval']} ms x {beat['threshold']}, " + (
                    f"source at {share:.0%} of capacity ({share * scenario.CAPACITY:.0f}/s)"
                    if share
                    else "source as fast as the agent takes it"
                )
                mine = figures.setdefault(name, {})
                with tempfile.TemporaryDirectory(prefix="lost-tm-") as tmp:
                    result = scenario.run_scenario(
                        Path(tmp),
                        kill_at=args.kill_at,
                        heartbeat=beat,
                        source_rate=share * scenario.CAPACITY or None,
                    )
                _report(n, name, result, total, mine)
    for name, mine in figures.items():
        medians = {k: statistics.median(v) for k, v in mine.items()}
        parts = ", ".join(f"{k} {v:.2f}" for k, v in medians.items())
        print(f"median, {name}: {parts}")
    print(f"load average {os.getloadavg()[0]:.1f} at end")


def _report(n: int, name: str, result: dict, total: int, mine: dict[str, list[float]]) -> None:
    ids = sorted(o["i"] for o in result["outputs"])
    once = ids == list(range(total))
    repeated = result["calls"] - total

    def keep(key: str, value: float) -> None:
        mine.setdefault(key, []).append(value)

    keep("repeated %", 100 * repeated / total)
    keep("recovery s", result["recovery_s"])
    if result.get("repeated") is not None:
        keep("bound %", 100 * result["window_calls"] / total)
        keep("kill after trigger s", result["kill_after_checkpoint_s"])
        keep("noticed after kill s", result["noticed_after_kill_s"])
        keep("stopped after noticed s", result["stopped_after_noticed_s"])
        bound = (
            f"; bound: {result['window_calls']} calls ({100 * result['window_calls'] / total:.1f}"
            f" %) completed in the {result['window_s']:.2f} s from the restored checkpoint's "
            f"trigger to the end of the failed attempt's agent tasks (kill "
            f"{result['kill_after_checkpoint_s']:.2f} s after that trigger, noticed "
            f"{result['noticed_after_kill_s']:.2f} s after the kill by the "
            f"{result['noticed_by']}, tasks stopped "
            f"{result['stopped_after_noticed_s']:.2f} s after that; rate bound "
            f"{result['rate_bound']}); repeated inputs whose first call completed before the "
            f"trigger: {result['first_before']}, after the tasks' end: {result['first_after']}"
            + (
                f" (at most {result['first_after_latest_s']:.2f} s after it; pids of their "
                f"calls: {result['first_after_pids']}, the killed TaskManager's "
                f"{result['killed_pid']})"
                if result["first_after"]
                else ""
            )
        )
    else:
        bound = "; bound: unknown (restored checkpoint or failure time not found)"
    replaced = result["replacement_registered_s"]
    print(
        f"run {n + 1}, {name}: {result['state']}, outputs exactly once: {once} "
        f"({len(ids)} of {total}), restored from a checkpoint: {result['restored'] >= 1}, "
        f"restarts {result['restarts']}, killed after {result['calls_at_kill']} calls, "
        f"repeated calls {repeated} ({100 * repeated / total:.1f} %), recovery "
        f"{result['recovery_s']:.1f} s (job RUNNING again "
        f"{result['restarted_after_kill_s']:.1f} s after the kill, the new TaskManager "
        f"registered {'?' if replaced is None else f'{replaced:.1f}'} s after it), job after "
        f"the kill {result['after_kill_s']:.1f} s, whole scenario {result['scenario_s']:.0f} s "
        f"(cluster start {result['cluster_start_s']:.0f} s){bound}",
        flush=True,
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
