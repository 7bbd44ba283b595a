"""State at scale: the agent's keyed state against a plain keyed function's, same bytes.

Every key holds short-term memory of about 1 KB (``profile``) and a chat history of 10
turns (``history``, about 0.8 KB pickled). The first input of a key writes both, each later
one reads them and replaces the history's oldest turn. ``--passes`` inputs per key, key
after key (``k{n % keys}``). The same state is held by two jobs:

- ``agent``: an agent whose one action does the above through ``ctx.short_term_memory``
  (thread mode, the operator's MapState of flattened paths);
- ``baseline``: a PyFlink ``KeyedProcessFunction`` with two pickled ``ValueState`` s;
- ``onevalue`` (diagnostic, not run by default): a keyed function holding the same bytes
  as the agent's layout 2, one pickled ``ValueState`` ``{profile, history}`` read and
  rewritten whole by every input: Flink's own cost of that layout;
- ``mapscan`` (diagnostic, not run by default): the same function with both values in one
  ``MapState`` that each input reads by iterating it (``items()``): how the agent read its
  memory before layout version 2, without the agent's own per-run cost;
- ``mapget`` (diagnostic): the same ``MapState`` read by point lookups (``get``) of its two
  entries: how the agent reads it since layout version 2.

Each runs on the local MiniCluster (parallelism 1) on the heap backend (``hashmap``) and on
RocksDB with incremental checkpoints, checkpointing every ``--interval-ms``. After the last
input the source idles (the job keeps running), one more checkpoint completes with all the
state, and the job is stopped with a savepoint. Then a job of the same topology is started
from the retained checkpoint and one from the savepoint: the time until every task is
RUNNING (state restored) is the restore time; a job started empty gives the zero.

Reported per keys x backend x job: records/s while processing (first input to last output), JVM
CPU per record (thread mode: Python inside) over the whole job (start-up included: it
dominates at 10,000 keys) and while processing (first output to last: the figure to compare
across key counts; also every 5 % of the outputs, ``cpu_marks``, and with ``--marks`` as
they happen),
the full state's last checkpoint (size, incremental size, duration), the savepoint's
size, the restore times, and the JVM's resident memory and heap after a GC (the MiniCluster
runs in it, Python too in thread mode). Each configuration runs in a process of its own
(a fresh JVM), so its memory figures are its own.

Usage (a module: the Python workers import its functions)::

    .venv/bin/python -m benchmarks.state_scale [--keys 10000,100000] [--passes 2]
        [--backends hashmap,rocksdb] [--kinds baseline,agent] [--json PATH] [--marks PATH]

The MiniCluster's JVM takes its options from ``JVM_ARGS`` (e.g. ``JVM_ARGS=-Xmx8g`` for the
heap backend at 1,000,000 keys: ~1.8 GiB of state, 4.3 GiB of RSS). ``--timeout`` bounds a
configuration's processing and its last checkpoint: 1,000,000 keys took 6-17 minutes on the
heap at load 1-15 and need more on a loaded machine (``--timeout 4500``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyflink.common import Configuration, WatermarkStrategy
from pyflink.common.typeinfo import Types
from pyflink.datastream import (
    KeyedProcessFunction,
    MapFunction,
    RuntimeContext,
    StreamExecutionEnvironment,
)
from pyflink.datastream.connectors.number_seq import NumberSequenceSource
from pyflink.datastream.state import MapStateDescriptor, ValueStateDescriptor
from pyflink.java_gateway import get_gateway

from benchmarks import plots
from benchmarks.flink_host import _discard, _jvm_cpu
from flink_agents.api.agents.agent import Agent
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.runner_context import RunnerContext
from flink_agents.errors import ClusterError
from flink_agents.ops import jobs
from flink_agents.testing.ports import free_port

PROFILE = "p" * 1000
TURNS = 10
IDLE_SLEEP = 0.02  # seconds per idle record after the last input
#: From this --interval-ms on, the checkpoint with all the state is triggered right after
#: the input (through the REST API) instead of waiting for the next periodic one.
MANUAL_CHECKPOINT_MS = 60_000
#: A progress mark also after this many seconds without one: a job that slows to a few
#: records per second (RocksDB at 1,000,000 keys) still tells how far it got.
MARK_EVERY_S = 60.0


def _turn(key: str, n: int) -> dict[str, str]:
    return {"role": "user" if n % 2 else "assistant", "content": f"turn {n} of {key} " + "t" * 40}


def _next_history(key: str, history: list[dict[str, str]] | None, n: int) -> list[Any]:
    if not history:
        return [_turn(key, i) for i in range(TURNS)]
    return [*history[1:], _turn(key, n)]


def converse(event: InputEvent, ctx: RunnerContext) -> None:
    """The agent: memory ``profile`` (~1 KB) and ``history`` (10 turns)."""
    record = event.input
    memory = ctx.short_term_memory
    if memory.get("profile") is None:
        memory.set("profile", PROFILE)
    history = _next_history(record["key"], memory.get("history"), record["i"])
    memory.set("history", history)
    ctx.send_event(OutputEvent(output={"key": record["key"], "turns": len(history)}))


def state_agent() -> Agent:
    agent = Agent()
    agent.add_action("converse", InputEvent, converse)
    return agent


class Baseline(KeyedProcessFunction):
    """The same state in two pickled ValueStates."""

    def open(self, runtime_context: RuntimeContext) -> None:
        pickled = Types.PICKLED_BYTE_ARRAY()
        self._profile = runtime_context.get_state(ValueStateDescriptor("profile", pickled))
        self._history = runtime_context.get_state(ValueStateDescriptor("history", pickled))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        if self._profile.value() is None:
            self._profile.update(PROFILE)
        history = _next_history(value["key"], self._history.value(), value["i"])
        self._history.update(history)
        yield {"key": value["key"], "turns": len(history)}


class OneValue(KeyedProcessFunction):
    """The same state as the agent's layout 2: one pickled ValueState ``{profile, history}``
    per key, read once and rewritten whole by every input."""

    def open(self, runtime_context: RuntimeContext) -> None:
        pickled = Types.PICKLED_BYTE_ARRAY()
        self._memory = runtime_context.get_state(ValueStateDescriptor("memory", pickled))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        memory = dict(self._memory.value() or {})
        if memory.get("profile") is None:
            memory["profile"] = PROFILE
        history = _next_history(value["key"], memory.get("history"), value["i"])
        memory["history"] = history
        self._memory.update(memory)
        yield {"key": value["key"], "turns": len(history)}


class MapScan(KeyedProcessFunction):
    """The same state in one MapState, read by iterating it (the agent before layout 2) or,
    with ``scan`` False, by point lookups."""

    def __init__(self, scan: bool = True) -> None:
        self.scan = scan

    def open(self, runtime_context: RuntimeContext) -> None:
        pickled = Types.PICKLED_BYTE_ARRAY()
        self._memory = runtime_context.get_map_state(
            MapStateDescriptor("memory", Types.STRING(), pickled)
        )

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        if self.scan:
            memory = dict(self._memory.items())
        else:
            memory = {path: self._memory.get(path) for path in ("profile", "history")}
        if memory.get("profile") is None:
            self._memory.put("profile", PROFILE)
        history = _next_history(value["key"], memory.get("history"), value["i"])
        self._memory.put("history", history)
        yield {"key": value["key"], "turns": len(history)}


class Records(MapFunction):
    """Number -> record of key ``k{n % keys}`` while ``n < total``; then idle records (the
    job keeps running, slowly) that the keyed function drops."""

    def __init__(self, keys: int, total: int) -> None:
        self._keys, self._total = keys, total

    def map(self, value: Any) -> Any:
        n = int(value)
        if n >= self._total:
            time.sleep(IDLE_SLEEP)
            return None
        return {"key": f"k{n % self._keys}", "i": n}


class Progress(MapFunction):
    """Writes ``{"first", "last", "n", "cpu"}`` to ``path`` when the ``total``-th output
    passed; ``cpu``: the process CPU seconds between the first output and then (thread mode:
    the whole JVM, Python included; no job start-up), also every 5 % of the outputs and
    after :data:`MARK_EVERY_S` without a mark (``cpu_marks``: how the cost per record moves
    as the state grows), each mark appended at once to ``marks`` (a JSON line with
    ``label``) if given: a run stopped before its end still tells its figures so far."""

    def __init__(self, path: str, total: int, marks: str | None = None, label: str = "") -> None:
        self._path, self._total = path, total
        self._marks_path, self._label = marks, label

    def open(self, runtime_context: RuntimeContext) -> None:
        self._n = 0
        self._first = 0.0
        self._cpu_first = 0.0
        self._marks: list[tuple[int, float, float]] = []
        self._every = max(self._total // 20, 1)
        self._next_at = 0.0

    def map(self, value: Any) -> Any:
        self._n += 1
        now = time.time()
        if self._n == 1:
            self._first = now
            self._cpu_first = time.process_time()
            self._next_at = now + MARK_EVERY_S
        elif not self._n % self._every or self._n == self._total or now >= self._next_at:
            self._next_at = now + MARK_EVERY_S
            mark = (self._n, now - self._first, time.process_time() - self._cpu_first)
            self._marks.append(mark)
            if self._marks_path:
                with open(self._marks_path, "a", encoding="utf-8") as fh:
                    line = {"label": self._label, "n": mark[0], "s": mark[1], "cpu": mark[2]}
                    fh.write(json.dumps({**line, "at": now}) + "\n")
        if self._n == self._total:
            Path(self._path).write_text(
                json.dumps(
                    {
                        "first": self._first,
                        "last": time.time(),
                        "n": self._n,
                        "cpu": time.process_time() - self._cpu_first,
                        "cpu_marks": self._marks,
                    }
                )
            )
        return value


def pass2_cpu_us(cpu_marks: list[list[float]], total: int) -> float:
    """CPU us per record of the last pass (from the mark at ``total`` * (passes - 1) /
    passes on; with 2 passes the second half): every key exists and its state is read and
    written, the state at its full size, the job warmed up. ``cpu_marks``: ``(n, seconds,
    cpu seconds)`` since the first output."""
    half = [m for m in cpu_marks if m[0] >= total // 2]
    if len(half) < 2:
        return float("nan")
    (n0, _, cpu0), (n1, _, cpu1) = half[0], half[-1]
    return (cpu1 - cpu0) * 1e6 / max(n1 - n0, 1)


def _jvm_memory() -> dict[str, float]:
    """Resident memory of the MiniCluster's JVM (thread mode: Python inside) and its heap in
    use after a GC, in MiB."""
    jvm = get_gateway().jvm
    runtime = jvm.java.lang.Runtime.getRuntime()
    jvm.java.lang.System.gc()
    heap = (runtime.totalMemory() - runtime.freeMemory()) / 2**20
    pid = jvm.java.lang.ProcessHandle.current().pid()
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        rss = next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:")) / 1024
    return {"rss_mib": round(rss), "heap_mib": round(heap)}


def _dir_mib(path: str) -> float:
    root = Path(path.removeprefix("file:"))
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file()) / 2**20


def _env(
    backend: str, work: Path, port: int, restore: str | None, extra: Sequence[str] = ()
) -> StreamExecutionEnvironment:
    conf = Configuration()
    for item in extra:
        key, _, value = item.partition("=")
        conf.set_string(key, value)
    conf.set_string("rest.port", str(port))
    conf.set_string("state.backend.type", backend)
    conf.set_string("execution.checkpointing.incremental", str(backend == "rocksdb").lower())
    conf.set_string("execution.checkpointing.dir", (work / "checkpoints").as_uri())
    conf.set_string(
        "execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION"
    )
    conf.set_string("execution.checkpointing.num-retained", "1")
    if restore:
        conf.set_string("execution.state-recovery.path", restore)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(1)
    return env


def _build(
    env: StreamExecutionEnvironment,
    kind: str,
    keys: int,
    total: int,
    progress: str,
    marks: str | None = None,
    label: str = "",
):
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env, **{"python.execution-mode": "thread"}
    )
    numbers = env.from_source(
        NumberSequenceSource(0, 2**62), WatermarkStrategy.no_watermarks(), "numbers"
    ).uid("numbers")
    records = (
        numbers.map(Records(keys, total), output_type=Types.PICKLED_BYTE_ARRAY())
        .uid("records")
        .filter(lambda r: r is not None)
        .uid("live")
    )
    if kind in ("baseline", "onevalue", "mapscan", "mapget"):
        agents_env.configure_workers()
        function = {"baseline": Baseline, "onevalue": OneValue}.get(kind)
        out = (
            records.key_by(lambda r: r["key"])
            .process(
                function() if function else MapScan(scan=kind == "mapscan"),
                output_type=Types.PICKLED_BYTE_ARRAY(),
            )
            .uid("state")
        )
    else:
        out = (
            agents_env.from_datastream(records, key_selector=lambda r: r["key"])
            .apply(state_agent(), uid="state")
            .to_datastream()
        )
    out.map(Progress(progress, total, marks, label), output_type=Types.PICKLED_BYTE_ARRAY()).uid(
        "progress"
    ).add_sink(_discard()).uid("sink")


def _completed(jobmanager: str, job_id: str) -> list[dict[str, Any]]:
    try:
        history = jobs.checkpoint_stats(jobmanager, job_id).get("history", [])
    except ClusterError:  # the REST call timed out (a loaded machine): ask again later
        return []
    return sorted(
        (c for c in history if c.get("status") == "COMPLETED"), key=lambda c: int(c["id"])
    )


def _process(args: argparse.Namespace, kind: str, backend: str, keys: int, work: Path):
    total = keys * args.passes
    port = free_port()
    jobmanager = f"localhost:{port}"
    progress = str(work / "progress.json")
    env = _env(backend, work, port, None, args.flink_conf)
    env.enable_checkpointing(args.interval_ms)
    _build(env, kind, keys, total, progress, args.marks, f"{keys},{backend},{kind}")
    started, cpu = time.monotonic(), _jvm_cpu()
    client = env.execute_async(f"state-scale {kind} {backend} {keys}")
    job_id = str(client.get_job_id())
    deadline = started + args.timeout
    while not Path(progress).exists():
        if time.monotonic() > deadline:
            raise ClusterError(f"{kind}/{backend}/{keys}: not done in {args.timeout}s")
        time.sleep(0.5)
    marks = json.loads(Path(progress).read_text())
    # CPU of the JVM (thread mode: Python inside) per record, job start-up included: far
    # less sensitive to other work on the machine than the rate.
    cpu_us = (_jvm_cpu() - cpu) * 1e6 / total
    done_epoch_ms = marks["last"] * 1000
    # One checkpoint triggered after the last output: all the state. With a long interval
    # (no periodic checkpoint while processing) it is triggered here through the REST API.
    if args.interval_ms >= MANUAL_CHECKPOINT_MS:
        jobs._call(jobmanager, "POST", f"/jobs/{job_id}/checkpoints", {})
    full: dict[str, Any] | None = None
    while full is None:
        if time.monotonic() > deadline:
            raise ClusterError(f"{kind}/{backend}/{keys}: no checkpoint after the input")
        after = [
            c for c in _completed(jobmanager, job_id) if int(c["trigger_timestamp"]) > done_epoch_ms
        ]
        full = after[0] if after else None
        time.sleep(0.5)
    completed = _completed(jobmanager, job_id)
    durations = [int(c["end_to_end_duration"]) for c in completed] or [
        int(full["end_to_end_duration"])
    ]
    # Checkpoints while processing: their CPU is in the per-record figures, and with a
    # time-based interval a slower job takes more of them per record.
    during = sum(1 for c in completed if int(c["trigger_timestamp"]) <= done_epoch_ms)
    memory = _jvm_memory()
    savepoint = _savepoint(jobmanager, job_id, str(work / "savepoints"))
    # Cancelled, not stopped: a retained checkpoint is deleted when its job finishes.
    jobs.cancel_job(jobmanager, job_id)
    try:
        client.get_job_execution_result().result()
    except Exception:  # cancelled on purpose
        pass
    # The latest complete one (one in progress at the cancel has no _metadata).
    retained = sorted(
        (m.parent for m in (work / "checkpoints").glob("*/chk-*/_metadata")),
        key=lambda p: int(p.name.split("-")[1]),
    )
    return {
        "rate": marks["n"] / max(marks["last"] - marks["first"], 1e-9),
        "cpu_us": cpu_us,
        "run_cpu_us": marks["cpu"] * 1e6 / max(marks["n"] - 1, 1),
        "pass2_cpu_us": pass2_cpu_us(marks["cpu_marks"], total),
        "cpu_marks": marks["cpu_marks"],
        "checkpoint_mib": int(full["state_size"]) / 2**20,
        "checkpointed_mib": int(full.get("checkpointed_size") or 0) / 2**20,
        "checkpoint_ms": int(full["end_to_end_duration"]),
        "checkpoint_ms_max": max(durations),
        "checkpoints_while_processing": during,
        "checkpoint_path": retained[-1].as_uri(),
        "savepoint": savepoint,
        "savepoint_mib": _dir_mib(savepoint),
        **memory,
    }


def _savepoint(jobmanager: str, job_id: str, target: str) -> str:
    """Trigger a savepoint of the running job (it keeps running); its path."""
    body = {"target-directory": target, "cancel-job": False, "formatType": "CANONICAL"}
    request = jobs._call(jobmanager, "POST", f"/jobs/{job_id}/savepoints", body)["request-id"]
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            result = jobs._call(jobmanager, "GET", f"/jobs/{job_id}/savepoints/{request}")
        except ClusterError:  # timed out on a loaded machine: ask again
            continue
        if result["status"]["id"] == "COMPLETED":
            operation = result.get("operation") or {}
            if "location" not in operation:
                raise ClusterError(f"savepoint failed: {operation.get('failure-cause')}")
            return str(operation["location"])
        time.sleep(0.2)
    raise ClusterError("the savepoint did not complete in 600 s")


def _restore(
    kind: str, backend: str, keys: int, work: Path, path: str | None, flink_conf: list[str]
) -> float:
    """Seconds from submission until every task of a job restored from ``path`` is RUNNING."""
    port = free_port()
    jobmanager = f"localhost:{port}"
    env = _env(backend, work, port, path, flink_conf)
    _build(env, kind, keys, keys, str(work / "unused.json"))
    started = time.monotonic()
    client = env.execute_async(f"state-scale restore {kind} {backend} {keys}")
    job_id = str(client.get_job_id())
    took = None
    while time.monotonic() - started < 600:
        try:
            detail = jobs._call(jobmanager, "GET", f"/jobs/{job_id}")
        except ClusterError:
            time.sleep(0.1)
            continue
        counts = [v.get("tasks", {}) for v in detail.get("vertices", [])]
        if counts and all(c.get("RUNNING", 0) == sum(c.values()) for c in counts):
            took = time.monotonic() - started
            break
        time.sleep(0.1)
    jobs.cancel_job(jobmanager, job_id)
    try:
        client.get_job_execution_result().result()
    except Exception:  # cancelled on purpose
        pass
    if took is None:
        raise ClusterError(f"restore of {kind}/{backend}/{keys} from {path} did not run")
    return took


def _one(args: argparse.Namespace, keys: int, backend: str, kind: str) -> dict[str, Any]:
    """One configuration, in this process (a fresh JVM: its memory is this job's)."""
    work = Path(tempfile.mkdtemp(prefix="state-scale-"))
    load_start = os.getloadavg()[0]
    try:
        began = time.monotonic()
        result = _process(args, kind, backend, keys, work)
        conf = args.flink_conf
        empty = _restore(kind, backend, keys, work, None, conf)
        from_checkpoint = _restore(kind, backend, keys, work, result.pop("checkpoint_path"), conf)
        from_savepoint = _restore(kind, backend, keys, work, result.pop("savepoint"), conf)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result.update(
        keys=keys,
        backend=backend,
        kind=kind,
        start_empty_s=empty,
        restore_checkpoint_s=from_checkpoint,
        restore_savepoint_s=from_savepoint,
        took_s=time.monotonic() - began,
        load=os.getloadavg()[0],
        load_start=load_start,
        interval_ms=args.interval_ms,
        flink_conf=args.flink_conf,
    )
    return result


def _backend_label(result: dict[str, Any]) -> str:
    """The backend of a result as the plot names it: RocksDB with a bloom filter
    (``--flink-conf state.backend.rocksdb.use-bloom-filter=true``) is a line of its own."""
    bloom = "state.backend.rocksdb.use-bloom-filter=true" in (result.get("flink_conf") or [])
    return f"{result['backend']}, bloom filter" if bloom else str(result["backend"])


def plot(results: list[dict[str, Any]], path: str, note: str) -> None:
    """CPU per record while processing (left) and records/s (right) against the number of
    keys, one line per backend and job (the median where a configuration ran more than
    once)."""
    plt = plots._pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=plots._SIZE)
    series: dict[tuple[str, str], dict[int, list[dict[str, Any]]]] = {}
    for r in results:
        series.setdefault((_backend_label(r), r["kind"]), {}).setdefault(r["keys"], []).append(r)
    colors = {"baseline": plots._BASELINE, "agent": plots._AGENT}
    for (backend, kind), by_keys in sorted(series.items()):
        keys = sorted(by_keys)
        style = "-" if backend.startswith("rocksdb") else "--"
        label = f"{kind}, {backend}"
        for axis, figure in ((left, "pass2_cpu_us"), (right, "rate")):
            values = [
                statistics.median(
                    pass2_cpu_us(r["cpu_marks"], r["keys"] * 2) if figure not in r else r[figure]
                    for r in by_keys[k]
                )
                for k in keys
            ]
            axis.plot(
                keys, values, style, marker="o", label=label, color=colors.get(kind, "#43a047")
            )
    for axis in (left, right):
        axis.set_xscale("log")
        axis.set_xlabel("keys (log scale)")
        axis.grid(alpha=0.3, which="both")
        axis.legend(fontsize=8)
    left.set_ylabel("JVM CPU us per record, 2nd pass")
    left.set_title("CPU per record vs keys (2nd pass)")
    left.set_ylim(bottom=0)
    right.set_ylabel("records/s")
    right.set_title("Throughput vs keys (moves with the load)")
    right.set_ylim(bottom=0)
    plots._save(fig, path, note)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", default="10000,100000")
    parser.add_argument("--passes", type=int, default=2, help="inputs per key")
    parser.add_argument("--backends", default="hashmap,rocksdb")
    parser.add_argument("--kinds", default="baseline,agent")
    parser.add_argument(
        "--interval-ms",
        type=int,
        default=3000,
        help="checkpoint interval; from 60000 on, the checkpoint after the input is "
        "triggered at once (e.g. 86400000: none while processing, the CPU per record is "
        "the operator's without the checkpoints, whose cost per record depends on the rate)",
    )
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--json", metavar="PATH", help="append the results as JSON lines")
    parser.add_argument(
        "--marks", metavar="PATH", help="append progress marks (every 5 %%) as JSON lines"
    )
    parser.add_argument(
        "--plot",
        metavar="PNG",
        help="draw every result of --json (this run's and earlier ones') against the keys",
    )
    parser.add_argument(
        "--plot-only", action="store_true", help="with --plot and --json: draw, run nothing"
    )
    parser.add_argument(
        "--flink-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Flink option for every job (e.g. state.backend.rocksdb.use-bloom-filter=true)",
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)  # keys,backend,kind: in this process
    args = parser.parse_args()
    if args.one:
        keys, backend, kind = args.one.split(",")
        print("RESULT " + json.dumps(_one(args, int(keys), backend, kind)), flush=True)
        return
    if args.plot:
        plots.require()
        if not args.json:
            parser.error("--plot draws the results of --json PATH")
    load_before = plots.load_average()
    if args.plot_only:
        _draw(args, load_before)
        return
    print(f"load average {load_before:.1f} at start", flush=True)
    for keys in (int(k) for k in args.keys.split(",")):
        for backend in args.backends.split(","):
            for kind in args.kinds.split(","):
                command = [
                    sys.executable,
                    *("-m", "benchmarks.state_scale", "--one", f"{keys},{backend},{kind}"),
                    *("--passes", str(args.passes), "--interval-ms", str(args.interval_ms)),
                    *("--timeout", str(args.timeout)),
                    *(("--marks", args.marks) if args.marks else ()),
                    *(f"--flink-conf={item}" for item in args.flink_conf),
                ]
                proc = subprocess.run(
                    command, capture_output=True, text=True, check=False, timeout=args.timeout + 600
                )
                found = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
                if proc.returncode != 0 or not found:
                    print(f"{keys} {backend} {kind} failed:\n{proc.stderr[-3000:]}", flush=True)
                    continue
                result = json.loads(found[-1][len("RESULT ") :])
                print(
                    f"{keys:>8,} keys {backend:8s} {kind:8s} {result['rate']:7,.0f} rec/s "
                    f"{result['cpu_us']:5.0f} us CPU/rec "
                    f"(processing {result['run_cpu_us']:5.0f}, "
                    f"2nd pass {result['pass2_cpu_us']:5.0f})  "
                    f"checkpoint {result['checkpoint_mib']:6.1f} MiB "
                    f"(incr {result['checkpointed_mib']:6.1f}) {result['checkpoint_ms']:6d} ms "
                    f"(max {result['checkpoint_ms_max']} ms, "
                    f"{result['checkpoints_while_processing']} while processing)  savepoint "
                    f"{result['savepoint_mib']:6.1f} MiB  restore ckpt/sp/empty "
                    f"{result['restore_checkpoint_s']:.1f}/{result['restore_savepoint_s']:.1f}/"
                    f"{result['start_empty_s']:.1f} s  "
                    f"RSS {result['rss_mib']} MiB heap {result['heap_mib']} MiB  "
                    f"[{result['took_s']:.0f} s, load {result['load_start']:.1f} -> "
                    f"{result['load']:.1f}]",
                    flush=True,
                )
                if args.json:
                    with open(args.json, "a", encoding="utf-8") as fh:
                        fh.write(json.dumps(result) + "\n")

    if args.plot:
        _draw(args, load_before)


def _draw(args: argparse.Namespace, load_before: float) -> None:
    with open(args.json, encoding="utf-8") as fh:
        results = [json.loads(line) for line in fh if line.strip()]
    loads = [r[k] for r in results for k in ("load_start", "load") if k in r]
    intervals = sorted({r.get("interval_ms", args.interval_ms) for r in results})
    checkpoints = ", ".join(
        "none while processing" if i >= MANUAL_CHECKPOINT_MS else f"every {i} ms" for i in intervals
    )
    note = (
        f"python -m benchmarks.state_scale (each point a configuration in a fresh JVM, "
        f"parallelism 1, thread mode, 2 inputs per key, ~1.8 KB of state per key; "
        f"checkpoints: {checkpoints})  |  {os.cpu_count()} CPUs shared, load average "
        f"{min(loads, default=load_before):.0f}-{max(loads, default=load_before):.0f} "
        "during the runs"
    )
    plot(results, args.plot, note)


if __name__ == "__main__":
    main()
