"""The job of tests/deploy/test_multi_taskmanager.py, submitted with ``flink-agents
submit ... -p 2``: 60 records over 6 keys through the memory agent (its parallelism is the
one the submission gives), outputs as JSON lines to a FileSink in ``OUT_DIR``.

    python spread_job.py OUT_DIR
"""

from __future__ import annotations

import json
import sys

from pyflink.common import WatermarkStrategy
from pyflink.common.serialization import Encoder
from pyflink.common.typeinfo import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSink
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from tests.flink import agents

N, KEYS = 60, 6


def record(n: int) -> dict:
    return {"key": f"k{int(n) % KEYS}", "i": int(n)}


def main(out_dir: str) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(500)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(env)
    numbers = env.from_source(
        NumberSequenceSource(0, N - 1), WatermarkStrategy.no_watermarks(), "n"
    )
    records = numbers.map(record, output_type=Types.PICKLED_BYTE_ARRAY())
    out = (
        agents_env.from_datastream(records, key_selector=lambda r: r["key"])
        .apply(agents.memory_agent(latency=0.01), uid="spread-agent")
        .to_datastream()
    )
    out.map(json.dumps, output_type=Types.STRING()).sink_to(
        FileSink.for_row_format(out_dir, Encoder.simple_string_encoder()).build()
    )
    agents_env.execute("flink-agents spread over TaskManagers")


if __name__ == "__main__":
    main(sys.argv[1])
