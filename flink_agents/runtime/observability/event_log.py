"""The event log: every event of a run, and its actions and calls, as JSON lines.

One file per host instance (a Flink subtask, or a local runner):
``{baseLogDir}/events-{jobId}-{taskName}-{subtask}.log``, rotated by size. Each line is one
record with ``record`` = ``event`` (an event sent: key, run id, event id, parent event id,
type, the action that sent it, its duration and token usage, payload), ``action`` (an action
execution), ``call`` (a model, tool or other durable call) or ``run`` (a run ended; its timestamp is
its start). ``flink-agents trace`` reads them back (``runtime/observability/trace.py``).

The run thread serializes each event's payload (pydantic_core, so no event stays alive in the
queue) and appends it with plain values to a bounded queue; a writer thread makes the records
(redaction, truncation: a payload that needs neither is spliced in as it is) and writes every
``event-log.flush-ms``. Writing is best
effort: a full queue drops records, a failing disk (full, read-only) drops them too; both
are counted (``eventLogDropped``, ``eventLogWriteErrors``) and warned about once, and the job
goes on.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_core import to_json, to_jsonable_python

from flink_agents.api.core_options import AgentConfiguration, ConfigOption, register_options
from flink_agents.api.events.event import Event
from flink_agents.plan.agent_plan import _SECRET_NAME
from flink_agents.runtime.metrics import SimpleMetricGroup
from flink_agents.runtime.observability import RunInfo, RunObserver

log = logging.getLogger("flink_agents.event_log")

LEVELS = ("OFF", "STANDARD", "VERBOSE")


def _level(value: Any) -> str:
    level = str(value).strip().upper()
    if level not in LEVELS:
        raise ValueError(f"must be one of {', '.join(LEVELS)}")
    return level


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
        description="records waiting for the writer thread; more are dropped and counted",
    )
    FLUSH_MS: ConfigOption[int] = ConfigOption(
        key="event-log.flush-ms",
        config_type=int,
        default=200,
        description="how often the writer thread writes what is queued (ms)",
    )


register_options(EventLogOptions)

_TYPE_PREFIX = "event-log.type."


def default_log_dir() -> str:
    """``<system temp dir>/flink-agents`` (as upstream)."""
    return os.path.join(tempfile.gettempdir(), "flink-agents")


def _safe(part: Any) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(part))[:80]


class _Limits:
    def __init__(self, config: AgentConfiguration) -> None:
        self.string = config.get(EventLogOptions.MAX_STRING_LENGTH)
        self.array = config.get(EventLogOptions.MAX_ARRAY_ELEMENTS)
        self.depth = config.get(EventLogOptions.MAX_DEPTH)


def redact(value: Any, secrets: Sequence[str]) -> Any:
    """``value`` (JSON form) with strings under secret-like keys (the plan's rule) and every
    known secret value inside strings masked."""
    return _clean(value, secrets, None, 0)[0]


def truncate(value: Any, limits: _Limits) -> tuple[Any, bool]:
    """``value`` cut to the STANDARD limits, and whether anything was cut."""
    return _clean(value, (), limits, 0)


def _clean(
    value: Any, secrets: Sequence[str], limits: _Limits | None, depth: int
) -> tuple[Any, bool]:
    """One walk for both: redaction always, truncation when ``limits`` are given."""
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, "***")
        if limits is not None and len(value) > limits.string:
            return f"{value[: limits.string]}...[{len(value) - limits.string} more chars]", True
        return value, False
    if isinstance(value, dict):
        if limits is not None and depth >= limits.depth:
            return f"[dict nested deeper than {limits.depth}]", True
        cut = False
        out: dict[str, Any] = {}
        for k, v in value.items():
            if isinstance(v, str) and v and isinstance(k, str) and _SECRET_NAME.search(k):
                out[k] = "***"
                continue
            out[k], c = _clean(v, secrets, limits, depth + 1)
            cut = cut or c
        return out, cut
    if isinstance(value, list):
        if limits is not None and depth >= limits.depth:
            return f"[list nested deeper than {limits.depth}]", True
        cut = False
        items = value if limits is None else value[: limits.array]
        cleaned = []
        for v in items:
            item, c = _clean(v, secrets, limits, depth + 1)
            cleaned.append(item)
            cut = cut or c
        if limits is not None and len(value) > limits.array:
            cleaned.append(f"...[{len(value) - limits.array} more items]")
            cut = True
        return cleaned, cut
    return value, False


# A JSON string literal (as pydantic_core writes it: only ``"``, ``\\`` and control characters
# escaped, so a substring of a string value appears as its UTF-8 bytes).
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_PAIR = re.compile(rb"\[\]|\{\}")
_ID_TYPE = {"id", "type"}
# A key the plan's secret-name rule matches, followed by a string value: the rule ends with
# ``$`` (which also matches before a final newline, written ``\n`` in JSON); were it not
# anchored, any occurrence of it counts (conservative).
_SECRET_KEY_PATTERN = (
    "(?:" + _SECRET_NAME.pattern[:-1] + r')(?:\\n)?":"'
    if _SECRET_NAME.pattern.endswith("$")
    else _SECRET_NAME.pattern
)
_SECRET_KEY = re.compile(_SECRET_KEY_PATTERN, _SECRET_NAME.flags)
# Case-insensitive matching is several times slower than matching lowered bytes; for ASCII
# text with a lower-case rule both agree (Unicode case folding only adds non-ASCII letters).
_SECRET_KEY_ASCII = (
    re.compile(_SECRET_KEY_PATTERN.encode())
    if _SECRET_KEY_PATTERN.lower() == _SECRET_KEY_PATTERN and _SECRET_KEY_PATTERN.isascii()
    else None
)


def _secret_key_in(data: bytes) -> bool:
    if _SECRET_KEY_ASCII is not None and data.isascii():
        return _SECRET_KEY_ASCII.search(data.lower()) is not None
    return _SECRET_KEY.search(data.decode()) is not None


def _needs_escape(text: str) -> bool:
    return '"' in text or "\\" in text or any(ord(c) < 0x20 for c in text)


def _key(key: Any) -> Any:
    return key if isinstance(key, (str, int, float, bool, type(None))) else repr(key)


def _error(exc: BaseException | None) -> str | None:
    return None if exc is None else f"{type(exc).__name__}: {exc}"


class EventLogObserver(RunObserver):
    """Queues what runs do for the :class:`_Writer`.

    Args:
        config: the agent configuration (event log options).
        path: the log file.
        secrets: secret values to mask (the plan's).
        metrics: the agent metric group (for the drop and error counters).
        ids: fields added to every record (``jobId``, ``subtask``).
    """

    def __init__(
        self,
        config: AgentConfiguration,
        path: str,
        secrets: Sequence[str],
        metrics: SimpleMetricGroup,
        ids: Mapping[str, Any],
    ) -> None:
        self.config = config
        self.default_level = config.get(EventLogOptions.LEVEL)
        self._levels: dict[str, str] = {}
        self._max = config.get(EventLogOptions.QUEUE_SIZE)
        self.queue: deque[tuple[Any, ...]] = deque()
        self.dropped = metrics.get_counter("eventLogDropped")
        self._warned_drop = False
        self.writer = _Writer(self, path, secrets, metrics, dict(ids))

    def level_of(self, event_type: str) -> str:
        """The level of an event type (``event-log.type.<type>.level``, else the default)."""
        level = self._levels.get(event_type)
        if level is None:
            own = self.config.get_str(f"{_TYPE_PREFIX}{event_type}.level")
            level = self._levels[event_type] = _level(own) if own else self.default_level
        return level

    def _put(self, item: tuple[Any, ...]) -> None:
        if len(self.queue) >= self._max:
            self.dropped.inc()
            if not self._warned_drop:
                self._warned_drop = True
                log.warning(
                    "event log queue full (%d records): records are dropped and counted in "
                    "eventLogDropped; raise event-log.queue-size or lower event-log.level",
                    self._max,
                )
            return
        self.queue.append(item)

    # -- observer ------------------------------------------------------------------------------
    def events_sent(
        self, run: RunInfo, events: Sequence[Event], parent: Event | None, action: str | None
    ) -> None:
        scratch = run.data.pop(id(self), None)
        now = time.time()
        for event in events:
            level = self.level_of(event.type)
            if level == "OFF":
                continue
            # The payload's JSON, made here (pydantic_core, ~1-3 us): a queued event would keep
            # its object graph alive until the writer runs, and the garbage collector's walks
            # over those survivors cost more than this (measured: ~50 us per run).
            try:
                body: bytes | Event = to_json(event, fallback=str, exclude=_ID_TYPE)
            except Exception:  # noqa: BLE001 - the writer reports it as an error record
                body = event
            self._put(
                (
                    "event",
                    run.key,
                    run.run_id,
                    now,
                    event.id,
                    event.type,
                    body,
                    None if parent is None else parent.id,
                    action,
                    level,
                    scratch,
                )
            )

    def action_finished(
        self,
        run: RunInfo,
        action: str,
        event: Event,
        started: float,
        seconds: float,
        error: BaseException | None,
        outcome: str | None,
    ) -> None:
        scratch = run.data.get(id(self))
        if scratch is None:
            scratch = run.data[id(self)] = {}
        scratch["durationMs"] = seconds  # in seconds: the writer rounds it to ms (off this thread)
        self._put(
            (
                "action",
                run.key,
                run.run_id,
                run.started + (started - run.started_perf),
                action,
                event.id,
                event.type,
                seconds,
                _error(error),
                outcome,
            )
        )

    def call_finished(
        self,
        run: RunInfo,
        action: str,
        kind: str,
        name: str,
        started: float,
        seconds: float,
        result: Any,
        error: BaseException | None,
        replayed: bool,
    ) -> None:
        usage = None
        extra = getattr(result, "extra_args", None) if kind == "model" else None
        if extra:
            usage = extra.get("usage")
            if usage:
                scratch = run.data.get(id(self))
                if scratch is None:
                    scratch = run.data[id(self)] = {}
                total = scratch.setdefault("usage", {})
                prompt = int(usage.get("prompt_tokens") or 0)
                completion = int(usage.get("completion_tokens") or 0)
                total["prompt_tokens"] = total.get("prompt_tokens", 0) + prompt
                total["completion_tokens"] = total.get("completion_tokens", 0) + completion
                total["total_tokens"] = total.get("total_tokens", 0) + int(
                    usage.get("total_tokens") or prompt + completion
                )
        self._put(
            (
                "call",
                run.key,
                run.run_id,
                run.started + (started - run.started_perf),
                action,
                kind,
                name,
                seconds,
                usage,
                _error(error),
                replayed,
            )
        )

    def run_finished(self, run: RunInfo, seconds: float, error: BaseException | None) -> None:
        run.data.pop(id(self), None)
        self._put(("run", run.key, run.run_id, run.started, seconds, _error(error)))

    def close(self) -> None:
        """Write what is queued and stop the writer thread."""
        self.writer.close()


class _Writer:
    """The writer thread: formats queued records and appends them to the file."""

    def __init__(
        self,
        observer: EventLogObserver,
        path: str,
        secrets: Sequence[str],
        metrics: SimpleMetricGroup,
        ids: dict[str, Any],
    ) -> None:
        config = observer.config
        self.observer = observer
        self.path = path
        self.secrets = [s for s in secrets if isinstance(s, str) and s]
        # The fast path looks for secrets in JSON bytes: only those written as themselves.
        self._secret_bytes: list[bytes] | None = (
            None
            if any(_needs_escape(s) for s in self.secrets)
            else [s.encode() for s in self.secrets]
        )
        self.ids = ids
        self.limits = _Limits(config)
        # A string literal with more than max-string-length bytes inside (a JSON string has at
        # least as many bytes as characters; the gap between two literals may match too).
        self._long = re.compile(rb'"(?:[^"\\]|\\.){%d}' % (self.limits.string + 1), re.S)
        self.max_bytes = config.get(EventLogOptions.MAX_FILE_BYTES)
        self.max_files = config.get(EventLogOptions.MAX_FILES)
        self.interval = config.get(EventLogOptions.FLUSH_MS) / 1000.0
        self.errors = metrics.get_counter("eventLogWriteErrors")
        self.written = metrics.get_counter("eventLogRecordsWritten")
        self._warned = False
        self._file: Any = None
        self._size = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._loop, name="flink-agents-event-log", daemon=True
        )
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.drain()
        self.drain()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        with self._lock:
            if self._file is not None:
                try:
                    self._file.close()
                except OSError:
                    pass
                self._file = None

    def drain(self) -> None:
        """Format and write everything queued (best effort)."""
        queue = self.observer.queue
        if not queue:
            return
        with self._lock:
            lines: list[bytes] = []
            while queue:
                item = queue.popleft()
                try:
                    line = self._event_line(item) if item[0] == "event" else None
                    lines.append(line or to_json(self._record(item), fallback=str))
                except Exception as exc:  # noqa: BLE001 - a bad record must not stop the log
                    error = {"record": "error", "error": _error(exc), **self.ids}
                    lines.append(json.dumps(error, default=str).encode())
            self._write(lines)

    def _write(self, lines: list[bytes]) -> None:
        start = 0  # lines before it are written
        try:
            if self._file is None:
                os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
                self._file = open(self.path, "ab")  # noqa: SIM115 - kept open
                self._size = self._file.tell()
            # One write per file: a batch that crosses max-file-bytes is split at the line
            # where the file would grow past it, so every file stays under the limit (but
            # one line longer than the limit) however the drain happened to batch records.
            size = self._size
            for i, line in enumerate(lines):
                n = len(line) + 1
                if size and size + n > self.max_bytes:
                    if i > start:
                        self._append(lines[start:i])
                    start = i
                    self._rotate()
                    size = 0
                size += n
            self._append(lines[start:])
        except OSError as exc:
            self.errors.inc(len(lines) - start)
            if self._file is not None:
                try:
                    self._file.close()
                except OSError:
                    pass
                self._file = None
            if not self._warned:
                self._warned = True
                log.warning(
                    "cannot write the event log %s (%s); its records are dropped and counted "
                    "in eventLogWriteErrors (the job goes on)",
                    self.path,
                    exc,
                )

    def _append(self, lines: list[bytes]) -> None:
        data = b"\n".join(lines) + b"\n"
        self._file.write(data)
        self._file.flush()
        self._size += len(data)
        self.written.inc(len(lines))

    def _rotate(self) -> None:
        self._file.close()
        self._file = None
        if self.max_files <= 0:
            os.remove(self.path)
        else:
            oldest = f"{self.path}.{self.max_files}"
            if os.path.exists(oldest):
                os.remove(oldest)
            for i in range(self.max_files - 1, 0, -1):
                if os.path.exists(f"{self.path}.{i}"):
                    os.replace(f"{self.path}.{i}", f"{self.path}.{i + 1}")
            os.replace(self.path, f"{self.path}.1")
        self._file = open(self.path, "ab")  # noqa: SIM115 - kept open
        self._size = 0

    def _plain(self, data: bytes, limits: _Limits | None) -> bool:
        """Whether a payload's JSON certainly needs no redaction (and, with ``limits``, no
        truncation); conservative byte checks, any doubt is False (then the walk decides)."""
        secrets = self._secret_bytes
        if secrets is None or _secret_key_in(data):
            return False
        for secret in secrets:
            if secret in data:
                return False
        if limits is None:
            return True
        if len(data) > limits.string and self._long.search(data):
            return False
        if data.count(b",") < limits.array and data.count(b"{") + data.count(b"[") <= limits.depth:
            return True
        # Count the structure only (strings emptied): n items of a list have n - 1 commas;
        # removing innermost bracket pairs ``depth`` times leaves nothing iff no nesting is deeper.
        structure = _STRING.sub(b'""', data)
        if structure.count(b",") >= limits.array:
            return False
        brackets = structure.translate(None, _NOT_BRACKETS)
        for _ in range(limits.depth):
            brackets = _PAIR.sub(b"", brackets)
            if not brackets:
                return True
        return not brackets

    def _event_line(self, item: tuple[Any, ...]) -> bytes | None:
        """The fast path of an event record: the event serialized once and spliced in when
        nothing in it needs redaction or truncation; None when the walk must decide."""
        _, key, run_id, ts, event_id, event_type, data, parent, action, level, scratch = item
        if (
            not isinstance(data, bytes)
            or data[:1] != b"{"
            or not self._plain(data, self.limits if level == "STANDARD" else None)
        ):
            return None
        record = self._event_head(
            key, run_id, ts, event_id, event_type, parent, action, level, scratch
        )
        return b'%s,"payload":%s}' % (to_json(record, fallback=str)[:-1], data)

    def _event_head(
        self,
        key: Any,
        run_id: str,
        ts: float,
        event_id: Any,
        event_type: str,
        parent: Any,
        action: str | None,
        level: str,
        scratch: dict[str, Any] | None,
    ) -> dict[str, Any]:
        record: dict[str, Any] = {"record": "event"}
        record.update(self.ids)
        record["key"] = _key(key)
        record["runId"] = run_id
        record["timestamp"] = ts
        record["eventId"] = event_id  # a UUID: to_json writes it as its string
        record["parentEventId"] = parent
        record["eventType"] = event_type
        record["action"] = action
        record["logLevel"] = level
        if scratch:
            seconds = scratch.get("durationMs")
            if seconds is not None:
                scratch["durationMs"] = round(seconds * 1000.0, 3)
            record.update(scratch)
        return record

    def _record(self, item: tuple[Any, ...]) -> dict[str, Any]:
        kind = item[0]
        base = {"record": kind, **self.ids, "key": _key(item[1]), "runId": item[2]}
        if kind == "event":
            _, key, run_id, ts, event_id, event_type, body, parent, action, level, scratch = item
            if isinstance(body, bytes):
                payload = json.loads(body)
            else:  # it could not be serialized: this raises the reason (an error record)
                payload = to_jsonable_python(body, fallback=str)
                if isinstance(payload, dict):
                    for k in ("id", "type"):
                        payload.pop(k, None)
            payload, truncated = _clean(
                payload, self.secrets, self.limits if level == "STANDARD" else None, 0
            )
            record = self._event_head(
                key, run_id, ts, event_id, event_type, parent, action, level, scratch
            )
            record["payload"] = payload
            if truncated:
                record["truncated"] = True
            return record
        if kind == "action":
            _, _, _, ts, action, event_id, event_type, seconds, error, outcome = item
            return {
                **base,
                "timestamp": ts,
                "action": action,
                "eventId": event_id,
                "eventType": event_type,
                "durationMs": round(seconds * 1000.0, 3),
                "error": redact(error, self.secrets),
                "outcome": outcome,
            }
        if kind == "call":
            _, _, _, ts, action, call_kind, name, seconds, usage, error, replayed = item
            return {
                **base,
                "timestamp": ts,
                "action": action,
                "kind": call_kind,
                "name": name,
                "durationMs": round(seconds * 1000.0, 3),
                "usage": usage,
                "error": redact(error, self.secrets),
                "replayed": replayed,
            }
        _, _, _, ts, seconds, error = item
        return {
            **base,
            "timestamp": ts,
            "durationMs": round(seconds * 1000.0, 3),
            "status": "failed" if error else "ok",
            "error": redact(error, self.secrets),
        }


def attach_event_log(
    runner: Any, *, job_id: Any, task_name: Any, subtask: Any
) -> EventLogObserver | None:
    """Add an event log to ``runner`` (an ``AgentRunner``) when ``event-log.enabled``;
    the runner closes it. Returns it, or None when the log is off."""
    config: AgentConfiguration = runner.config
    if not config.get(EventLogOptions.ENABLED):
        return None
    base = config.get(EventLogOptions.BASE_LOG_DIR) or default_log_dir()
    name = f"events-{_safe(job_id)}-{_safe(task_name)}-{_safe(subtask)}.log"
    secrets = [v for v in runner.plan.secrets.values() if isinstance(v, str)]
    observer = EventLogObserver(
        config,
        os.path.join(base, name),
        secrets,
        runner.metrics,
        {"jobId": str(job_id), "subtask": subtask},
    )
    runner.add_observer(observer, observer.close)
    return observer
