"""Benchmark of the Flink host on the local MiniCluster (parallelism 1, discarding sink).

Runs, in one invocation:

1. baseline: a plain PyFlink keyed stateful function (one ValueState read and write per
   record) over N records;
2. agent: InputEvent -> ChatRequestEvent -> zero-latency scripted model ->
   ChatResponseEvent -> OutputEvent over the same N records and keys;
3. concurrency: the same agent with a 200 ms model over 2,000 keys (``--per-key`` inputs
   each, default 10, round robin over the keys), against the ideal
   ``min(keys, max_in_flight) / 0.2 s``. One input per key is a burst of ~1.6 s in which the
   first and last waves of calls (a perfect operator takes ``ceil(2000 / 256) = 8`` waves of
   0.2 s) and the job's first records weigh as much as the steady state; ten per key
   measure the steady state over ~16 s, which is what a long-running job sees.

With ``--observability`` it runs instead the agent with the built-in metrics off
(``agent-bare``), on (``agent``, the default) and on with the event log at STANDARD level
(``agent-eventlog``: the default writer, ``auto``, which is the writer process here when 2 or
more CPUs are usable; ``agent-eventlog-thread`` with ``event-log.writer: thread``),
alternating, and reports the cost of each against the bare agent.

Baseline and agent run ``--repeat`` times each, alternating, one job per run; the figures
and the ratio are the medians (runs on this shared 2-vCPU machine spread by +-20 %).

Throughput is measured inside the job, from the first input reaching the keyed operator to
the last output leaving it (job start-up, 5-9 s here, is not counted): a pass-through map
before and after the operator notes the times. Both pipelines have the same maps.

With ``--flink-venv DIR`` (repeatable) it compares Flink versions instead: the baseline and
the agent run in this interpreter and in each venv's (a venv with the package and another
apache-flink, e.g. made by ``make test-versions``), every job in a child process of its
own, alternating version by version; each version's agent throughput is reported as a
share of its own baseline, and a version more than 10 points below the best is flagged.

Usage::

    .venv/bin/python benchmarks/flink_host.py [--records 20000] [--keys 100]
        [--mode thread|process] [--concurrency-keys 2000] [--per-key 10]
        [--in-flight 16,64,256]
        [--repeat 3] [--observability] [--plot PATH [--plot-data FILE.json]]
        [--flink-venv .versions/flink-1.20.5]

``--in-flight`` runs the concurrency job once per ``max-in-flight`` value (default: the
option's default). ``--plot PATH`` writes a PNG of the figures (``benchmarks/plots.py``):
agent vs baseline and concurrency vs in-flight, or with ``--observability`` the cost of
metrics and the event log; ``--plot-data`` keeps each Flink version's and mode's medians in a
JSON file so that one figure compares them (run once per mode with the same file).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

# A job for --flink-venv (--single) puts the repository last: the venv's own flink_agents
# (its installed wheel) comes first, only the benchmark's agent (tests/) from here.
sys.path.insert(
    len(sys.path) if "--single" in sys.argv else 0,
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
)

from pyflink.common import Configuration, WatermarkStrategy
from pyflink.common.typeinfo import Types
from pyflink.datastream import (
    KeyedProcessFunction,
    MapFunction,
    RuntimeContext,
    StreamExecutionEnvironment,
)
from pyflink.datastream.connectors.number_seq import NumberSequenceSource
from pyflink.datastream.functions import SinkFunction
from pyflink.datastream.state import ValueStateDescriptor
from pyflink.java_gateway import get_gateway
from pyflink.version import __version__ as flink_version

from benchmarks import plots
from flink_agents.api.core_options import AgentConfiguration, AgentExecutionOptions
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.runtime.observability.event_log_options import writer_kind
from tests.flink.agents import chat_agent

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Stamp(MapFunction):
    """Pass-through that notes when its first and last records passed (written at close),
    and the process CPU time then (thread mode: the whole JVM, Python included)."""

    def __init__(self, path: str, side: str) -> None:
        self._path = path
        self._side = side

    def open(self, runtime_context: RuntimeContext) -> None:
        self._first: float | None = None
        self._last = 0.0
        self._cpu_first = self._cpu_last = 0.0
        self._n = self._n_cpu = 0

    def map(self, value: Any) -> Any:
        now = time.time()
        if self._first is None:
            self._first = now
            self._cpu_first = time.process_time()
        self._last = now
        self._n += 1
        if not self._n & 255 and self._side == "out":
            # Every 256th output only: process CPU time costs microseconds in a JVM with its
            # many threads.
            self._cpu_last = time.process_time()
            self._n_cpu = self._n
        return value

    def close(self) -> None:
        with open(self._path, "a", encoding="utf-8") as fh:
            fh.write(
                json.dumps(
                    {
                        "side": self._side,
                        "n": self._n,
                        "first": self._first,
                        "last": self._last,
                        "cpu_first": self._cpu_first,
                        "cpu_last": self._cpu_last,
                        "n_cpu": self._n_cpu,
                    }
                )
                + "\n"
            )


class _Counter(KeyedProcessFunction):
    """The baseline: one ValueState read and write per record."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self._count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        count = (self._count.value() or 0) + 1
        self._count.update(count)
        yield {"key": value["key"], "i": value["i"], "count": count}


