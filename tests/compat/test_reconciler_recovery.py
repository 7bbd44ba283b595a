"""A durable call with a reconciler across a real failure and restore on a MiniCluster: the
call's pending marker is in the checkpoint, so after the restore the reconciler is asked
and the function is not called again (upstream's "With a reconciler" semantics)."""

from __future__ import annotations

import json
import time

import pytest
from pyflink.common import Configuration, WatermarkStrategy
from pyflink.common.serialization import Encoder
from pyflink.common.typeinfo import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSink, RollingPolicy
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.testing.minicluster import committed_records
from tests.compat import recovery_agents
from tests.flink.harness import MODE

pytestmark = pytest.mark.flink

TICKS = 60


def _record(n: int) -> dict:
    """The call first, then a tick every 50 ms (checkpoints complete meanwhile)."""
    n = int(n)
    if n == 0:
        return {"kind": "call", "key": "call", "i": n}
    time.sleep(0.05)
    return {"kind": "tick", "key": f"t{n % 5}", "i": n}


def test_reconciler_answers_for_a_call_interrupted_by_a_failure(tmp_path) -> None:
    conf = Configuration()
    conf.set_string("restart-strategy.type", "fixed-delay")
    conf.set_string("restart-strategy.fixed-delay.attempts", "2")
    conf.set_string("restart-strategy.fixed-delay.delay", "1 s")
    conf.set_string("taskmanager.numberOfTaskSlots", "1")  # the restart needs its slot back
    conf.set_string("python.execution-mode", MODE)
    conf.set_string("python.fn-execution.bundle.size", "5")
    conf.set_string("python.fn-execution.bundle.time", "20")
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(1)
    env.enable_checkpointing(100)
    out_dir, marker, calls = tmp_path / "out", tmp_path / "failed", tmp_path / "calls.jsonl"
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env,
        **{
            "python.execution-mode": MODE,
            "test.marker": str(marker),
            "test.out_dir": str(out_dir),
            "test.calls_file": str(calls),
        },
    )
    numbers = env.from_source(
        NumberSequenceSource(0, TICKS), WatermarkStrategy.no_watermarks(), "numbers"
    )
    records = numbers.map(_record, output_type=Types.PICKLED_BYTE_ARRAY())
    out = (
        agents_env.from_datastream(records, lambda r: r["key"])
        .apply(recovery_agents.payment_agent())
        .to_datastream()
    )
    out.map(json.dumps, output_type=Types.STRING()).sink_to(
        FileSink.for_row_format(str(out_dir), Encoder.simple_string_encoder())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    agents_env.execute("reconciler after a restore")

    assert marker.exists(), "the injected failure did not happen"
    outputs = committed_records(str(out_dir))
    assert sorted(o["i"] for o in outputs) == list(range(TICKS + 1))
    calls_made = [json.loads(line)["call"] for line in calls.read_text().splitlines()]
    print(f"\n[{MODE}] durable call log: {calls_made}")
    # Submitted once (never again after the restore); the reconciler gave the outcome.
    assert calls_made == ["submit", "reconcile"]
    assert [o["result"] for o in outputs if o["kind"] == "call"] == ["reconciled-0"]
