"""Helpers for the Flink tests: environments in the mode under test, sources, collecting.

The execution mode comes from ``FLINK_AGENTS_TEST_MODE`` (``thread``, the default, or
``process``), so CI runs the same suite in both modes.
"""

from __future__ import annotations

import json
import os
from typing import Any

from pyflink.common import Configuration, WatermarkStrategy
from pyflink.common.typeinfo import Types
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import DataStream, ProcessFunction, StreamExecutionEnvironment

from flink_agents.api.execution_environment import AgentsExecutionEnvironment

MODE = os.environ.get("FLINK_AGENTS_TEST_MODE", "thread")


def make_env(parallelism: int = 1, **agents_config: Any) -> tuple[StreamExecutionEnvironment, Any]:
    """A fresh stream environment and the agents environment over it."""
    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.set_parallelism(parallelism)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env, **{"python.execution-mode": MODE, **agents_config}
    )
    return env, agents_env


def source(env: StreamExecutionEnvironment, records: list[dict[str, Any]]) -> DataStream:
    """A bounded stream of ``records`` (dicts; JSON on the wire, parsed in Python)."""
    return env.from_collection([json.dumps(r) for r in records], type_info=Types.STRING()).map(
        json.loads, output_type=Types.PICKLED_BYTE_ARRAY()
    )


class _FieldTimestamp(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value["ts"])


def with_timestamps(stream: DataStream) -> DataStream:
    """Event timestamps from the records' ``ts`` field."""
    return stream.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(_FieldTimestamp())
    )


class _StampTimestamp(ProcessFunction):
    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Any:
        yield {"ts": ctx.timestamp(), "value": value}


def stamped(stream: DataStream) -> DataStream:
    """Each record wrapped with the timestamp Flink carries for it."""
    return stream.process(_StampTimestamp(), output_type=Types.PICKLED_BYTE_ARRAY())


def collect(stream: DataStream) -> list[Any]:
    """Run the job and return every record of ``stream`` (small outputs only)."""
    with stream.execute_and_collect() as results:
        return list(results)


def local_outputs(agent: Any, records: list[dict[str, Any]], key: str | None) -> list[Any]:
    """What the local environment outputs for the same agent and input (values only)."""
    local = AgentsExecutionEnvironment.get_execution_environment()
    items = [{"key": r[key], "value": r} for r in records] if key else list(records)
    out = local.from_list(items).apply(agent).to_list()
    local.execute()
    return [next(iter(o.values())) for o in out]
