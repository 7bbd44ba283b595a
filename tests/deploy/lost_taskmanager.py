"""A TaskManager lost mid-job on a local standalone cluster (issue 24, item 6).

The job (``python lost_taskmanager.py OUT_DIR CALLS_FILE``, submitted with ``-p 4``):
2,000 keys with two inputs each through the ops agent (``tests/flink/agents.py``: short-term
memory ``count`` and ``seen``), whose model takes 200 ms and appends ``{"i", "t", "pid"}``
per completed call to ``CALLS_FILE``; outputs as JSON lines to an exactly-once FileSink.

:func:`run_scenario` starts a cluster of 2 TaskManagers x 2 slots, submits the job, and once
a quarter of the model calls were made kills one TaskManager with ``kill -9`` and starts a
new one in its place (the job needs all 4 slots). Flink restarts the job from its last
checkpoint on the survivor and the new TaskManager. Used by
``tests/deploy/test_lost_taskmanager.py`` and ``benchmarks/lost_taskmanager.py``.

Which model calls are made again: the job restarts as a whole from the last completed
checkpoint C (the keyBy joins every subtask into one failover region). A call that completed
before C's barrier passed the agent operator is not repeated: its run was committed before
the barrier (its output is in C's sink transaction) or its durable record was saved right
before the barrier. Every call that completed after the barrier, until the failed attempt's
tasks were cancelled (on the killed TaskManager until the kill, on the survivor until Flink
noticed the loss and cancelled them), is made again. So the repeated calls are at most the
calls that completed between C's trigger (before its barrier) and the end of the failed
attempt's agent tasks: :func:`repeat_bound` counts them from the calls' times. In rates::

    repeated <= rate x (kill - C's trigger) + survivor's rate x (detection + cancellation)

where ``rate`` is the job's call rate (parallelism x ``max-in-flight`` / latency when the
agent is saturated), ``kill - C's trigger`` is less than the checkpoint interval plus a
checkpoint's duration, ``detection`` is ``heartbeat.interval`` x
``heartbeat.rpc-failure-threshold`` plus the JVMs' reaction (the JobManager's heartbeat RPCs
to the dead TaskManager fail) or less: a survivor's agent task whose input channel from the
dead TaskManager broke fails as soon as it reads that channel, but an agent that cannot keep
up reads its input only as places free, through the records already buffered ahead of the
break, so the heartbeats usually notice first (the survivor's side that *sends* to the dead
TaskManager sees the reset at once, but a sender does not fail on a lost receiver). And
``cancellation`` is the time the survivor's tasks take to stop.

The source (``source_rate``): by default the bounded sequence is read as fast as the agent
takes it: the agent is saturated and thousands of records wait in the network buffers in
front of it (the source task stays RUNNING, backpressured: it has not finished sending when
the kill comes). ``source_rate`` paces it instead (:func:`paced`), as a streaming source
whose rate the job keeps up with.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

KEYS, PASSES = 2000, 2
LATENCY = 0.2
# Per subtask: 4 x 8 / 0.2 s = 160 calls/s, about 25 s of calls. The calls made since the
# last checkpoint (on every subtask: the job restarts as a whole) are made again, so the
# rate times the time between checkpoints must stay well under 5 % of the 4,000 calls.
MAX_IN_FLIGHT = 8
CHECKPOINT_MS = 300
#: How the JobManager notices a lost TaskManager: heartbeat RPCs every ``interval`` ms; a
#: TaskManager is marked unreachable after ``threshold`` consecutive RPCs failed (a dead
#: process refuses them), or after ``timeout`` ms without an answer (a silent one: hung or
#: cut off; under load a TaskManager starting a job's Python can miss 5 s, so the timeout
#: stays long). The advice of docs/user-guide/operations/checkpointing.md; Flink's defaults
#: (10 s x 2, 50 s) notice a dead TaskManager after up to 20 s.
HEARTBEAT = {"interval": 1000, "threshold": 2, "timeout": 20000}
JOB = Path(__file__).resolve()


def record(n: int) -> dict:
    return {"key": f"k{int(n) % KEYS}", "i": int(n)}


PARALLELISM = 4
#: The agent's capacity in calls (= inputs) per second: 4 subtasks x 8 in flight / 0.2 s.
CAPACITY = PARALLELISM * MAX_IN_FLIGHT / LATENCY


def paced(rate: float) -> Any:
    """:func:`record` as a ``MapFunction`` that passes at most ``rate`` records per second
    over the job (its share per subtask): a streaming source that sends while the job runs
    instead of a bounded one read as fast as the agent takes it."""
    from pyflink.datastream import MapFunction

    class Paced(MapFunction):  # type: ignore[misc]
        def open(self, runtime_context: Any) -> None:
            # The job's parallelism (-p 4): thread mode's runtime context cannot tell it
            # (PyFlink 2.x asks Java for a method the task's context no longer has).
            self.interval = PARALLELISM / rate
            self.next_at = 0.0

        def map(self, value: int) -> dict:
            now = time.monotonic()
            if self.next_at > now:
                time.sleep(self.next_at - now)
                now = self.next_at
            # A stall (backpressure) is not made up with a burst: a cap, like a rate limiter.
            self.next_at = max(self.next_at, now - self.interval) + self.interval
            return record(value)

    return Paced()


def main(out_dir: str, calls_file: str, rate: str = "0") -> None:
    """The job; ``rate``: records per second of the source (0: as fast as it goes)."""
    from pyflink.common import WatermarkStrategy
    from pyflink.common.typeinfo import Types
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    from flink_agents.api.execution_environment import AgentsExecutionEnvironment
    from flink_agents.testing.minicluster import exactly_once_sink
    from tests.flink import agents

    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(CHECKPOINT_MS)
    # The agent is saturated and records queue in front of it: an aligned barrier would
    # wait behind them for seconds, an unaligned one overtakes them.
    env.get_checkpoint_config().enable_unaligned_checkpoints()
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env, **{"max-in-flight": MAX_IN_FLIGHT, "test.calls_file": calls_file}
    )
    numbers = env.from_source(
        NumberSequenceSource(0, KEYS * PASSES - 1), WatermarkStrategy.no_watermarks(), "n"
    )
    to_record = paced(float(rate)) if float(rate) else record
    records = numbers.map(to_record, output_type=Types.PICKLED_BYTE_ARRAY())
    out = (
        agents_env.from_datastream(records, key_selector=lambda r: r["key"])
        .apply(agents.ops_agent(LATENCY), uid="lost-tm-agent")
        .to_datastream()
    )
    exactly_once_sink(out, out_dir)
    agents_env.execute("flink-agents lost TaskManager")


def _lines(path: Path) -> int:
    try:
        with open(path, "rb") as fh:
            return sum(1 for _ in fh)
    except FileNotFoundError:
        return 0


def read_calls(path: Path) -> list[dict[str, Any]]:
    """The completed model calls ``{"i", "t", "pid"}`` in the calls file (a line cut by the
    kill is skipped)."""
    calls = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            calls.append(json.loads(line))
        except ValueError:
            continue
    return calls


def repeat_bound(calls: list[dict[str, Any]], *, since: float, until: float) -> dict[str, Any]:
    """The repeated calls and their bound (see the module's docstring).

    Args:
        calls: the completed calls (:func:`read_calls`).
        since: epoch seconds of the restored checkpoint's trigger.
        until: epoch seconds by which the failed attempt's tasks were gone.

    Returns:
        ``repeated`` (calls beyond one per input), ``window_calls`` (calls completed in
        ``[since, until]``: the bound), ``first_before`` and ``first_after`` (repeated
        inputs whose first call completed before ``since`` or after ``until``: 0 when the
        explanation holds) and ``window_s``.
    """
    first: dict[int, float] = {}
    seen: dict[int, int] = {}
    for call in sorted(calls, key=lambda c: c["t"]):
        seen[call["i"]] = seen.get(call["i"], 0) + 1
        first.setdefault(call["i"], call["t"])
    repeated = sum(n - 1 for n in seen.values())
    after = [i for i, n in seen.items() if n > 1 and first[i] > until]
    pids: dict[int, list[int]] = {}
    for call in sorted(calls, key=lambda c: c["t"]):
        if call["i"] in after:
            pids.setdefault(call["i"], []).append(call.get("pid", 0))
    return {
        "repeated": repeated,
        "window_calls": sum(1 for c in calls if since <= c["t"] <= until),
        "first_before": sum(1 for i, n in seen.items() if n > 1 and first[i] < since),
        "first_after": len(after),
        # Of those: in which processes their calls ran (one TaskManager's pid twice: both
        # calls in the same attempt or in the survivor), and how late the first one was.
        "first_after_pids": sorted(
            {str(p): sum(1 for x in pids.values() if x == p) for p in pids.values()}.items()
        ),
        "first_after_latest_s": max((first[i] - until for i in after), default=0.0),
        "window_s": until - since,
    }


def _taskmanager_pids(workdir: Path) -> list[int]:
    pids: list[int] = []
    for pid_file in (workdir / "pid").glob("*taskexecutor*.pid"):
        pids += [int(p) for p in pid_file.read_text(encoding="utf-8").split() if p.isdigit()]
    return [p for p in pids if _alive(p)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop(workdir: Path) -> None:
    """Stop the cluster; what the stop script missed (the replacement TaskManager, or all
    of it when the script timed out on a busy machine) is killed."""
    from flink_agents.errors import ClusterError
    from flink_agents.ops import cluster

    try:
        cluster.stop_cluster(workdir, timeout=180)
    except ClusterError:
        pass  # the figures are taken; the processes go below
    for pid_file in (workdir / "pid").glob("*.pid"):
        for pid in pid_file.read_text(encoding="utf-8").split():
            if pid.isdigit() and _alive(int(pid)):
                os.kill(int(pid), signal.SIGKILL)


def _all_running(rest: str, job_id: str) -> bool:
    from flink_agents.ops import jobs

    detail = jobs._call(rest, "GET", f"/jobs/{job_id}")
    counts = [v.get("tasks", {}) for v in detail.get("vertices", [])]
    # A restarted source may have finished already (its input is small).
    return bool(counts) and all(
        c.get("RUNNING", 0) + c.get("FINISHED", 0) == sum(c.values()) for c in counts
    )


def heartbeat_config(heartbeat: dict[str, int] | None = None) -> dict[str, Any]:
    """Flink's configuration for ``heartbeat`` (:data:`HEARTBEAT` when None)."""
    beat = {**HEARTBEAT, **(heartbeat or {})}
    return {
        "heartbeat.interval": beat["interval"],
        "heartbeat.timeout": beat["timeout"],
        "heartbeat.rpc-failure-threshold": beat["threshold"],
    }


def run_scenario(
    tmp: Path,
    *,
    kill_at: float = 0.25,
    timeout: float = 300.0,
    heartbeat: dict[str, int] | None = None,
    source_rate: float | None = None,
) -> dict[str, Any]:
    """Run the scenario in ``tmp``; the figures and the outputs (the cluster is stopped).

    ``heartbeat`` overrides parts of :data:`HEARTBEAT` (``interval``, ``threshold``,
    ``timeout``). ``source_rate``: records per second the source sends (None: as fast as
    the agent takes them, a backlog in front of it; see :func:`paced`)."""
    from flink_agents.ops import cluster, jobs
    from flink_agents.testing.minicluster import committed_records
    from flink_agents.testing.ports import free_port

    workdir, out_dir, calls = tmp / "cluster", tmp / "out", tmp / "calls.txt"
    port = free_port()
    rest = f"localhost:{port}"
    began = time.monotonic()
    cluster.start_cluster(
        workdir,
        port=port,
        slots=2,
        taskmanagers=2,
        # The restored checkpoint's trigger time stays in the history.
        extra_config={**heartbeat_config(heartbeat), "web.checkpoints.history": 1000},
    )
    try:
        started = time.monotonic() - began
        submitted = cluster.submit(
            JOB,
            workdir=workdir,
            args=[str(out_dir), str(calls), str(source_rate or 0)],
            detached=True,
            parallelism=PARALLELISM,
            timeout=timeout,
        )
        assert submitted.returncode == 0 and submitted.job_id, submitted.output[-3000:]
        job_id = submitted.job_id
        deadline = time.monotonic() + timeout
        total = KEYS * PASSES
        while _lines(calls) < total * kill_at:
            assert time.monotonic() < deadline, f"only {_lines(calls)} calls in {timeout}s"
            assert jobs.job_state(rest, job_id) not in jobs.TERMINAL_STATES
            time.sleep(0.05)
        victim = _taskmanager_pids(workdir)[0]
        calls_at_kill = _lines(calls)
        os.kill(victim, signal.SIGKILL)
        killed, killed_at = time.monotonic(), time.time()
        # The replacement (the job needs all 4 slots).
        home = cluster.pyflink_home()
        subprocess.run(
            ["bash", str(home / "bin" / "taskmanager.sh"), "start"],
            env=cluster._env(workdir),
            check=True,
            capture_output=True,
            timeout=120,
            start_new_session=True,
        )
        # Recovered: the job restarted (a restart counted) and every task runs again.
        recovered = replaced = None
        while recovered is None:
            if replaced is None and _taskmanagers(rest) >= 2:
                replaced = time.monotonic() - killed
            assert time.monotonic() < deadline, "the job did not recover"
            detail = jobs._call(rest, "GET", f"/jobs/{job_id}")
            state = detail.get("state")
            assert state not in ("FAILED", "CANCELED"), state
            restarts = _restarts(rest, job_id)
            if restarts and (state == "FINISHED" or _all_running(rest, job_id)):
                recovered = time.monotonic() - killed
            else:
                time.sleep(0.1)
        state = jobs.wait_for_state(rest, job_id, timeout=max(deadline - time.monotonic(), 1))
        finished = time.monotonic()
        outputs = committed_records(out_dir)
        stats = jobs.checkpoint_stats(rest, job_id)
        counts = stats.get("counts", {})
        return {
            "state": state,
            "restored": int(counts.get("restored", 0)),
            **_repeats(rest, job_id, stats, read_calls(calls), killed_at),
            "restarted_after_kill_s": _restarted_at(rest, job_id) - killed_at,
            "outputs": outputs,
            "calls": _lines(calls),
            "calls_at_kill": calls_at_kill,
            "killed_pid": victim,
            "runs": total,
            "restarts": _restarts(rest, job_id),
            "recovery_s": recovered,
            "replacement_registered_s": replaced,
            "cluster_start_s": started,
            "after_kill_s": finished - killed,
            "scenario_s": finished - began,
        }
    finally:
        _stop(workdir)


def _repeats(
    rest: str, job_id: str, stats: dict[str, Any], calls: list[dict[str, Any]], killed_at: float
) -> dict[str, Any]:
    """The repeated calls against their bound: the window from the restored checkpoint's
    trigger to the end of the failed attempt's agent tasks, and its parts (the kill's
    distance from that trigger, the time Flink took to notice the loss, the time the
    survivor's agent tasks took to stop after that)."""
    from flink_agents.ops import jobs

    restored = (stats.get("latest") or {}).get("restored") or {}
    history = {int(c["id"]): c for c in stats.get("history", [])}
    checkpoint = history.get(int(restored.get("id", -1)))
    try:
        failures = jobs._call(rest, "GET", f"/jobs/{job_id}/exceptions")
        entries = failures.get("exceptionHistory", {}).get("entries", [])
        noticed = min(int(e["timestamp"]) for e in entries) / 1000 if entries else None
        first = min(entries, key=lambda e: int(e["timestamp"])) if entries else {}
        stopped = _failed_attempt_end(rest, job_id)
    except Exception:  # noqa: BLE001 - the figures only: reported as unknown
        noticed = stopped = None
    if checkpoint is None or noticed is None or stopped is None:
        return {"repeated": None}
    text = f"{first.get('exceptionName', '')} {first.get('stacktrace', '')[:2000]}"
    since = int(checkpoint["trigger_timestamp"]) / 1000
    bound = repeat_bound(calls, since=since, until=stopped)
    return {
        **bound,
        "kill_after_checkpoint_s": killed_at - since,
        "noticed_after_kill_s": noticed - killed_at,
        "stopped_after_noticed_s": stopped - noticed,
        "rate_bound": int(CAPACITY * bound["window_s"]),
        # How the loss was noticed: the JobManager's heartbeat RPCs to the dead TaskManager
        # failed, or a survivor's task failed on its broken data connection.
        "noticed_by": "heartbeat"
        if "no longer reachable" in text
        else "data connection"
        if "Connection unexpectedly closed" in text or "TransportException" in text
        else text.split("\n")[0][:120],
    }


def _failed_attempt_end(rest: str, job_id: str) -> float | None:
    """Epoch seconds when the last agent task of the first (failed) attempt ended."""
    from flink_agents.ops import jobs

    detail = jobs._call(rest, "GET", f"/jobs/{job_id}")
    ends = []
    for vertex in detail.get("vertices", []):
        if "flink-agents" not in vertex.get("name", ""):
            continue
        for index in range(int(vertex.get("parallelism", 0))):
            attempt = jobs._call(
                rest,
                "GET",
                f"/jobs/{job_id}/vertices/{vertex['id']}/subtasks/{index}/attempts/0",
            )
            ends.append(int(attempt.get("end-time", -1)))
    return max(ends) / 1000 if ends and min(ends) > 0 else None


def _restarted_at(rest: str, job_id: str) -> float:
    """Epoch seconds when the job was RUNNING again after its restart."""
    from flink_agents.ops import jobs

    stamps = jobs._call(rest, "GET", f"/jobs/{job_id}").get("timestamps", {})
    return int(stamps.get("RUNNING", 0)) / 1000


def _taskmanagers(rest: str) -> int:
    from flink_agents.ops import jobs

    return len(jobs._call(rest, "GET", "/taskmanagers").get("taskmanagers", []))


def _restarts(rest: str, job_id: str) -> int:
    from flink_agents.ops import jobs

    found = jobs._call(rest, "GET", f"/jobs/{job_id}/metrics?get=numRestarts")
    return int(float(found[0]["value"])) if found else 0


def run_jobmanager_scenario(
    tmp: Path, *, kill_at: float = 0.25, timeout: float = 300.0
) -> dict[str, Any]:
    """The JobManager killed instead: standalone mode without high availability
    (ZooKeeper or Kubernetes) keeps no job across a JobManager's restart, so a new one is
    started and the job submitted again from its latest checkpoint (``-s``, as a
    savepoint), found in the job's checkpoint directory."""
    from flink_agents.ops import cluster, jobs
    from flink_agents.testing.minicluster import committed_records
    from flink_agents.testing.ports import free_port

    workdir, out_dir, calls = tmp / "cluster", tmp / "out", tmp / "calls.txt"
    checkpoints = tmp / "checkpoints"
    port = free_port()
    rest = f"localhost:{port}"
    total = KEYS * PASSES
    cluster.start_cluster(
        workdir,
        port=port,
        slots=2,
        taskmanagers=2,
        extra_config=heartbeat_config(),
    )
    try:
        args = [str(out_dir), str(calls)]
        # Where the resubmission after the lost JobManager finds the latest checkpoint.
        flink_args = [f"-Dexecution.checkpointing.dir={checkpoints.as_uri()}"]
        first = cluster.submit(
            JOB, workdir=workdir, args=args, detached=True, parallelism=4, flink_args=flink_args
        )
        assert first.returncode == 0 and first.job_id, first.output[-3000:]
        deadline = time.monotonic() + timeout
        while _lines(calls) < total * kill_at:
            assert time.monotonic() < deadline, f"only {_lines(calls)} calls in {timeout}s"
            time.sleep(0.05)
        (jobmanager,) = [
            int(p)
            for f in (workdir / "pid").glob("*standalonesession*.pid")
            for p in f.read_text(encoding="utf-8").split()
            if p.isdigit() and _alive(int(p))
        ]
        calls_at_kill = _lines(calls)
        os.kill(jobmanager, signal.SIGKILL)
        killed = time.monotonic()
        home = cluster.pyflink_home()
        subprocess.run(
            ["bash", str(home / "bin" / "jobmanager.sh"), "start"],
            env=cluster._env(workdir),
            check=True,
            capture_output=True,
            timeout=120,
            start_new_session=True,
        )
        # The TaskManagers register with the new JobManager once their old tasks are gone.
        while True:
            assert time.monotonic() < deadline, "the JobManager did not come back"
            status = cluster.cluster_status(workdir)
            if status.running and status.slots_available >= 4:
                break
            time.sleep(0.2)
        back = time.monotonic() - killed
        # The latest complete one (a checkpoint in progress at the kill has no _metadata).
        latest = max(
            (m.parent for m in checkpoints.glob(f"{first.job_id}/chk-*/_metadata")),
            key=lambda p: int(p.name.split("-")[1]),
        )
        second = cluster.submit(
            JOB,
            workdir=workdir,
            args=args,
            detached=True,
            parallelism=4,
            flink_args=flink_args,
            from_savepoint=str(latest),
        )
        assert second.returncode == 0 and second.job_id, second.output[-3000:]
        state = jobs.wait_for_state(
            rest, second.job_id, timeout=max(deadline - time.monotonic(), 1)
        )
        return {
            "state": state,
            "outputs": committed_records(out_dir),
            "calls": _lines(calls),
            "calls_at_kill": calls_at_kill,
            "runs": total,
            "jobmanager_back_s": back,
            "restored_from": latest.name,
            "after_kill_s": time.monotonic() - killed,
        }
    finally:
        _stop(workdir)


if __name__ == "__main__":
    main(*sys.argv[1:4])
