"""Checkpointing and recovery: a failure in the middle of a bounded job loses no input,
writes no output twice to an exactly-once FileSink, and does not repeat model calls of runs
committed before the restored checkpoint."""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest
from pyflink.common import Configuration, WatermarkStrategy
from pyflink.common.serialization import Encoder
from pyflink.common.typeinfo import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSink, RollingPolicy
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from tests.flink import agents
from tests.flink.harness import MODE

pytestmark = pytest.mark.flink

N, KEYS, FAIL_AT = 300, 10, 100


def _slow_record(n: int) -> dict:
    time.sleep(0.02)
    return {"key": f"k{n % KEYS}", "i": int(n)}


def test_failure_and_restart_lose_nothing_and_repeat_no_committed_call(tmp_path) -> None:
    out_dir, marker, calls = tmp_path / "out", tmp_path / "failed", tmp_path / "calls.jsonl"
    conf = Configuration()
    conf.set_string("restart-strategy.type", "fixed-delay")
    conf.set_string("restart-strategy.fixed-delay.attempts", "3")
    conf.set_string("restart-strategy.fixed-delay.delay", "2 s")
    # One slot: the restart must get the failed attempt's slot back.
    conf.set_string("taskmanager.numberOfTaskSlots", "1")
    if MODE == "process":
        # PyFlink's process-mode (Beam) operators can take their TaskManager down when a
        # failover cancels them in the middle of a bundle: the flush thread and close() both
        # release the shared Beam environment ("Reference count must not be negative", a
        # fatal error; about 1 run in 15 here) and the restart finds no slot. Not ours to fix;
        # a second TaskManager gives the restart somewhere to go. (Thread mode has no Beam
        # operator: the whole job runs embedded.)
        conf.set_string("minicluster.number-of-taskmanagers", "2")
    # Small bundles: checkpoint barriers wait for the Python operators' open bundles.
    conf.set_string("python.fn-execution.bundle.size", "10")
    conf.set_string("python.fn-execution.bundle.time", "50")
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(1)
    env.enable_checkpointing(250)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env,
        **{
            "python.execution-mode": MODE,
            "test.marker": str(marker),
            "test.out_dir": str(out_dir),
            "test.calls_file": str(calls),
            "test.fail_at": FAIL_AT,
        },
    )
    numbers = env.from_source(
        NumberSequenceSource(0, N - 1), WatermarkStrategy.no_watermarks(), "numbers"
    )
    # The input trickles in (~20 ms a record) so that checkpoints complete while it lasts:
    # at its end the drain timers hold the operator until every run has finished.
    records = numbers.map(_slow_record, output_type=Types.PICKLED_BYTE_ARRAY())
    out = (
        agents_env.from_datastream(records, lambda r: r["key"])
        .apply(agents.recovery_agent(latency=0.05))
        .to_datastream()
    )
    out.map(json.dumps, output_type=Types.STRING()).sink_to(
        FileSink.for_row_format(str(out_dir), Encoder.simple_string_encoder())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    agents_env.execute("recovery")

    assert marker.exists(), "the injected failure did not happen"
    outputs = agents.finalized_outputs(str(out_dir))
    # No lost input, no output twice.
    assert sorted(o["i"] for o in outputs) == list(range(N))
    # Memory survived the restart exactly: the n-th input of a key saw count n.
    assert all(o["count"] == o["i"] // KEYS + 1 for o in outputs), outputs
    # Per-key order within each part file (files of different attempts have no order).
    for part in agents.finalized_files(str(out_dir)):
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
