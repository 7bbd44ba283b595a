"""Checkpointing and recovery: a failure in the middle of a bounded job loses no input,
writes no output twice to an exactly-once FileSink, and does not repeat model calls of runs
committed before the restored checkpoint, nor calls that completed before it (their records
are saved right before each checkpoint barrier)."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from typing import Any

import pytest
from pyflink.common import Configuration, WatermarkStrategy
from pyflink.common.serialization import Encoder
from pyflink.common.typeinfo import Types
from pyflink.datastream import MapFunction, RuntimeContext, StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSink, RollingPolicy
from pyflink.datastream.connectors.number_seq import NumberSequenceSource
from pyflink.java_gateway import get_gateway

from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.testing.minicluster import (
    committed_lines,
    committed_records,
    exactly_once_sink,
)
from tests.flink import agents
from tests.flink.harness import MODE

pytestmark = pytest.mark.flink

N, KEYS, FAIL_AT = 300, 10, 100


class _SlowRecords(MapFunction):
    """Makes the input records, ~20 ms each, logging when each one leaves (``{n, t, attempt}``
    lines): the first record an attempt after the failure sees again is where the source
    was when the restored checkpoint's barrier passed it."""

    def __init__(self, log_file: str) -> None:
        self._log_file = log_file
        self._attempt = 0

    def open(self, runtime_context: RuntimeContext) -> None:
        # The attempt number from a file (thread mode's runtime context has none): each
        # attempt opens the map once.
        counter = self._log_file + ".attempts"
        previous = int(open(counter).read()) if os.path.exists(counter) else -1
        self._attempt = previous + 1
        with open(counter, "w", encoding="utf-8") as fh:
            fh.write(str(self._attempt))

    def map(self, value: int) -> dict:
        n = int(value)
        time.sleep(0.02)
        with open(self._log_file, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"n": n, "t": time.time(), "attempt": self._attempt}) + "\n")
        return {"key": f"k{n % KEYS}", "i": n}


def _committed_parts(out_dir: Any) -> list[list[dict]]:
    """The records of each committed part file (files of different attempts have no order)."""
    return [[json.loads(line) for line in part] for part in committed_lines(out_dir)]


#: Slack for the time between a model call's log line and its durable record (seconds).
_RECORD_SLACK = 0.05


def _restartable_env(
    tmp_path,
    *,
    attempts: int,
    delay: str,
    bundle: tuple[int, int],
    checkpoint_ms: int,
    backend: str = "hashmap",
    min_pause_ms: int = 0,
    **config,
) -> tuple[StreamExecutionEnvironment, AgentsExecutionEnvironment]:
    """A one-slot MiniCluster job with checkpointing and a fixed-delay restart strategy, in
    the mode under test; ``bundle`` is (size, time in ms) of the Python bundles (checkpoint
    barriers wait for the open bundles in process mode). The test agents' files live in
    ``tmp_path``: ``failed`` (marker), ``out`` (sink) and ``calls.jsonl``."""
    conf = Configuration()
    conf.set_string("restart-strategy.type", "fixed-delay")
    conf.set_string("restart-strategy.fixed-delay.attempts", str(attempts))
    conf.set_string("restart-strategy.fixed-delay.delay", delay)
    # One slot: the restart must get the failed attempt's slot back. In process mode too:
    # PyFlink's Beam operators could stop the TaskManager while a failover closed them
    # ("Reference count must not be negative"), leaving the restart without a slot; the agent
    # operator now closes the slot's shared Python worker itself (BeamFailoverClose.java).
    conf.set_string("taskmanager.numberOfTaskSlots", "1")
    if backend == "rocksdb":
        # RocksDB with incremental checkpoints (files in tmp_path), as production jobs run.
        conf.set_string("state.backend.type", "rocksdb")
        conf.set_string("execution.checkpointing.incremental", "true")
        conf.set_string("execution.checkpointing.dir", (tmp_path / "checkpoints").as_uri())
    if min_pause_ms:
        conf.set_string("execution.checkpointing.min-pause", f"{min_pause_ms} ms")
    conf.set_string("python.execution-mode", MODE)  # the whole job, upstream maps too
    conf.set_string("python.fn-execution.bundle.size", str(bundle[0]))
    conf.set_string("python.fn-execution.bundle.time", str(bundle[1]))
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(1)
    env.enable_checkpointing(checkpoint_ms)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env,
        **{
            "python.execution-mode": MODE,
            "test.marker": str(tmp_path / "failed"),
            "test.out_dir": str(tmp_path / "out"),
            "test.calls_file": str(tmp_path / "calls.jsonl"),
            **config,
        },
    )
    return env, agents_env


