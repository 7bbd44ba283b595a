"""Checkpoint durations of a saturated agent: aligned against unaligned checkpoints.

A bounded job on the local MiniCluster (parallelism 1) puts ``--inputs`` records (one key
each) in front of an agent whose model takes ``--latency`` seconds, with ``--max-in-flight``
places: the operator's in-flight gate backpressures, and the records queue in the network
buffers in front of it. Checkpoints are triggered every ``--interval-ms``. An aligned
barrier waits behind the queued records; an unaligned one overtakes them (they are stored in
the checkpoint). Each checkpoint's end-to-end duration is read from the MiniCluster's REST
API (``/jobs/:id/checkpoints``) while the job runs.

Usage::

    .venv/bin/python benchmarks/checkpoints.py [--inputs 3000] [--latency 0.5]
        [--max-in-flight 100] [--interval-ms 500] [--mode thread|process]
        [--only aligned|unaligned] [--order unaligned,aligned] [--plot PATH]

``--plot PATH`` writes a PNG of every checkpoint's duration over the job's time, aligned
against unaligned (``benchmarks/plots.py``; needs matplotlib, the dev extra).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyflink.common import Configuration, WatermarkStrategy
from pyflink.common.typeinfo import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

from benchmarks import plots
from benchmarks.flink_host import _discard
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.errors import ClusterError
from flink_agents.ops import jobs
from flink_agents.testing.ports import free_port
from tests.flink.agents import chat_agent


def _record(n: int) -> dict[str, Any]:
    return {"key": f"k{n}", "i": int(n)}


def _run(args: argparse.Namespace, unaligned: bool) -> dict[str, Any]:
    port = free_port()
    conf = Configuration()
    conf.set_string("rest.port", str(port))
    conf.set_string("web.checkpoints.history", "1000")
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(1)
    env.enable_checkpointing(args.interval_ms)
    checkpoints = env.get_checkpoint_config()
    checkpoints.set_max_concurrent_checkpoints(1)
    if unaligned:
        checkpoints.enable_unaligned_checkpoints()
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env, **{"python.execution-mode": args.mode, "max-in-flight": args.max_in_flight}
    )
    numbers = env.from_source(
        NumberSequenceSource(0, args.inputs - 1), WatermarkStrategy.no_watermarks(), "numbers"
    )
    records = numbers.map(_record, output_type=Types.PICKLED_BYTE_ARRAY())
    out = (
        agents_env.from_datastream(records, key_selector=lambda r: r["key"])
        .apply(chat_agent(latency=args.latency))
        .to_datastream()
    )
    out.add_sink(_discard())
    agents_env.configure_workers()
    started, started_epoch_ms = time.monotonic(), time.time() * 1000
    client = env.execute_async("checkpoints under backpressure")
    job_id = str(client.get_job_id())
    jobmanager = f"localhost:{port}"
    durations: dict[int, int] = {}
    triggered: dict[int, float] = {}  # seconds since the job was submitted
    in_progress: set[int] = set()  # last seen in progress
    counts: dict[str, int] = {}
    unfinished: dict[int, tuple[int, str]] = {}
    state = "INITIALIZING"
    errors = 0
    while True:
        try:
            stats = jobs.checkpoint_stats(jobmanager, job_id)
            for cp in stats.get("history", []):
                if cp.get("trigger_timestamp"):
                    triggered[int(cp["id"])] = (
                        int(cp["trigger_timestamp"]) - started_epoch_ms
                    ) / 1000
                if cp.get("status") == "COMPLETED":
                    durations[int(cp["id"])] = int(cp["end_to_end_duration"])
                elif cp.get("status") in ("FAILED", "IN_PROGRESS"):
                    if cp["status"] == "IN_PROGRESS":
                        in_progress.add(int(cp["id"]))
                    else:
                        in_progress.discard(int(cp["id"]))
                    # A checkpoint still waiting behind the backlog when the input ends
                    # fails (its tasks finished): how long it had been waiting counts too.
                    unfinished[int(cp["id"])] = (
                        int(cp.get("end_to_end_duration") or 0),
                        str(cp.get("failure_message") or cp["status"])[:120],
                    )
            counts = stats.get("counts", counts)
            state = jobs.job_state(jobmanager, job_id)
            errors = 0
        except ClusterError:
            # A slow answer on a busy machine, or the MiniCluster shut down with the job.
            errors += 1
            state = "GONE" if errors >= 5 else state
        if state in jobs.TERMINAL_STATES or state == "GONE":
            break
        time.sleep(0.5)
    client.get_job_execution_result().result()
    took = time.monotonic() - started
    values = sorted(durations.values())
    return {
        "checkpoints": len(values),
        "failed": counts.get("failed", 0),
        "unfinished": sorted(
            (v for k, v in unfinished.items() if k not in durations), reverse=True
        )[:3],
        "max_ms": values[-1] if values else None,
        "median_ms": statistics.median(values) if values else None,
        "job_s": round(took, 1),
        # For the figure: (seconds since submission, duration ms) of each checkpoint.
        "completed": [(triggered.get(k, 0.0), v) for k, v in sorted(durations.items())],
        # Never completed: how long each had waited (one still in progress at the last
        # look: until the job ended, at least).
        "waited": [
            (triggered[k], max(v[0], (took - triggered[k]) * 1000) if k in in_progress else v[0])
            for k, v in sorted(unfinished.items())
            if k not in durations and k in triggered
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--inputs", type=int, default=3000)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--max-in-flight", type=int, default=100)
    parser.add_argument("--interval-ms", type=int, default=500)
    parser.add_argument("--mode", choices=["thread", "process"], default="thread")
    parser.add_argument("--only", choices=["aligned", "unaligned"])
    parser.add_argument(
        "--order", default="aligned,unaligned", help="which runs first (the first pays warm-up)"
    )
    parser.add_argument("--plot", metavar="PATH", help="write a PNG of the durations here")
    args = parser.parse_args()
    if args.plot:
        plots.require()
    load_before = plots.load_average()
    series: dict[str, dict[str, Any]] = {}
    print(
        f"{args.inputs} inputs, {args.latency} s calls, {args.max_in_flight} in flight, "
        f"checkpoint every {args.interval_ms} ms, {args.mode} mode"
    )
    for kind in args.order.split(","):
        if args.only and kind != args.only:
            continue
        result = _run(args, unaligned=kind == "unaligned")
        print(
            f"{kind:9s}: {result['checkpoints']} checkpoints completed "
            f"({result['failed']} failed), longest {result['max_ms']} ms, "
            f"median {result['median_ms']} ms (job {result['job_s']} s)",
            flush=True,
        )
        for waited, why in result["unfinished"]:
            print(f"           not completed after {waited} ms: {why}")
        series[kind] = {"completed": result["completed"], "unfinished": result["waited"]}
    if args.plot:
        command = (
            f"benchmarks/checkpoints.py --inputs {args.inputs} --latency {args.latency} "
            f"--max-in-flight {args.max_in_flight} --interval-ms {args.interval_ms} "
            f"({args.mode} mode)"
        )
        plots.checkpoints(series, args.plot, plots.machine_note(command, load_before))


if __name__ == "__main__":
    main()
