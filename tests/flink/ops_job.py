"""The job of the operations tests (tests/flink/test_operations.py), submitted with
``flink-agents submit`` to a standalone cluster.

    python ops_job.py IN_DIR OUT_DIR CALLS [--mode thread|process] [--latency S]
                      [--max-in-flight N] [--filter]

Reads JSON lines ``{"key", "i", "hold"}`` from the files that appear in ``IN_DIR`` (a
continuously monitored FileSource, so the test decides when inputs arrive), runs them
through ``tests.flink.agents.ops_agent`` (short-term memory per key, model calls logged to
``CALLS``) and writes the outputs as JSON lines to an exactly-once FileSink in ``OUT_DIR``.
``--filter`` adds an operator upstream of the agent (the changed job of an upgrade). Every
operator has a uid; the agent's come from ``apply``.
"""

from __future__ import annotations

import argparse
import json

from pyflink.common import Duration, WatermarkStrategy
from pyflink.common.serialization import Encoder
from pyflink.common.typeinfo import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import (
    FileSink,
    FileSource,
    RollingPolicy,
    StreamFormat,
)

from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from tests.flink import agents


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("in_dir")
    parser.add_argument("out_dir")
    parser.add_argument("calls")
    parser.add_argument("--mode", default="thread")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--max-in-flight", type=int, default=100)
    parser.add_argument("--filter", action="store_true")
    args = parser.parse_args()

    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(300)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env,
        **{
            "python.execution-mode": args.mode,
            "max-in-flight": args.max_in_flight,
            "test.calls_file": args.calls,
        },
    )
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), args.in_dir)
        .monitor_continuously(Duration.of_millis(200))
        .build()
    )
    lines = env.from_source(source, WatermarkStrategy.no_watermarks(), "inputs").uid("inputs")
    records = lines.map(json.loads, output_type=Types.PICKLED_BYTE_ARRAY()).uid("parse")
    if args.filter:
        records = records.filter(lambda r: r.get("keep", True)).uid("upstream-filter")
    out = (
        agents_env.from_datastream(records, lambda r: r["key"])
        .apply(agents.ops_agent(args.latency))
        .to_datastream()
    )
    out.map(json.dumps, output_type=Types.STRING()).uid("dump").sink_to(
        FileSink.for_row_format(args.out_dir, Encoder.simple_string_encoder())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    ).uid("sink")
    agents_env.execute("flink-agents ops test")


if __name__ == "__main__":
    main()
