"""Latency the agent operator adds to a record, against a plain keyed PyFlink function.

MiniCluster, parallelism 1, the zero-latency chat agent of ``benchmarks/flink_host.py``
(InputEvent -> ChatRequestEvent -> scripted model -> ChatResponseEvent -> OutputEvent) and
its baseline (one ValueState read and write per record), each between the same two Python
maps: the first paces the input at a fixed rate and stamps each record with the time it
leaves for the keyed operator, the second (after the operator) notes ``now - stamp``. So a
record's latency is what it spends in the network hop to the keyed operator, in the operator
and in the hop after it; the baseline has the same hops, and the figure that matters is the
difference, the latency the agent operator **adds**.

Two loads: a low rate (``--low-rate``, 50 records/s) and 80 % of the agent's capacity
(``--load``), the capacity being the median throughput of unpaced agent runs of the same
invocation (``flink_host.py``'s measure). The baseline runs at the same rates. Baseline
and agent jobs alternate, ``--repeat`` rounds per load; the first ``--warm-up`` seconds of
each job are not counted. Reported per load: p50 / p99 / max of each side (medians over the
rounds) and the added latency, the median over rounds of each round's agent minus baseline
figure.

Network buffers are flushed after every record (``--buffer-timeout-ms 0``): with Flink's
default (100 ms) a record at a low rate waits for its buffer's timeout in both pipelines,
which hides what the operator does.

In thread mode, the agent operator hands inputs to Python in batches (``batch.size``, 32):
a batch leaves when full or ``batch.linger-ms`` (5 ms) after its first input, whichever is
first, so ``batch.linger-ms`` bounds a record's wait for its batch; a batch's first input
goes at once after an idle gap of the linger or while inputs arrive more than a quarter of
it apart on average. Each agent job's line shows its batches by cause (the operator's
accumulators): at the low rate they should all be ``idle`` or ``sparse``.

``--variant NAME:KEY=VALUE,...`` adds an agent job with other options to every round (e.g.
``no-publish:metrics.publish-interval-ms=600000``); ``--rates low`` skips the loaded runs
(and the capacity runs); ``--plot PNG`` draws the low rate's latency histograms and tails
(every round's records pooled, ``benchmarks/plots.py``).

Usage::

    .venv/bin/python benchmarks/latency.py [--mode thread|process] [--low-rate 50]
        [--load 0.8] [--seconds 20] [--repeat 3] [--keys 100] [--warm-up 3]
        [--capacity RECORDS_PER_S] [--config KEY=VALUE ...] [--variant NAME:KEY=VALUE,...]
        [--rates both|low|loaded] [--plot PNG]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyflink.common import Configuration, WatermarkStrategy
from pyflink.common.typeinfo import Types
from pyflink.datastream import (
    KeyedProcessFunction,
    MapFunction,
    RuntimeContext,
    StreamExecutionEnvironment,
)
from pyflink.datastream.connectors.number_seq import NumberSequenceSource
from pyflink.datastream.state import ValueStateDescriptor

from benchmarks import flink_host, plots
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from tests.flink.agents import chat_agent


class _Pace(MapFunction):
    """Turns sequence numbers into records at ``rate`` records/s, each stamped with the
    time it leaves (``t``)."""

    def __init__(self, rate: float, keys: int) -> None:
        self._rate = rate
        self._keys = keys

    def open(self, runtime_context: RuntimeContext) -> None:
        self._start: float | None = None

    def map(self, value: Any) -> Any:
        n = int(value)
        now = time.time()
        if self._start is None:
            self._start = now
        due = self._start + n / self._rate
        if due > now:
            time.sleep(due - now)
            now = time.time()
        return {"key": f"k{n % self._keys}", "i": n, "t": now}


class _Latency(MapFunction):
    """Notes each record's time since its stamp; writes them (after the warm-up) at close."""

    def __init__(self, path: str, warm_up: float) -> None:
        self._path = path
        self._warm_up = warm_up

    def open(self, runtime_context: RuntimeContext) -> None:
        self._first: float | None = None
        self._latencies: list[float] = []

    def map(self, value: Any) -> Any:
        now = time.time()
        if self._first is None:
            self._first = value["t"]
        if value["t"] - self._first >= self._warm_up:
            self._latencies.append(now - value["t"])
        return value

    def close(self) -> None:
        with open(self._path, "w", encoding="utf-8") as fh:
            json.dump(self._latencies, fh)