# RocksDB (incremental checkpoints) for the main scenario only: the other test's point, the
# barrier hook, does not depend on the backend, and each run costs a job restart.
@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_failure_and_restart_lose_nothing_and_repeat_no_committed_call(tmp_path, backend) -> None:
    out_dir, marker, calls = tmp_path / "out", tmp_path / "failed", tmp_path / "calls.jsonl"
    sent = tmp_path / "sent.jsonl"
    env, agents_env = _restartable_env(
        tmp_path,
        backend=backend,
        attempts=3,
        delay="2 s",
        bundle=(10, 50),
        checkpoint_ms=250,
        **{
            "test.fail_at": FAIL_AT,
            # Runs stay in flight 0.2 s after their model call: calls completed and not
            # committed yet are what a checkpoint must hold.
            "test.hold": 0.2,
        },
    )
    numbers = env.from_source(
        NumberSequenceSource(0, N - 1), WatermarkStrategy.no_watermarks(), "numbers"
    )
    # The input trickles in (~20 ms a record) so that checkpoints complete while it lasts:
    # at its end the drain timers hold the operator until every run has finished.
    records = numbers.map(_SlowRecords(str(sent)), output_type=Types.PICKLED_BYTE_ARRAY())
    out = (
        agents_env.from_datastream(records, lambda r: r["key"])
        .apply(agents.recovery_agent(latency=0.05))
        .to_datastream()
    )
    exactly_once_sink(out, out_dir)
    agents_env.execute("recovery")

    assert marker.exists(), "the injected failure did not happen"
    outputs = committed_records(str(out_dir))
    # No lost input, no output twice.
    assert sorted(o["i"] for o in outputs) == list(range(N))
    # Memory survived the restart exactly: the n-th input of a key saw count n.
    assert all(o["count"] == o["i"] // KEYS + 1 for o in outputs), outputs
    # Per-key order within each part file (files of different attempts have no order).
    for part in _committed_parts(out_dir):
        per_key: dict[str, list[int]] = {}
        for o in part:
            per_key.setdefault(o["key"], []).append(o["i"])
        assert all(v == sorted(v) for v in per_key.values()), per_key

    lines = [json.loads(line) for line in calls.read_text().splitlines()]
    count = Counter(line["i"] for line in lines)
    committed = json.loads((tmp_path / "failed.committed").read_text())
    repeated = sorted(i for i, c in count.items() if c > 1)
    print(
        f"\n[{MODE}] committed before the failure: {len(committed)}, model calls: {len(lines)} "
        f"for {N} inputs, repeated: {len(repeated)}"
    )
    assert set(count) == set(range(N))
    # Outputs the sink had committed (a completed checkpoint) when the job failed belong to
    # runs committed in Flink state: after the restore they are not run again.
    assert committed, "no checkpoint completed before the failure: the test proves nothing"
    assert all(count[i] == 1 for i in committed), [i for i in committed if count[i] > 1]
    # Calls before the failure of runs committed afterwards were not repeated either,
    # beyond one retry per input.
    assert max(count.values()) <= 2
    # Every durable record is saved right before each checkpoint barrier, so only calls
    # completed after the restored checkpoint's barrier are repeated. That barrier
    # passed the source right before the first record the restarted job saw again, so it
    # reached the agent after the record before that one: every call logged before that
    # record left the map (less a slack) is in the checkpoint.
    log = [json.loads(line) for line in sent.read_text().splitlines()]
    resent = min(e["n"] for e in log if e["attempt"] > 0)
    assert resent > 0, "the job restarted from the beginning: no checkpoint was restored"
    barrier_after = next(e["t"] for e in log if e["attempt"] == 0 and e["n"] == resent - 1)
    first_call: dict[int, float] = {}
    for line in lines:
        first_call.setdefault(line["i"], line["t"])
    before = sorted(i for i, t in first_call.items() if t < barrier_after - _RECORD_SLACK)
    print(
        f"[{MODE}] restart resent from input {resent}; calls completed before the restored "
        f"checkpoint: {len(before)}, repeated: {sum(count[i] > 1 for i in before)}"
    )
    assert all(count[i] == 1 for i in before), [i for i in before if count[i] > 1]


WARMUPS, TICKS = 3, 40


def _scheduled_record(n: int) -> dict:
    """Three slow warm-up runs, then (3.5 s later, when they are done) the counted call,
    then a tick every 50 ms for 2 s."""
    n = int(n)
    if n < WARMUPS:
        return {"kind": "slow", "key": f"w{n}", "i": n, "seconds": 2.5}
    if n == WARMUPS:
        time.sleep(3.5)
        return {"kind": "call", "key": "call", "i": n}
    time.sleep(0.05)
    return {"kind": "tick", "key": f"t{n % 5}", "i": n}


def test_call_completed_before_a_checkpoint_is_not_repeated_after_a_restore(tmp_path) -> None:
    """A durable call completes; the run waits until a checkpoint taken after the call has
    completed, then fails, and its key's next timer fails the job. After the restore the run
    is repeated and its call is answered from the checkpoint, not made again.

    With PyFlink's own operators (no barrier hook) the call was made twice, in both modes:
    the record reaches keyed state only at a timer of its key, and the warm-up runs push
    that timer ~1 s away (its delay follows the observed run time), past the checkpoint and
    past the run's failure (whose records a timer does not save).
    """
    out_dir, marker, calls = tmp_path / "out", tmp_path / "failed", tmp_path / "calls.jsonl"
    env, agents_env = _restartable_env(
        tmp_path, attempts=2, delay="1 s", bundle=(5, 20), checkpoint_ms=100
    )
    numbers = env.from_source(
        NumberSequenceSource(0, WARMUPS + TICKS), WatermarkStrategy.no_watermarks(), "numbers"
    )
    records = numbers.map(_scheduled_record, output_type=Types.PICKLED_BYTE_ARRAY())
    out = (
        agents_env.from_datastream(records, lambda r: r["key"])
        .apply(agents.call_once_agent())
        .to_datastream()
    )
    exactly_once_sink(out, out_dir)
    agents_env.execute("durable call before a checkpoint")

    assert marker.exists(), "the injected failure did not happen"
    assert not (tmp_path / "failed.no-checkpoint").exists(), "no checkpoint after the call"
    outputs = committed_records(str(out_dir))
    assert sorted(o["i"] for o in outputs) == list(range(WARMUPS + TICKS + 1))
    lines = [json.loads(line) for line in calls.read_text().splitlines()]
    print(f"\n[{MODE}] calls of the durable call: {len(lines)}")
    assert [line["i"] for line in lines] == [WARMUPS], "the call was made again after the restore"


#: The paced source's rate; it runs until the test stops the job (its start comes seconds
#: before the Python operators run, up to 12 s on a loaded machine, so no fixed length fits).
ROWS_PER_SECOND = 25


def _committed_lines(out_dir: str) -> list[str]:
    """Lines of a FileSink's finalized part files, read while the job runs."""
    return [line for part in committed_lines(out_dir, skip_unreadable=True) for line in part]


class _FailAfterFirstCheckpoint(MapFunction):
    """Makes the records (0: the ``call``, then ticks) and fails the job once, at the first
    record after the checkpoint taken after record 0 has completed: that checkpoint is the
    one restored, and its barrier reached the agent right after the bundle holding the call
    (record 0 is committed by the side sink of the source's rows exactly then)."""

    def __init__(self, side_dir: str, marker: str) -> None:
        self._side_dir = side_dir
        self._marker = marker

    def map(self, row: Any) -> dict:
        n = int(row[0])
        if not os.path.exists(self._marker) and "+I[0]" in _committed_lines(self._side_dir):
            with open(self._marker, "w", encoding="utf-8") as fh:
                fh.write(f"failed at record {n}\n")
            raise RuntimeError(f"injected failure at record {n}")
        if n == 0:
            return {"kind": "call", "key": "call", "i": n}
        return {"kind": "tick", "key": f"t{n % 3}", "i": n}


def test_key_in_flight_at_the_restored_checkpoint_resumes_with_its_call_record(tmp_path) -> None:
    """A key's run is in flight (a durable call with a reconciler) when the checkpoint right
    after its input is taken; the job fails before the next one. After the restore the key
    resumes from the checkpoint: its processing-time timer and the call's pending marker are
    in it, so the reconciler answers and the call is not made again.

    In process mode, with bundles that only checkpoint barriers finish, the call's input is
    always in the bundle that the restored checkpoint's barrier finishes, and both failed
    every time before the bridge jar's operator handled them: PyFlink registered the timers
    Python set in that bundle by mailbox mails that ran after the snapshot (the key never
    resumed: its input was lost), and Beam's Python worker ran the barrier hook's timer
    before the bundle's records (the marker was not saved: the call was made again).
    """
    out_dir, marker, calls = tmp_path / "out", tmp_path / "failed", tmp_path / "calls.jsonl"
    side_dir = tmp_path / "rows"
    env, agents_env = _restartable_env(
        tmp_path,
        attempts=2,
        delay="1 s",
        bundle=(100_000, 3_600_000),
        checkpoint_ms=200,
        # The next barrier comes this long after a checkpoint completed: the side sink has
        # committed record 0 by then, and the records before that barrier fail the job.
        min_pause_ms=300,
    )
    t_env = agents_env.t_env
    # A paced source without Python: Python operators take their records only when a
    # barrier finishes their bundle here. (Its sequence generator holds every value of the
    # range in memory: the range is only long enough for the test.)
    t_env.execute_sql(
        "CREATE TEMPORARY TABLE numbers (n BIGINT) WITH ('connector' = 'datagen', "
        f"'rows-per-second' = '{ROWS_PER_SECOND}', 'fields.n.kind' = 'sequence', "
        "'fields.n.start' = '0', 'fields.n.end' = '20000')"
    )
    rows = t_env.to_data_stream(t_env.from_path("numbers"))
    rows.sink_to(
        FileSink.for_row_format(str(side_dir), Encoder.simple_string_encoder())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    # Not chained to the source: datagen is a legacy SourceFunction, and an error of an
    # operator chained to it ends the source's thread only; a checkpoint the task takes
    # before it fails has the source past the failed record, which is then lost (2 of 4 runs
    # in thread mode).
    records = rows.map(
        _FailAfterFirstCheckpoint(str(side_dir), str(marker)),
        output_type=Types.PICKLED_BYTE_ARRAY(),
    ).disable_chaining()
    out = (
        agents_env.from_datastream(records, lambda r: r["key"])
        .apply(agents.submit_or_echo_agent())
        .to_datastream()
    )
    exactly_once_sink(out, out_dir)
    agents_env.configure_workers()
    client = env.execute_async("a key in flight at the restored checkpoint")
    try:
        # Until the call's output is committed after the restore (or the deadline).
        deadline = time.time() + 90
        while time.time() < deadline and not any(
            o["kind"] == "call" for o in committed_records(str(out_dir))
        ):
            time.sleep(0.2)
    finally:
        # Stop with a draining savepoint: the source stops, every run finishes and both
        # sinks commit what they got.
        fmt = get_gateway().jvm.org.apache.flink.core.execution.SavepointFormatType.CANONICAL
        client._j_job_client.stopWithSavepoint(True, (tmp_path / "sp").as_uri(), fmt).get()
        client.get_job_execution_result().result()

    assert marker.exists(), "the injected failure did not happen"
    outputs = committed_records(str(out_dir))
    calls_made = [json.loads(line)["call"] for line in calls.read_text().splitlines()]
    print(f"\n[{MODE}] durable call log: {calls_made}")
    assert [o["result"] for o in outputs if o["kind"] == "call"] == ["reconciled-0"]
    assert calls_made == ["submit", "reconcile"]
    # Every record the source sent (once each in the side sink) has its output once.
    sent = sorted(int(line[3:-1]) for line in _committed_lines(str(side_dir)) if line)
    assert len(sent) > 1 and sent == list(range(len(sent)))
    assert sorted(o["i"] for o in outputs) == sent, "an input was lost or repeated"
