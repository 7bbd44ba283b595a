"""The event log's options (``event-log.*``, upstream's ``baseLogDir``)."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from flink_agents.api.core_options import ConfigOption, register_key_family, register_options

LEVELS = ("OFF", "STANDARD", "VERBOSE")


def _level(value: Any) -> str:
    level = str(value).strip().upper()
    if level not in LEVELS:
        raise ValueError(f"must be one of {', '.join(LEVELS)}")
    return level


def _writer(value: Any) -> str:
    writer = str(value).strip().lower()
    if writer not in ("process", "thread"):
        raise ValueError("must be process or thread")
    return writer


class EventLogOptions:
    """Options of the event log (upstream's names where Apache Flink Agents has them)."""

    ENABLED: ConfigOption[bool] = ConfigOption(
        key="event-log.enabled",
        config_type=bool,
        default=False,
        description="write the event log (JSON lines per subtask) to baseLogDir",
    )
    BASE_LOG_DIR: ConfigOption[str | None] = ConfigOption(
        key="baseLogDir",
        config_type=str,
        default=None,
        description="directory of the event log files (default: <tmp>/flink-agents)",
    )
    LEVEL: ConfigOption[str] = ConfigOption(
        key="event-log.level",
        config_type=str,
        parse=_level,
        default="STANDARD",
        description="default level of every event type: OFF, STANDARD (payload truncated) "
        "or VERBOSE (full payload); per type: event-log.type.<event type>.level",
    )
    MAX_STRING_LENGTH: ConfigOption[int] = ConfigOption(
        key="event-log.standard.max-string-length",
        config_type=int,
        default=2000,
        description="at STANDARD level, longer strings of a payload are cut",
    )
    MAX_ARRAY_ELEMENTS: ConfigOption[int] = ConfigOption(
        key="event-log.standard.max-array-elements",
        config_type=int,
        default=20,
        description="at STANDARD level, longer lists of a payload are cut",
    )
    MAX_DEPTH: ConfigOption[int] = ConfigOption(
        key="event-log.standard.max-depth",
        config_type=int,
        default=5,
        description="at STANDARD level, deeper nesting of a payload is cut",
    )
    MAX_FILE_BYTES: ConfigOption[int] = ConfigOption(
        key="event-log.rotation.max-file-bytes",
        config_type=int,
        default=100 * 1024 * 1024,
        description="a log file is rotated (.1, .2, ...) when it grows past this size",
    )
    MAX_FILES: ConfigOption[int] = ConfigOption(
        key="event-log.rotation.max-files",
        config_type=int,
        default=5,
        description="rotated files kept per subtask (older ones are deleted)",
    )
    QUEUE_SIZE: ConfigOption[int] = ConfigOption(
        key="event-log.queue-size",
        config_type=int,
        default=100_000,
        description="records waiting for the writer; more are dropped and counted",
    )
    FLUSH_MS: ConfigOption[int] = ConfigOption(
        key="event-log.flush-ms",
        config_type=int,
        default=200,
        description="how often the writer takes what is queued (ms)",
    )
    WRITER: ConfigOption[str] = ConfigOption(
        key="event-log.writer",
        config_type=str,
        parse=_writer,
        default="thread",
        description="who formats and writes the lines: thread (a thread of the job's "
        "process) or process (a child process of the same Python, off the job's GIL: faster "
        "with a spare core, slower on a saturated machine; falls back to thread when it "
        "cannot start)",
    )


register_options(EventLogOptions)

_TYPE_PREFIX = "event-log.type."
register_key_family(_TYPE_PREFIX, ".level", _level)


def default_log_dir() -> str:
    """``<system temp dir>/flink-agents`` (as upstream)."""
    return os.path.join(tempfile.gettempdir(), "flink-agents")