def _record(keys: int) -> Any:
    def make(n: int) -> dict[str, Any]:
        return {"key": f"k{n % keys}", "i": int(n)}

    return make


def _discard() -> SinkFunction:
    jvm = get_gateway().jvm
    sinks = jvm.org.apache.flink.streaming.api.functions.sink
    # Flink 2 moved the legacy sink functions to ``.legacy``; 1.20 has them in ``sink``.
    discarding = sinks.legacy.DiscardingSink if _flink_major() >= 2 else sinks.DiscardingSink
    return SinkFunction(discarding())


def _flink_major() -> int:
    from pyflink.version import __version__

    return int(__version__.split(".")[0])


def _run(
    mode: str,
    records: int,
    keys: int,
    kind: str,
    latency: float = 0.0,
    carry_timestamps: bool = True,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    conf = Configuration()
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(1)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env, **{"python.execution-mode": mode, **(config or {})}
    )
    stamps = tempfile.mktemp(prefix="flink-host-bench-", suffix=".jsonl")
    numbers = env.from_source(
        NumberSequenceSource(0, records - 1), WatermarkStrategy.no_watermarks(), "numbers"
    )
    inputs = numbers.map(_record(keys), output_type=Types.PICKLED_BYTE_ARRAY()).map(
        _Stamp(stamps, "in"), output_type=Types.PICKLED_BYTE_ARRAY()
    )
    if kind == "baseline":
        agents_env.configure_workers()  # same Python worker setup as the agent runs
        out = inputs.key_by(lambda r: r["key"]).process(
            _Counter(), output_type=Types.PICKLED_BYTE_ARRAY()
        )
    else:
        out = (
            agents_env.from_datastream(inputs, key_selector=lambda r: r["key"])
            .apply(chat_agent(latency=latency))
            .to_datastream(carry_timestamps=carry_timestamps)
        )
    out.map(_Stamp(stamps, "out"), output_type=Types.PICKLED_BYTE_ARRAY()).add_sink(_discard())
    started, cpu = time.time(), _jvm_cpu()
    env.execute(f"flink-host-bench-{kind}")
    wall, cpu = time.time() - started, _jvm_cpu() - cpu
    with open(stamps, encoding="utf-8") as fh:
        marks = {m["side"]: m for m in (json.loads(line) for line in fh)}
    os.unlink(stamps)
    seconds = marks["out"]["last"] - marks["in"]["first"]
    return {
        "kind": kind,
        "records": marks["out"]["n"],
        "seconds": seconds,
        "rate": marks["out"]["n"] / seconds,
        # When the operator processed (epoch seconds): the first input in, the last output out.
        "span": (marks["in"]["first"], marks["out"]["last"]),
        "wall": wall,
        "cpu_ms": cpu * 1e6 / records,  # JVM CPU per 1000 records, whole job (start-up too)
        # Process CPU per record from the first input to the last output (thread mode: the
        # JVM with Python; no start-up): less sensitive to other work than throughput.
        "run_cpu_us": (marks["out"]["cpu_last"] - marks["in"]["cpu_first"])
        * 1e6
        / max(marks["out"]["n_cpu"], 1),
    }


