"""What our Flink tests need beyond the kit's building blocks
(:mod:`flink_agents.testing.minicluster`: ``make_env``, ``source``, ``collect``,
``local_outputs``): the mode under test as a constant, event timestamps.

The execution mode comes from ``FLINK_AGENTS_TEST_MODE`` (``thread``, the default, or
``process``), so CI runs the same suite in both modes.
"""

from __future__ import annotations

from typing import Any

from pyflink.common import WatermarkStrategy
from pyflink.common.typeinfo import Types
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import DataStream, ProcessFunction

from flink_agents.testing.minicluster import default_mode

MODE = default_mode()


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
