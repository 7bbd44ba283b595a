"""The job of the upgrade test (tests/versions/test_upgrade.py), run on a local MiniCluster
by the Python of one PyFlink version, then by another's from the first one's savepoint.

    python upgrade_job.py IN_DIR OUT_DIR CALLS CONTROL [--mode M] [--parallelism N]
                          [--from-savepoint PATH]

The pipeline of tests/flink/ops_job.py (a monitored FileSource of JSON lines, the ops agent
with short-term memory and logged model calls, an exactly-once FileSink), every operator
with a uid. ``CONTROL`` is a folder: the job writes ``running`` when it runs; when the test
creates ``stop`` it stops with a savepoint (canonical format, under ``CONTROL/savepoints``)
and writes its path to ``savepoint``. Run by path, not with ``-m``: the repository is
appended to ``sys.path`` so that ``flink_agents`` comes from the venv (the installed
wheel) and only ``tests`` from the repository.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))

from pyflink.common import Configuration, Duration, WatermarkStrategy  # noqa: E402
from pyflink.common.serialization import Encoder  # noqa: E402
from pyflink.common.typeinfo import Types  # noqa: E402
from pyflink.datastream import StreamExecutionEnvironment  # noqa: E402
from pyflink.datastream.connectors.file_system import (  # noqa: E402
    FileSink,
    FileSource,
    RollingPolicy,
    StreamFormat,
)
from pyflink.java_gateway import get_gateway  # noqa: E402

from flink_agents.api.execution_environment import AgentsExecutionEnvironment  # noqa: E402
from tests.flink import agents  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("in_dir", "out_dir", "calls", "control"):
        parser.add_argument(name)
    parser.add_argument("--mode", default="thread")
    parser.add_argument("--parallelism", type=int, default=1)
    parser.add_argument("--from-savepoint")
    args = parser.parse_args()
    control = Path(args.control)

    conf = Configuration()
    if args.from_savepoint:
        conf.set_string("execution.savepoint.path", args.from_savepoint)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(args.parallelism)
    env.enable_checkpointing(300)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env, **{"python.execution-mode": args.mode, "test.calls_file": args.calls}
    )
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), args.in_dir)
        .monitor_continuously(Duration.of_millis(200))
        .build()
    )
    lines = env.from_source(source, WatermarkStrategy.no_watermarks(), "inputs").uid("inputs")
    records = lines.map(json.loads, output_type=Types.PICKLED_BYTE_ARRAY()).uid("parse")
    out = (
        agents_env.from_datastream(records, lambda r: r["key"])
        .apply(agents.ops_agent(0.05))
        .to_datastream()
    )
    out.map(json.dumps, output_type=Types.STRING()).uid("dump").sink_to(
        FileSink.for_row_format(args.out_dir, Encoder.simple_string_encoder())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    ).uid("sink")
    agents_env.configure_workers()
    client = env.execute_async("flink-agents upgrade test")
    (control / "running").write_text(str(client.get_job_id()))
    deadline = time.monotonic() + 600
    while not (control / "stop").exists():
        if time.monotonic() > deadline:
            client.cancel().result()
            raise SystemExit("no stop within 10 minutes: cancelled")
        time.sleep(0.2)
    fmt = get_gateway().jvm.org.apache.flink.core.execution.SavepointFormatType.CANONICAL
    target = (control / "savepoints").as_uri()
    # PyFlink's JobClient.stop_with_savepoint fails on 2.x (a Boolean argument py4j cannot
    # match): the Java client's is called.
    path = client._j_job_client.stopWithSavepoint(False, target, fmt).get()
    client.get_job_execution_result().result()
    (control / "savepoint").write_text(str(path))


if __name__ == "__main__":
    main()
