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


def _at_least(minimum: int) -> Any:
    def check(value: int) -> str | None:
        return None if value >= minimum else f"must be >= {minimum}"

    return check


def _writer(value: Any) -> str:
    writer = str(value).strip().lower()
    if writer not in ("auto", "process", "thread"):
        raise ValueError("must be auto, process or thread")
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
        check=_at_least(1),
    )
    MAX_ARRAY_ELEMENTS: ConfigOption[int] = ConfigOption(
        key="event-log.standard.max-array-elements",
        config_type=int,
        default=20,
        description="at STANDARD level, longer lists of a payload are cut",
        check=_at_least(1),
    )
    MAX_DEPTH: ConfigOption[int] = ConfigOption(
        key="event-log.standard.max-depth",
        config_type=int,
        default=5,
        description="at STANDARD level, deeper nesting of a payload is cut",
        check=_at_least(1),
    )
    MAX_FILE_BYTES: ConfigOption[int] = ConfigOption(
        key="event-log.rotation.max-file-bytes",
        config_type=int,
        default=100 * 1024 * 1024,
        description="a log file is rotated (.1, .2, ...) when it grows past this size "
        "(bytes, at least 1024)",
        check=_at_least(1024),
    )
    MAX_FILES: ConfigOption[int] = ConfigOption(
        key="event-log.rotation.max-files",
        config_type=int,
        default=5,
        description="rotated files kept per subtask (older ones are deleted; 0: none kept)",
        check=_at_least(0),
    )
    QUEUE_SIZE: ConfigOption[int] = ConfigOption(
        key="event-log.queue-size",
        config_type=int,
        default=100_000,
        description="records waiting for the writer; more are dropped and counted",
        check=_at_least(1),
    )
    FLUSH_MS: ConfigOption[int] = ConfigOption(
        key="event-log.flush-ms",
        config_type=int,
        default=200,
        description="how often the writer takes what is queued (ms)",
        check=_at_least(1),
    )
    WRITER: ConfigOption[str] = ConfigOption(
        key="event-log.writer",
        config_type=str,
        parse=_writer,
        default="auto",
        description="who makes and writes the lines: process (a child process of the same "
        "Python, off the job's GIL), thread (a thread of the job's process) or auto: "
        "process in a Flink job when this process may use 2 or more CPUs, else thread (the "
        "local environment, one CPU); process falls back to thread when it cannot start",
    )


register_options(EventLogOptions)

_TYPE_PREFIX = "event-log.type."
register_key_family(_TYPE_PREFIX, ".level", _level)


def writer_kind(config: Any, *, flink: bool) -> str:
    """``process`` or ``thread``: what ``event-log.writer`` means for a host (``flink``: a
    Flink subtask, else the local environment)."""
    writer = config.get(EventLogOptions.WRITER)
    if writer != "auto":
        return str(writer)
    return "process" if flink and _usable_cpus() >= 2 else "thread"


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def default_log_dir() -> str:
    """``<system temp dir>/flink-agents`` (as upstream)."""
    return os.path.join(tempfile.gettempdir(), "flink-agents")