class _StampedCounter(KeyedProcessFunction):
    """The baseline: one ValueState read and write per record, the stamp passed on."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self._count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        count = (self._count.value() or 0) + 1
        self._count.update(count)
        yield {"key": value["key"], "i": value["i"], "t": value["t"], "count": count}


def _run(
    kind: str, rate: float, args: argparse.Namespace, config: dict[str, Any]
) -> dict[str, Any]:
    """One paced job of ``kind`` (baseline or agent): its latency percentiles (ms)."""
    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.set_parallelism(1)
    env.set_buffer_timeout(args.buffer_timeout_ms)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env, **{"python.execution-mode": args.mode, **config}
    )
    records = max(int(rate * args.seconds), 1)
    path = tempfile.mktemp(prefix="flink-latency-bench-", suffix=".json")
    inputs = env.from_source(
        NumberSequenceSource(0, records - 1), WatermarkStrategy.no_watermarks(), "numbers"
    ).map(_Pace(rate, args.keys), output_type=Types.PICKLED_BYTE_ARRAY())
    if kind == "baseline":
        agents_env.configure_workers()  # same Python worker setup as the agent
        out = inputs.key_by(lambda r: r["key"]).process(
            _StampedCounter(), output_type=Types.PICKLED_BYTE_ARRAY()
        )
    else:
        out = (
            agents_env.from_datastream(inputs, key_selector=lambda r: r["key"])
            .apply(chat_agent())
            .to_datastream()
        )
    out.map(_Latency(path, args.warm_up), output_type=Types.PICKLED_BYTE_ARRAY()).add_sink(
        flink_host._discard()
    )
    result = env.execute(f"flink-latency-bench-{kind}")
    batches = {
        cause: result.get_accumulator_result(f"flink-agents.batches.{cause}") or 0
        for cause in _CAUSES
    }
    with open(path, encoding="utf-8") as fh:
        latencies = sorted(json.load(fh))
    os.unlink(path)
    if not latencies:
        raise SystemExit(f"{kind}: no record after the warm-up; raise --seconds")
    return {
        "kind": kind,
        "rate": rate,
        "n": len(latencies),
        "p50": _percentile(latencies, 0.50) * 1000,
        "p99": _percentile(latencies, 0.99) * 1000,
        "max": latencies[-1] * 1000,
        "batches": {cause: n for cause, n in batches.items() if n},
        "latencies": latencies,
    }


#: Why the thread-mode operator handed a batch to Python (its accumulators).
_CAUSES = ("full", "linger", "idle", "barrier", "watermark", "end")


def _percentile(ordered: list[float], q: float) -> float:
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


def _capacity(args: argparse.Namespace, config: dict[str, Any]) -> float:
    """The agent's unpaced throughput (records/s), median of ``--repeat`` runs."""
    rates = []
    for _ in range(args.repeat):
        result = flink_host._run(
            args.mode, args.capacity_records, args.keys, "agent", config=config
        )
        rates.append(result["rate"])
        print(f"capacity run: {result['rate']:.0f} records/s", flush=True)
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=["thread", "process"], default="thread")
    parser.add_argument("--low-rate", type=float, default=50.0, help="records/s")
    parser.add_argument("--load", type=float, default=0.8, help="share of the capacity")
    parser.add_argument("--seconds", type=float, default=20.0, help="input length of a job")
    parser.add_argument("--warm-up", type=float, default=3.0, help="seconds not counted")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--buffer-timeout-ms", type=int, default=0)
    parser.add_argument(
        "--capacity", type=float, help="the agent's records/s (default: measured here)"
    )
    parser.add_argument("--capacity-records", type=int, default=20_000)
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an agent option for every agent job (e.g. batch.linger-ms=2)",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE[,KEY=VALUE]",
        help="one more agent job per round with these options on top of --config "
        "(e.g. no-publish:metrics.publish-interval-ms=600000)",
    )
    parser.add_argument("--rates", choices=["both", "low", "loaded"], default="both")
    parser.add_argument("--plot", help="a PNG: the latency histograms at the low rate")
    args = parser.parse_args()
    if args.plot:
        plots.require()
    config = _options(args.config)
    kinds: dict[str, dict[str, Any]] = {"baseline": {}, "agent": config}
    for item in args.variant:
        name, _, options = item.partition(":")
        kinds[name] = {**config, **_options(options.split(","))}
    load_before = plots.load_average()
    print(
        f"mode={args.mode} keys={args.keys} seconds={args.seconds} warm-up={args.warm_up} "
        f"repeat={args.repeat} buffer-timeout={args.buffer_timeout_ms} ms config={config} "
        f"variants={ {k: v for k, v in kinds.items() if k not in ('baseline', 'agent')} } "
        f"load average {load_before:.1f}",
        flush=True,
    )
    rates = {"low": args.low_rate}
    if args.rates != "low":
        capacity = args.capacity or _capacity(args, config)
        rates["loaded"] = args.load * capacity
        print(f"capacity {capacity:.0f} records/s", flush=True)
    if args.rates == "loaded":
        del rates["low"]
    print(f"rates: {rates}", flush=True)
    summary = []
    pooled: dict[str, list[float]] = {kind: [] for kind in kinds}
    for name, rate in rates.items():
        rounds: list[dict[str, dict[str, Any]]] = []
        for _ in range(args.repeat):
            pair = {}
            for kind, options in kinds.items():
                result = _run("baseline" if kind == "baseline" else "agent", rate, args, options)
                pair[kind] = result
                if name == "low":
                    pooled[kind].extend(result["latencies"])
                print(
                    f"{name:<7} {kind:<9} {rate:7.0f} records/s  n={result['n']:>6}  "
                    f"p50 {result['p50']:7.2f} ms  p99 {result['p99']:7.2f} ms  "
                    f"max {result['max']:8.2f} ms  {_tail(result['latencies'])}"
                    + (f"  batches {result['batches']}" if result["batches"] else ""),
                    flush=True,
                )
            rounds.append(pair)
        for kind in kinds:
            if kind == "baseline":
                continue
            line = [f"{name} ({rate:.0f} records/s) {kind}, medians of {args.repeat} rounds:"]
            for figure in ("p50", "p99", "max"):
                base = statistics.median(r["baseline"][figure] for r in rounds)
                agent = statistics.median(r[kind][figure] for r in rounds)
                added = statistics.median(r[kind][figure] - r["baseline"][figure] for r in rounds)
                line.append(
                    f"{figure} baseline {base:.2f} ms, {kind} {agent:.2f} ms, "
                    f"added {added:+.2f} ms;"
                )
            summary.append(" ".join(line))
    print()
    for line in summary:
        print(line)
    print(f"load average {load_before:.1f} -> {plots.load_average():.1f}")
    if args.plot and "low" in rates:
        command = "benchmarks/latency.py " + " ".join(sys.argv[1:])
        plots.latency(
            {kind: [x * 1000 for x in values] for kind, values in pooled.items()},
            args.plot,
            plots.machine_note(command, load_before)
            + f"  |  {args.low_rate:g} records/s, {args.repeat} rounds pooled",
        )
        print(f"wrote {args.plot}")


def _options(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` items as agent options (digits: an int)."""
    options: dict[str, Any] = {}
    for item in items:
        key, _, value = item.partition("=")
        options[key] = int(value) if value.isdigit() else value
    return options


def _tail(latencies: list[float]) -> str:
    """How many records took over 5 and 20 ms."""
    over5 = sum(1 for x in latencies if x > 0.005)
    over20 = sum(1 for x in latencies if x > 0.020)
    return f">5ms {over5} >20ms {over20}"


if __name__ == "__main__":
    main()
