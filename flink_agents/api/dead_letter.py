"""Dead letters: runs that failed, set aside instead of failing the job or being dropped.

With ``error-handling-strategy: dead-letter`` a run that fails (an action raises, a model
reply is unusable, the run exceeds ``max-events-per-run``...) ends at once: nothing of it
is committed (no outputs, no memory changes) and one :class:`DeadLetter` describes it. A
record that cannot become an input event at all (not JSON serializable, nested deeper than
JSON allows) is such a failed run under every strategy but ``fail``.

Where dead letters go:

- Flink: the side output of the agent's operator,
  ``builder.dead_letters()`` (a ``DataStream`` of :class:`DeadLetter`; call it after
  ``to_datastream()``), e.g. to a file or Kafka sink of their own;
- local environment: the list ``builder.dead_letters()`` returns, filled by ``execute()``.

Each is bounded in size (``dead-letter.max-chars`` per text field), so a huge poison
record cannot make a huge dead letter; secrets in its texts are masked as everywhere else.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


def bounded(text: str, limit: int) -> str:
    """``text``, cut to ``limit`` characters with a note of how many were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...[{len(text) - limit} more chars]"


def safe_repr(value: Any, limit: int) -> str:
    """``repr(value)``, bounded; a repr that fails or recurses is described instead."""
    try:
        text = repr(value)
    except RecursionError:
        text = f"<{type(value).__name__}: nested too deeply to show>"
    except Exception as exc:  # noqa: BLE001 - a broken __repr__ must not fail the run
        text = f"<{type(value).__name__}: repr failed: {type(exc).__name__}>"
    return bounded(text, limit)


class DeadLetter(BaseModel):
    """A failed run, set aside.

    Attributes:
        key: the input's key (its repr when it is no JSON value).
        reason: why the run failed: the error's type and message (masked, bounded).
        record: ``repr`` of the input record (masked, bounded).
        error_type: the class name of the error.
        action: the action that failed, if one did.
        event_type: the type of the event it was handling, if any.
        timestamp: when the run was set aside (seconds since the epoch).
    """

    model_config = ConfigDict(frozen=True)

    key: Any
    reason: str
    record: str
    error_type: str
    action: str | None = None
    event_type: str | None = None
    timestamp: float = Field(default_factory=time.time)
