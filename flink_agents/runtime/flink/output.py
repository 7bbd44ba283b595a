"""The wire format of the agent function's outputs: ``(timestamp code, output)`` pairs.

A pair carries its input's timestamp, so that the operator after the function can put it
back on the output (outputs emitted from timers would otherwise carry none, or the drain
timer's). For the bridge jar's Java operator the pair is packed into one byte string
(:func:`pack_output`); without the jar it stays a Python tuple. See docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import pickle
import struct
from typing import Any

from flink_agents.api._function import dumps

#: Timestamp code of an output emitted while its input is processed: Flink already gave it
#: the input's timestamp (reading it would cost a call per record). ``Long.MIN_VALUE``.
KEEP_TIMESTAMP = -(2**63)
#: Timestamp code of an output whose input had no timestamp.
NO_TIMESTAMP = KEEP_TIMESTAMP + 1
#: Code of a pair that is no output but a dead letter (a failed run set aside): it goes to
#: the side output :data:`DEAD_LETTERS` (``CarriedTimestampOperator.DEAD_LETTER``).
DEAD_LETTER = KEEP_TIMESTAMP + 2
#: The id of the dead letters' side output (``CarriedTimestampOperator.DEAD_LETTERS``).
DEAD_LETTERS = "flink-agents-dead-letters"

#: A packed output's head: its timestamp code, a big-endian signed 64-bit integer.
_CODE = struct.Struct(">q")
_KEEP_HEAD = _CODE.pack(KEEP_TIMESTAMP)


def pack_output(ts: int, output: Any) -> bytes:
    """``(timestamp code, output)`` as one byte string: the code as 8 bytes (big-endian),
    then the pickled output (``org.flinkagents.flink.CarriedTimestampOperator`` splits it)."""
    head = _KEEP_HEAD if ts == KEEP_TIMESTAMP else _CODE.pack(ts)
    try:
        return head + pickle.dumps(output)
    except pickle.PicklingError:  # an object of a job script's class (see dumps)
        return head + dumps(output)


def timestamp_code(ts: int | None) -> int:
    """The code of an input timestamp as Flink reports it: None or ``Long.MIN_VALUE`` (after
    a Python operator) mean no timestamp."""
    return NO_TIMESTAMP if ts is None or ts == KEEP_TIMESTAMP else ts
