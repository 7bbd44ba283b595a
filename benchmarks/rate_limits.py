"""Rate governance on a MiniCluster: an agent job against a provider quota.

A :class:`~flink_agents.testing.servers.QuotaServer` on 127.0.0.1 speaks the OpenAI protocol
and enforces ``--rpm`` requests and ``--tpm`` tokens per minute (token buckets of one
second, 429 with ``retry-after`` / ``retry-after-ms`` beyond, replies after 50-200 ms). A
bounded job sends ``--keys`` keys (one chat request each) through an agent with
``max-in-flight`` 256; the source is much faster than the quota, so the agent backpressures
and calls wait. Modes, run alternately (``--repeat`` rounds, medians reported):

- ``declared``: the connection declares the quota (``requests_per_minute``,
  ``tokens_per_minute``): paced, adaptive on;
- ``adaptive``: nothing declared: the connection learns from the 429s;
- ``off``: nothing declared and ``adaptive=False``: what earlier versions did (retries with
  backoff, ``max_retries`` 3).

Each run reports the server's counts (answers, 429s and their share of all requests), the
throughput over the calls' span (first request to last answer) against the quota, the
most of the server's one-second request bucket the accepted requests used at once (in
seconds: how near they came to a 429; 1 s is the limit), calls that failed, and the
checkpoints taken every ``--interval-ms`` while calls wait: completed, longest and median
end-to-end duration (from the MiniCluster's REST API). ``--checkpoints`` picks ``aligned``,
``unaligned`` and/or ``timeout`` (each mode runs once per kind): aligned checkpoints use
buffer debloating (``taskmanager.network.memory.buffer-debloat.enabled``,
``--debloat-target off``: without), which keeps the records queued in front of a
backpressured operator to about ``--debloat-target`` of its throughput; ``timeout`` starts
each checkpoint aligned and lets it turn unaligned after ``--aligned-timeout``
(``execution.checkpointing.aligned-checkpoint-timeout``). ``--flink-conf KEY=VALUE``
(repeatable) sets any other Flink option, e.g. the network buffers. ``--verbose`` also
shows where each checkpoint over 2 s spent its time, per task (from
``/jobs/:id/checkpoints/details``): end to end, start delay (the barrier's way to the
task), alignment, synchronous and asynchronous part; the answers per second by 5 s and the
batches the operator handed to Python by cause (the ``flink-agents.batches.<cause>``
accumulators).

Usage::

    .venv/bin/python benchmarks/rate_limits.py [--keys 2000] [--rpm 3000] [--tpm 120000]
        [--modes declared,adaptive,off] [--checkpoints aligned,unaligned,timeout]
        [--repeat 1] [--aligned-timeout '1 s'] [--flink-conf KEY=VALUE ...]
        [--interval-ms 1000] [--mode thread|process] [--parallelism 1]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyflink.common import Configuration, WatermarkStrategy
from pyflink.common.typeinfo import Types
from pyflink.datastream import MapFunction, RuntimeContext, StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

from benchmarks.flink_host import _discard
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.errors import ClusterError
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)
from flink_agents.ops import jobs
from flink_agents.testing.ports import free_port
from flink_agents.testing.servers import QuotaServer
from tests.integrations.agents import ChatAgent


def _question(n: int) -> str:
    return f"k{int(n)} what is {int(n)} plus one?"


class _Paced(MapFunction):
    """Lets records go at most ``rate`` a second (a source faster than the quota, as a
    stream is, rather than the whole input at once: network buffers then hold about what
    buffer debloating lets them, and aligned barriers wait behind that, not the input)."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate
        self._next = 0.0

    def map(self, value: Any) -> str:
        now = time.monotonic()
        if self._next > now:
            time.sleep(self._next - now)
        self._next = max(now, self._next) + self.interval
        return _question(value)


class _Tally(MapFunction):
    """Appends ``ok`` / the error type of each output to a file (counted by the driver)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._file: Any = None

    def open(self, runtime_context: RuntimeContext) -> None:
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def map(self, value: Any) -> str:
        line = "ok" if "content" in value else f"{value.get('type')}: {value.get('error')}"
        self._file.write(line + "\n")
        self._file.flush()
        return line

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


class _ServerProcess:
    """The quota server in a process of its own: its clock and threads share no GIL with
    this driver (py4j, the REST polling), whose pauses would bunch arrivals up and make the
    server see bursts the clients did not send."""

    def __init__(self, **kwargs: Any) -> None:
        context = multiprocessing.get_context("spawn")
        self._pipe, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, kwargs), daemon=True)

    def __enter__(self) -> _ServerProcess:
        self._process.start()
        self.base_url = self._pipe.recv()
        return self

    def counts(self) -> tuple[int, int, list[float]]:
        """Answers, 429s and the answers' arrival times so far."""
        self._pipe.send("counts")
        accepted, refused, times = self._pipe.recv()
        return accepted, refused, sorted(times)

    def __exit__(self, *exc: Any) -> None:
        self._pipe.send("stop")
        self._process.join(10)
        if self._process.is_alive():
            self._process.kill()


