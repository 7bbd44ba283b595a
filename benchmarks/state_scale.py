"""State at scale: the agent's keyed state against a plain keyed function's, same bytes.

Every key holds short-term memory of about 1 KB (``profile``) and a chat history of 10
turns (``history``, about 0.8 KB pickled). The first input of a key writes both, each later
one reads them and replaces the history's oldest turn. ``--passes`` inputs per key, key
after key (``k{n % keys}``). The same state is held by two jobs:

- ``agent``: an agent whose one action does the above through ``ctx.short_term_memory``
  (thread mode, the operator's MapState of flattened paths);
- ``baseline``: a PyFlink ``KeyedProcessFunction`` with two pickled ``ValueState`` s;
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
CPU per record (thread mode: Python inside; the job's start-up included),
the full state's last checkpoint (size, incremental size, duration), the savepoint's
size, the restore times, and the JVM's resident memory and heap after a GC (the MiniCluster
runs in it, Python too in thread mode). Each configuration runs in a process of its own
(a fresh JVM), so its memory figures are its own.

Usage (a module: the Python workers import its functions)::

    .venv/bin/python -m benchmarks.state_scale [--keys 10000,100000] [--passes 2]
        [--backends hashmap,rocksdb] [--kinds baseline,agent] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
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
    """Writes ``{"first", "last", "n"}`` to ``path`` when the ``total``-th output passed."""

    def __init__(self, path: str, total: int) -> None:
        self._path, self._total = path, total

    def open(self, runtime_context: RuntimeContext) -> None:
        self._n = 0
        self._first = 0.0

    def map(self, value: Any) -> Any:
        self._n += 1
        if self._n == 1:
            self._first = time.time()
        if self._n == self._total:
            Path(self._path).write_text(
                json.dumps({"first": self._first, "last": time.time(), "n": self._n})
            )
        return value


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


def _env(backend: str, work: Path, port: int, restore: str | None) -> StreamExecutionEnvironment:
    conf = Configuration()
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


def _build(env: StreamExecutionEnvironment, kind: str, keys: int, total: int, progress: str):
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
    if kind in ("baseline", "mapscan", "mapget"):
        agents_env.configure_workers()
        out = (
            records.key_by(lambda r: r["key"])
            .process(
                Baseline() if kind == "baseline" else MapScan(scan=kind == "mapscan"),
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
    out.map(Progress(progress, total), output_type=Types.PICKLED_BYTE_ARRAY()).uid(
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
    env = _env(backend, work, port, None)
    env.enable_checkpointing(args.interval_ms)
    _build(env, kind, keys, total, progress)
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
    # One checkpoint triggered after the last output: all the state.
    full: dict[str, Any] | None = None
    while full is None:
        if time.monotonic() > deadline:
            raise ClusterError(f"{kind}/{backend}/{keys}: no checkpoint after the input")
        after = [
            c for c in _completed(jobmanager, job_id) if int(c["trigger_timestamp"]) > done_epoch_ms
        ]
        full = after[0] if after else None
        time.sleep(0.5)
    durations = [int(c["end_to_end_duration"]) for c in _completed(jobmanager, job_id)] or [
        int(full["end_to_end_duration"])
    ]
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
        "checkpoint_mib": int(full["state_size"]) / 2**20,
        "checkpointed_mib": int(full.get("checkpointed_size") or 0) / 2**20,
        "checkpoint_ms": int(full["end_to_end_duration"]),
        "checkpoint_ms_max": max(durations),
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


def _restore(kind: str, backend: str, keys: int, work: Path, path: str | None) -> float:
    """Seconds from submission until every task of a job restored from ``path`` is RUNNING."""
    port = free_port()
    jobmanager = f"localhost:{port}"
    env = _env(backend, work, port, path)
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
    try:
        began = time.monotonic()
        result = _process(args, kind, backend, keys, work)
        empty = _restore(kind, backend, keys, work, None)
        from_checkpoint = _restore(kind, backend, keys, work, result.pop("checkpoint_path"))
        from_savepoint = _restore(kind, backend, keys, work, result.pop("savepoint"))
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
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", default="10000,100000")
    parser.add_argument("--passes", type=int, default=2, help="inputs per key")
    parser.add_argument("--backends", default="hashmap,rocksdb")
    parser.add_argument("--kinds", default="baseline,agent")
    parser.add_argument("--interval-ms", type=int, default=3000)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--json", metavar="PATH", help="append the results as JSON lines")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # keys,backend,kind: in this process
    args = parser.parse_args()
    if args.one:
        keys, backend, kind = args.one.split(",")
        print("RESULT " + json.dumps(_one(args, int(keys), backend, kind)), flush=True)
        return
    print(f"load average {os.getloadavg()[0]:.1f} at start", flush=True)
    for keys in (int(k) for k in args.keys.split(",")):
        for backend in args.backends.split(","):
            for kind in args.kinds.split(","):
                command = [
                    sys.executable,
                    *("-m", "benchmarks.state_scale", "--one", f"{keys},{backend},{kind}"),
                    *("--passes", str(args.passes), "--interval-ms", str(args.interval_ms)),
                    *("--timeout", str(args.timeout)),
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
                    f"{result['cpu_us']:5.0f} us CPU/rec  "
                    f"checkpoint {result['checkpoint_mib']:6.1f} MiB "
                    f"(incr {result['checkpointed_mib']:6.1f}) {result['checkpoint_ms']:6d} ms "
                    f"(max {result['checkpoint_ms_max']} ms)  savepoint "
                    f"{result['savepoint_mib']:6.1f} MiB  restore ckpt/sp/empty "
                    f"{result['restore_checkpoint_s']:.1f}/{result['restore_savepoint_s']:.1f}/"
                    f"{result['start_empty_s']:.1f} s  "
                    f"RSS {result['rss_mib']} MiB heap {result['heap_mib']} MiB  "
                    f"[{result['took_s']:.0f} s, load {result['load']:.1f}]",
                    flush=True,
                )
                if args.json:
                    with open(args.json, "a", encoding="utf-8") as fh:
                        fh.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