def _jvm_cpu() -> float:
    """CPU seconds the MiniCluster's JVM used so far (user + system; in thread mode the
    Python interpreter runs inside it). Less sensitive than throughput to other work on a
    shared machine: waiting for a core costs wall time, not CPU time."""
    pid = get_gateway().jvm.java.lang.ProcessHandle.current().pid()
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _equal_sampling() -> None:
    """Process mode: every job of this invocation with the agent's short Beam state
    sampling period. The Python workers are this process (PyFlink's loopback mode), and the
    agent's ``open()`` shortens the period for every bundle processor made after it
    (``_pyflink_internals.shorten_state_sampling``; a bundle's end otherwise waits up to
    200 ms): without this the baseline's jobs would run with Beam's 200 ms or the short
    period depending on whether an agent job ran before them."""
    from flink_agents.runtime.flink import _pyflink_internals

    shorten = getattr(_pyflink_internals, "shorten_state_sampling", None)
    if shorten is not None:
        shorten()


def _median(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median rate."""
    ordered = sorted(results, key=lambda r: r["rate"])
    return ordered[len(ordered) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--mode", choices=["thread", "process"], default="thread")
    parser.add_argument("--concurrency-keys", type=int, default=2_000)
    parser.add_argument(
        "--per-key", type=int, default=10, help="inputs per key of the concurrency job"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of the baseline and of the agent (median)"
    )
    parser.add_argument(
        "--observability",
        action="store_true",
        help="measure the agent with metrics off / on / on with the event log instead",
    )
    parser.add_argument(
        "--flink-venv",
        action="append",
        default=[],
        metavar="DIR",
        help="compare with the same benchmark in this venv (another apache-flink; repeatable)",
    )
    parser.add_argument("--single", help=argparse.SUPPRESS)  # one job, JSON out (--flink-venv)
    parser.add_argument(
        "--no-carry-timestamps",
        action="store_true",
        help="also run the agent without re-assigning input timestamps to outputs",
    )
    parser.add_argument(
        "--in-flight",
        default=str(AgentExecutionOptions.MAX_IN_FLIGHT.default),
        help="max-in-flight values of the concurrency job, comma separated (one job each)",
    )
    parser.add_argument("--plot", metavar="PATH", help="write a PNG of the figures here")
    parser.add_argument(
        "--plot-data",
        metavar="FILE",
        help="with --plot: keep this run's medians in this JSON file (one entry per Flink "
        "version and mode) and plot all its entries",
    )
    args = parser.parse_args()
    if args.mode == "process":
        _equal_sampling()
    if args.single:
        result = _run(args.mode, args.records, args.keys, args.single)
        print("RESULT " + json.dumps(result), flush=True)
        return
    if args.plot:
        plots.require()
    load_before = plots.load_average()

    def show(result: dict[str, Any]) -> None:
        print(
            f"{result['kind']:<12} {result['records']:>7} records in {result['seconds']:6.2f} s"
            f" = {result['rate']:8.0f} records/s   (job wall time {result['wall']:.1f} s, "
            f"JVM CPU {result['cpu_ms']:.0f} ms per 1000 records, {result['run_cpu_us']:.0f} us "
            "per record while processing)",
            flush=True,
        )

    print(
        f"mode={args.mode} records={args.records} keys={args.keys} parallelism=1 "
        f"repeat={args.repeat}"
    )
    if args.observability:
        _observability(args, show, load_before)
        return
    if args.flink_venv:
        _versions(args, show)
        return
    # Baseline and agent alternate, each run in a job of its own: run-to-run spread on this
    # shared 2-vCPU machine is +-20 %, so the figures are the medians of the runs.
    runs: dict[str, list[dict[str, Any]]] = {"baseline": [], "agent": []}
    for _ in range(args.repeat):
        for kind in runs:
            result = _run(args.mode, args.records, args.keys, kind)
            runs[kind].append(result)
            show(result)
    baseline, agent = (_median(runs[kind]) for kind in ("baseline", "agent"))
    print(f"median: baseline {baseline['rate']:.0f} records/s, agent {agent['rate']:.0f} records/s")
    ratio = agent["rate"] / baseline["rate"]
    target = "70" if args.mode == "thread" else "50"
    print(f"agent / baseline throughput: {ratio:.0%} (target >= {target}% in {args.mode} mode)")
    if args.no_carry_timestamps:
        bare = _run(args.mode, args.records, args.keys, "agent-no-ts", carry_timestamps=False)
        show(bare)
        bare_ratio = bare["rate"] / baseline["rate"]
        print(f"agent without timestamp re-assignment / baseline: {bare_ratio:.0%}")

    keys = args.concurrency_keys
    points = []
    for max_in_flight in (int(v) for v in args.in_flight.split(",")):
        concurrency = _run(
            args.mode,
            keys * args.per_key,
            keys,
            "concurrency",
            latency=0.2,
            config={"max-in-flight": max_in_flight},
        )
        concurrency["kind"] = "concurrency"
        show(concurrency)
        ideal = min(keys, max_in_flight) / 0.2
        print(
            f"concurrency ({keys} keys x {args.per_key}): {concurrency['rate']:.0f} runs/s vs "
            f"ideal min({keys}, "
            f"{max_in_flight}) / 0.2 s = {ideal:.0f} runs/s: {concurrency['rate'] / ideal:.0%} "
            f"(target >= {'95' if args.mode == 'thread' else '80'}%)"
        )
        points.append(
            {"in_flight": max_in_flight, "rate": round(concurrency["rate"], 1), "ideal": ideal}
        )
    if args.plot:
        entry = {
            "flink": flink_version,
            "mode": args.mode,
            "baseline": round(baseline["rate"], 1),
            "agent": round(agent["rate"], 1),
            "concurrency": points,
        }
        entries = plots.merge_entries(args.plot_data, entry)
        modes = "/".join(sorted({e["mode"] for e in entries}))
        command = (
            f"benchmarks/flink_host.py --mode {modes} --records {args.records} "
            f"--keys {args.keys} --repeat {args.repeat} --concurrency-keys {keys} "
            f"--per-key {args.per_key} --in-flight {args.in_flight}"
        )
        plots.throughput(entries, args.plot, plots.machine_note(command, load_before))


def _observability(args: argparse.Namespace, show: Any, load_before: float) -> None:
    """Agent throughput with metrics off, on, and on with the event log (alternating)."""
    log_dir = tempfile.mkdtemp(prefix="flink-host-bench-log-")
    configs: dict[str, dict[str, Any]] = {
        "agent-bare": {"metrics.enabled": False},
        "agent": {},
        "agent-eventlog": {"event-log.enabled": True, "baseLogDir": log_dir},
        "agent-eventlog-thread": {
            "event-log.enabled": True,
            "baseLogDir": log_dir,
            "event-log.writer": "thread",
        },
    }
    runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in configs}
    # The first job of the JVM runs slower (class loading, JIT): not counted, so the first
    # configuration is not penalized.
    warm_up = _run(args.mode, min(args.records, 5_000), args.keys, "agent")
    warm_up["kind"] = "warm-up"
    show(warm_up)
    for _ in range(args.repeat):
        for kind, config in configs.items():
            result = _run(args.mode, args.records, args.keys, "agent", config=config)
            result["kind"] = kind
            runs[kind].append(result)
            show(result)
    medians = {kind: _median(results)["rate"] for kind, results in runs.items()}
    bare = medians["agent-bare"]
    print("median: " + ", ".join(f"{k} {v:.0f} records/s" for k, v in medians.items()))
    print(f"metrics cost: {1 - medians['agent'] / bare:.1%} of agent throughput (target <= 5%)")
    print(
        f"event log (STANDARD) cost: {1 - medians['agent-eventlog'] / medians['agent']:.1%} "
        f"of throughput with metrics on (target <= 25%); metrics + event log vs bare: "
        f"{1 - medians['agent-eventlog'] / bare:.1%}"
    )

    # The same ratios per round (each round runs the configurations back to back): the
    # machine's speed drifts during an invocation, and a round's pair shares its moment.
    def paired(kind: str, base: str) -> str:
        costs = [1 - k["rate"] / b["rate"] for k, b in zip(runs[kind], runs[base], strict=True)]
        rounds = " / ".join(f"{c:.1%}" for c in costs)
        return f"{statistics.median(costs):.1%} (rounds {rounds})"

    print(
        f"paired by round, median: metrics {paired('agent', 'agent-bare')}; event log "
        f"{paired('agent-eventlog', 'agent')}; thread writer "
        f"{paired('agent-eventlog-thread', 'agent')}"
    )
    writer = writer_kind(AgentConfiguration(), flink=True)
    print(
        f"  (the default writer, auto, is the {writer} writer here); with the thread writer "
        f"(event-log.writer: thread): {1 - medians['agent-eventlog-thread'] / medians['agent']:.1%}"
        " of throughput"
    )
    cpu = {kind: statistics.median(r["cpu_ms"] for r in results) for kind, results in runs.items()}
    print(
        "median JVM CPU per 1000 records (whole job; thread mode includes Python): "
        + ", ".join(f"{k} {v:.0f} ms" for k, v in cpu.items())
    )
    print(
        f"by CPU: metrics {cpu['agent'] / cpu['agent-bare'] - 1:+.1%}, event log "
        f"{cpu['agent-eventlog'] / cpu['agent'] - 1:+.1%} vs metrics on"
    )
    run_cpu = {
        kind: statistics.median(r["run_cpu_us"] for r in results) for kind, results in runs.items()
    }
    print(
        "median process CPU per record while processing (first input to last output; thread "
        "mode: JVM with Python): " + ", ".join(f"{k} {v:.0f} us" for k, v in run_cpu.items())
    )
    print(
        f"by CPU while processing: metrics {run_cpu['agent'] / run_cpu['agent-bare'] - 1:+.1%}, "
        f"event log {run_cpu['agent-eventlog'] / run_cpu['agent'] - 1:+.1%} (a writer "
        f"process's CPU not counted; thread writer "
        f"{run_cpu['agent-eventlog-thread'] / run_cpu['agent'] - 1:+.1%}) vs metrics on"
    )
    size = sum(os.path.getsize(os.path.join(log_dir, f)) for f in os.listdir(log_dir))
    print(f"event log written: {size / 1e6:.1f} MB in {log_dir}")
    if args.plot:
        command = (
            f"benchmarks/flink_host.py --observability --records {args.records} "
            f"--keys {args.keys} --repeat {args.repeat} ({args.mode} mode, Flink "
            f"{flink_version})"
        )
        plots.event_log(runs, args.plot, plots.machine_note(command, load_before))


def _child_run(python: str, kind: str, args: argparse.Namespace) -> dict[str, Any]:
    """One job of ``kind`` in a child process of ``python``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    command = [python, os.path.abspath(__file__), "--single", kind, "--mode", args.mode]
    command += ["--records", str(args.records), "--keys", str(args.keys)]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=_ROOT)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if proc.returncode != 0 or line is None:
        raise SystemExit(f"{command} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(line.removeprefix("RESULT "))
    return result


def _versions(args: argparse.Namespace, show: Any) -> None:
    """Baseline and agent per Flink version, alternating version by version (see the
    module docstring)."""
    pythons = [sys.executable] + [os.path.join(v, "bin", "python") for v in args.flink_venv]
    versions = [
        subprocess.run(
            [p, "-c", "import pyflink.version as v; print(v.__version__)"],
            capture_output=True,
            text=True,
            check=True,
            cwd="/",
        ).stdout.strip()
        for p in pythons
    ]
    runs = {v: {"baseline": [], "agent": []} for v in versions}  # type: ignore[var-annotated]
    for _ in range(args.repeat):
        for python, version in zip(pythons, versions, strict=True):
            for kind in ("baseline", "agent"):
                result = _child_run(python, kind, args)
                result["kind"] = f"{version} {kind}"
                runs[version][kind].append(result)
                show(result)
    shares = {}
    for version in versions:
        baseline, agent = (_median(runs[version][k]) for k in ("baseline", "agent"))
        shares[version] = agent["rate"] / baseline["rate"]
        print(
            f"apache-flink {version}: baseline {baseline['rate']:.0f} records/s, agent "
            f"{agent['rate']:.0f} records/s: agent {shares[version]:.0%} of its baseline "
            f"(CPU per record while processing {agent['run_cpu_us']:.0f} vs "
            f"{baseline['run_cpu_us']:.0f} us)"
        )
    best = max(shares.values())
    for version, share in shares.items():
        behind = (best - share) * 100
        flag = "  ** more than 10 points below the best **" if behind > 10 else ""
        print(f"{version}: {share:.0%}, {behind:.1f} points below the best{flag}")


if __name__ == "__main__":
    main()