def _serve(pipe: Any, kwargs: dict[str, Any]) -> None:
    with QuotaServer(**kwargs) as server:
        pipe.send(server.base_url)
        while True:
            command = pipe.recv()
            if command == "stop":
                return
            pipe.send((server.accepted, server.refused, list(server.accepted_at)))


def _agent(server: Any, mode: str, args: argparse.Namespace) -> ChatAgent:
    rpm, tpm = args.rpm, args.tpm
    limits: dict[str, Any] = {}
    if mode == "declared":
        limits = {"requests_per_minute": rpm, "tokens_per_minute": tpm}
    elif mode == "off":
        limits = {"adaptive": False}
    agent = ChatAgent()
    agent.add_resource(
        "conn",
        ResourceDescriptor(
            clazz=OpenAIChatModelConnection,
            api_base_url=server.base_url,
            api_key="sk-bench",
            timeout=30.0,
            # Calls in flight per slot: enough that the quota binds, not this cap, also when
            # a loaded machine makes every call slower.
            max_concurrency=args.max_concurrency,
            **limits,
        ),
    )
    agent.add_resource(
        "model", ResourceDescriptor(clazz=OpenAIChatModelSetup, connection="conn", model="m")
    )
    return agent


def _run(args: argparse.Namespace, mode: str, checkpoints: str) -> dict[str, Any]:
    port = free_port()
    conf = Configuration()
    conf.set_string("rest.port", str(port))
    conf.set_string("web.checkpoints.history", "1000")
    if checkpoints == "aligned" and args.debloat_target != "off":
        conf.set_string("taskmanager.network.memory.buffer-debloat.enabled", "true")
        conf.set_string("taskmanager.network.memory.buffer-debloat.target", args.debloat_target)
        if args.segment_size:
            # Smaller network buffers from the start: what queues in front of the agent
            # before debloating has measured the throughput.
            conf.set_string("taskmanager.memory.segment-size", args.segment_size)
    if checkpoints == "timeout":
        conf.set_string("execution.checkpointing.aligned-checkpoint-timeout", args.aligned_timeout)
    for option in args.flink_conf:
        key, _, value = option.partition("=")
        conf.set_string(key.strip(), value.strip())
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(args.parallelism)
    env.enable_checkpointing(args.interval_ms)
    config = env.get_checkpoint_config()
    config.set_max_concurrent_checkpoints(1)
    if checkpoints in ("unaligned", "timeout"):
        config.enable_unaligned_checkpoints()
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env,
        **{
            "python.execution-mode": args.mode,
            "max-in-flight": 256,
            "batch.size": args.batch_size,
            "error-handling-strategy": "ignore",
        },
    )
    handle, tally = tempfile.mkstemp(prefix="rate-bench-", suffix=".txt")
    os.close(handle)
    with _ServerProcess(
        requests_per_minute=args.rpm,
        tokens_per_minute=args.tpm,
        latency=(0.05, 0.2),
        retry_after=args.retry_after,
    ) as server:
        numbers = env.from_source(
            NumberSequenceSource(0, args.keys - 1), WatermarkStrategy.no_watermarks(), "keys"
        )
        questions = numbers.map(
            _Paced(args.source_factor * args.rpm / 60.0), output_type=Types.STRING()
        )
        out = (
            agents_env.from_datastream(questions, key_selector=lambda q: q.split()[0])
            .apply(_agent(server, mode, args))
            .to_datastream()
        )
        out.map(_Tally(tally), output_type=Types.STRING()).add_sink(_discard())
        agents_env.configure_workers()
        started = time.monotonic()
        client = env.execute_async(f"rate limits: {mode}, {checkpoints} checkpoints")
        durations = _watch(f"localhost:{port}", str(client.get_job_id()), args.verbose)
        outcome = client.get_job_execution_result().result()
        job_s = time.monotonic() - started
        accepted, refused, times = server.counts()
    with open(tally, encoding="utf-8") as fh:
        outcomes = [line.strip() for line in fh if line.strip()]
    failures = [o for o in outcomes if o != "ok"]
    if failures:
        print("  e.g. " + failures[0][:300], flush=True)
    os.unlink(tally)
    span = (times[-1] - times[0]) if len(times) > 1 else 0.0
    quota = args.rpm / 60.0
    values = sorted(durations)
    if args.verbose:
        print(f"  checkpoints in order (ms): {durations}", flush=True)
        if times:
            per5 = [0] * (int((times[-1] - times[0]) // 5) + 1)
            for t in times:
                per5[int((t - times[0]) // 5)] += 1
            print(f"  answers per second, by 5 s: {[round(n / 5, 1) for n in per5]}")
        batches = {
            name.rsplit(".", 1)[-1]: value
            for name, value in outcome.get_all_accumulator_results().items()
            if name.startswith("flink-agents.batches.") and value
        }
        print(f"  batches handed to Python, by cause: {batches}", flush=True)
    return {
        "answers": accepted,
        "refused": refused,
        "refused_pct": 100.0 * refused / max(1, accepted + refused),
        "throughput_pct": 100.0 * (accepted - 1) / span / quota if span else 0.0,
        "failed": sum(1 for o in outcomes if o != "ok"),
        "outputs": len(outcomes),
        "checkpoints": len(values),
        "max_ms": values[-1] if values else None,
        "median_ms": statistics.median(values) if values else None,
        "job_s": job_s,
        "bucket_s": _bucket_peak(times, quota),
    }


def _watch(jobmanager: str, job_id: str, verbose: bool = False) -> list[int]:
    """End-to-end durations (ms) of the checkpoints that completed while the job ran, in
    the order they were triggered; ``verbose``: prints where each one over 2 s spent it.

    The last checkpoint of a bounded job waits for the end of its input, every call in
    flight included (the finishing source waits for it): it is the job ending rather than
    a checkpoint while calls wait, so one that completed within 6 s of the job's end, or
    triggered after the source finished, is left out (printed with ``verbose``)."""
    durations: dict[int, int] = {}
    triggered: dict[int, int] = {}
    acked: dict[int, int] = {}
    stats: dict[str, Any] = {}
    input_ended = float("inf")  # epoch ms when the source was first seen finished
    errors = 0
    while True:
        try:
            stats = jobs.checkpoint_stats(jobmanager, job_id)
            for cp in stats.get("history", []):
                if cp.get("status") == "COMPLETED":
                    if (
                        verbose
                        and int(cp["id"]) not in durations
                        and cp["end_to_end_duration"] > 2000
                    ):
                        print(f"  slow: {_where(jobmanager, job_id, cp)}", flush=True)
                    durations[int(cp["id"])] = int(cp["end_to_end_duration"])
                    triggered[int(cp["id"])] = int(cp.get("trigger_timestamp") or 0)
                    acked[int(cp["id"])] = int(cp.get("latest_ack_timestamp") or 0)
            job = jobs._call(jobmanager, "GET", f"/jobs/{job_id}")
            state = str(job.get("state"))
            if input_ended == float("inf") and any(
                v["name"].startswith("Source") and v.get("status") == "FINISHED"
                for v in job.get("vertices", [])
            ):
                input_ended = time.time() * 1000
            errors = 0
        except ClusterError:
            errors += 1  # a slow answer on a busy machine, or the job is gone
            state = "GONE" if errors >= 5 else "RUNNING"
        if state in jobs.TERMINAL_STATES or state == "GONE":
            ended = time.time() * 1000
            late = [
                k
                for k in sorted(durations)
                if triggered[k] >= input_ended or (durations[k] > 2000 and acked[k] > ended - 6000)
            ]
            if verbose:
                counts = stats.get("counts", {})
                print(f"  checkpoint counts: {counts}", flush=True)
                for cp in stats.get("history", []):
                    if cp.get("status") == "FAILED":
                        print(f"  failed #{cp['id']}: {str(cp.get('failure_message'))[:160]}")
                if late:
                    print(f"  left out, after the input ended (ms): {[durations[k] for k in late]}")
            return [durations[k] for k in sorted(durations) if k not in late]
        time.sleep(0.5)


def _where(jobmanager: str, job_id: str, cp: dict[str, Any]) -> str:
    """Checkpoint ``cp``'s time per task (subtask 0): end to end / start delay / alignment /
    sync / async in ms, and whether it was unaligned (``u``), as the REST API reports."""
    base = f"/jobs/{job_id}/checkpoints/details/{cp['id']}"
    try:
        names = {
            v["id"]: v["name"] for v in jobs._call(jobmanager, "GET", f"/jobs/{job_id}")["vertices"]
        }
        parts = []
        for vertex in jobs._call(jobmanager, "GET", base)["tasks"]:
            sub = jobs._call(jobmanager, "GET", f"{base}/subtasks/{vertex}")["subtasks"][0]
            parts.append(
                f"{names.get(vertex, vertex)[:28]}: {sub.get('end_to_end_duration')}/"
                f"{sub.get('start_delay')}/{(sub.get('alignment') or {}).get('duration')}/"
                f"{(sub.get('checkpoint') or {}).get('sync')}/"
                f"{(sub.get('checkpoint') or {}).get('async')}"
                + (" u" if sub.get("unaligned_checkpoint") else "")
            )
    except (ClusterError, KeyError, IndexError, TypeError) as exc:
        parts = [f"details unavailable: {exc}"]
    return f"#{cp['id']} {cp['end_to_end_duration']} ms: " + "; ".join(parts)


def _bucket_peak(times: list[float], rate: float, burst: float = 1.0) -> float:
    """Most of the server's request bucket (``burst`` seconds of ``rate``, full at the
    start) that the accepted requests held in use at once, in seconds of the quota: how
    near the paced requests came to a 429 (``burst``: at the limit)."""
    size = rate * burst
    level, last, lowest = size, times[0] if times else 0.0, size
    for t in times:
        level = min(size, level + (t - last) * rate) - 1
        last = t
        lowest = min(lowest, level)
    return (size - lowest) / rate


def _median(results: list[dict[str, Any]], name: str) -> Any:
    values = [r[name] for r in results if r[name] is not None]
    return statistics.median(values) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=2000)
    parser.add_argument("--rpm", type=float, default=3000.0, help="requests per minute")
    parser.add_argument("--tpm", type=float, default=120_000.0, help="tokens per minute")
    parser.add_argument("--modes", default="declared,adaptive,off")
    parser.add_argument("--checkpoints", default="aligned,unaligned")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--interval-ms", type=int, default=1000)
    parser.add_argument("--mode", choices=["thread", "process"], default="thread")
    parser.add_argument("--parallelism", type=int, default=1)
    parser.add_argument("--retry-after", choices=["ms", "seconds"], default="ms")
    parser.add_argument(
        "--source-factor", type=float, default=3.0, help="source rate / quota (> 1: calls wait)"
    )
    parser.add_argument("--debloat-target", default="500 ms")
    parser.add_argument("--segment-size", default="", help="aligned runs: e.g. 4kb")
    parser.add_argument("--aligned-timeout", default="1 s", help="kind timeout: when to turn")
    parser.add_argument(
        "--flink-conf", action="append", default=[], metavar="KEY=VALUE", help="any option"
    )
    parser.add_argument("--verbose", action="store_true", help="every checkpoint's duration")
    parser.add_argument("--max-concurrency", type=int, default=64, help="per slot")
    parser.add_argument("--batch-size", type=int, default=32, help="the agents' batch.size")
    args = parser.parse_args()
    print(
        f"{args.keys} keys, one call each; quota {args.rpm:g} requests and {args.tpm:g} "
        f"tokens per minute (1 s burst, retry-after: {args.retry_after}); max-in-flight 256, "
        f"max_concurrency {args.max_concurrency}, batch.size {args.batch_size}, "
        f"parallelism {args.parallelism}, {args.mode} mode, a checkpoint every "
        f"{args.interval_ms} ms; load average {os.getloadavg()[0]:.1f}"
        + (f"; {', '.join(args.flink_conf)}" if args.flink_conf else ""),
        flush=True,
    )
    runs = [(mode, kind) for mode in args.modes.split(",") for kind in args.checkpoints.split(",")]
    results: dict[tuple[str, str], list[dict[str, Any]]] = {run: [] for run in runs}
    for round_ in range(args.repeat):
        for mode, kind in runs:
            result = _run(args, mode, kind)
            results[(mode, kind)].append(result)
            print(
                f"round {round_ + 1} {mode:8s} {kind:9s}: {result['answers']} answers, "
                f"{result['refused']} 429s ({result['refused_pct']:.1f} %), throughput "
                f"{result['throughput_pct']:.0f} % of the quota (server bucket peak "
                f"{result['bucket_s']:.2f} s of 1 s), {result['failed']} failed "
                f"of {result['outputs']} outputs; {result['checkpoints']} checkpoints, longest "
                f"{result['max_ms']} ms, median {result['median_ms']} ms; job "
                f"{result['job_s']:.0f} s (load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
    print("\nmedians:")
    for (mode, kind), rs in results.items():
        print(
            f"  {mode:8s} {kind:9s}: 429s {_median(rs, 'refused_pct'):.1f} % of requests, "
            f"throughput {_median(rs, 'throughput_pct'):.0f} % of the quota (server bucket "
            f"peak {_median(rs, 'bucket_s'):.2f} s), failed "
            f"{_median(rs, 'failed')}, longest checkpoint {_median(rs, 'max_ms')} ms "
            f"(median {_median(rs, 'median_ms')} ms)"
        )


if __name__ == "__main__":
    main()
