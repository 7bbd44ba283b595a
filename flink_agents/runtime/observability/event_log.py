"""The event log: every event of a run, and its actions and calls, as JSON lines.

One file per host instance (a Flink subtask, or a local runner):
``{baseLogDir}/events-{jobId}-{taskName}-{subtask}.log``, rotated by size. Each line is one
record with ``record`` = ``event`` (an event sent: key, run id, event id, parent event id,
type, the action that sent it with that execution's start, duration and token usage,
payload), ``action`` (an action execution that sent no logged event, or failed, retried or
was ignored: the others are described by their events), ``call`` (a model, tool or other
durable call) or ``run`` (a run ended; its timestamp is its start). ``flink-agents trace``
reads them back (``runtime/observability/trace.py``).

The run thread serializes each event's payload (pydantic_core, so no event stays alive in the
queue) and keeps it with plain values in the run's list of records, which goes to a bounded
queue as one item when the run ends; every ``event-log.flush-ms`` a writer thread makes the
lines of what is queued, and of what runs still in progress recorded so far (so a stuck run
shows up), and writes them. A line is made from bytes: the ids, key and run id once per run,
names once per name, the payload spliced in as serialized when it needs neither redaction nor
truncation (else the walk over its value decides). Writing is best
effort: a full queue drops records, a failing disk (full, read-only) drops them too; both
are counted (``eventLogDropped``, ``eventLogWriteErrors``) and warned about once, and the job
goes on. With ``event-log.writer`` = ``process`` (opt-in) the writer thread only pickles what
it takes down a pipe, and a child process makes and writes the lines
(``event_log_process.py``).
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
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json, to_jsonable_python

from flink_agents.api.core_options import AgentConfiguration, ConfigOption, register_options
from flink_agents.api.events.event import Event
from flink_agents.plan.agent_plan import _SECRET_NAME
from flink_agents.runtime.metrics import SimpleMetricGroup
from flink_agents.runtime.observability import RunInfo, RunObserver

if TYPE_CHECKING:
    from flink_agents.runtime.observability.event_log_process import ProcessWriter

log = logging.getLogger("flink_agents.event_log")

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


# (pydantic_core writes JSON with only ``"``, ``\\`` and control characters escaped, so a
# substring of a string value appears as its UTF-8 bytes.)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_SEEN_NOTHING = (False, False)
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


def _id_json(value: Any) -> bytes:
    """The JSON of an event id: as recorded (JSON bytes), else made (a UUID, None)."""
    return value if isinstance(value, bytes) else to_json(value, fallback=str)


def _id_value(value: Any) -> Any:
    """An event id as a JSON value (for the walk)."""
    return json.loads(value) if isinstance(value, bytes) else value


def _items(records: list[Any]) -> list[list[Any]]:
    """A flat list of records' fields (see :class:`_RunLog`) cut into one list per record."""
    items = []
    i = 0
    end = len(records)
    while i < end:
        size = _SIZES[records[i]]
        items.append(records[i : i + size])
        i += size
    return items


def _ms(seconds: float) -> float:
    """Seconds as milliseconds rounded to the microsecond (``round(x, 3)`` is several times
    slower: it rounds through decimal text)."""
    return round(seconds * 1e6) / 1000.0


def _scratch_fields(scratch: dict[str, Any]) -> dict[str, Any]:
    """An action's fields in its events, in their order (a scratch is shared by the events
    of one execution: it is not changed)."""
    fields: dict[str, Any] = {}
    for name in ("actionStart", "durationMs", "usage"):
        value = scratch.get(name)
        if value is not None:
            fields[name] = _ms(value) if name == "durationMs" else value
    return fields


def _error(exc: BaseException | None) -> str | None:
    return None if exc is None else f"{type(exc).__name__}: {exc}"


#: The number of fields of each kind of record, its kind included (see :class:`_RunLog`).
_SIZES = {"event": 9, "action": 8, "call": 9, "run": 4}


def _count(records: list[Any]) -> int:
    """The number of records in a flat list of records' fields."""
    i = n = 0
    while i < len(records):
        i += _SIZES[records[i]]
        n += 1
    return n


class _RunLog:
    """The records of one run not yet handed to the writer (made on the run thread).

    A run's records go to the queue as one item when the run ends (one queue operation per
    run, not one per record); the writer also takes what a run still in progress has
    recorded at each flush, so a long or stuck run shows up in the log while it waits.

    ``records`` is flat: the fields of one record after another, each record starting with
    its kind (``_SIZES`` fields in all), appended with one ``extend`` (atomic under the
    GIL). Its fields are plain values (strings, numbers, JSON bytes; ids as their JSON): a
    tuple per record, or an event id kept alive after its event, would be one more object
    for the garbage collector that lives until the writer runs, and those survivors made
    the collector run, full collections included, ~30 us per run inside a Flink job.
    """

    __slots__ = ("count", "early", "key", "pending", "records", "run_id", "scratch")

    def __init__(self, key: Any, run_id: str) -> None:
        self.key = key
        self.run_id = run_id
        self.records: list[Any] = []
        #: Records appended (run thread), then, once queued, the records queued.
        self.count = 0
        #: Records the writer took while the run was in progress (writer thread).
        self.early = 0
        #: ``actionStart``, ``durationMs`` (in seconds until written) and ``usage`` of the
        #: action that ran last: added to the events it sent.
        self.scratch: dict[str, Any] | None = None
        #: The action record of the execution that ended last without an error, until its
        #: events say the same (then dropped) or it turns out to have sent none (then
        #: recorded, by the run's next hook).
        self.pending: tuple[Any, ...] | None = None


class EventLogObserver(RunObserver):
    """Records what runs do for the :class:`_Writer`.

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
        #: Ended runs' records (``count``: how many).
        self.queue: deque[_RunLog] = deque()
        #: Runs in progress, by run id (the writer takes their records so far).
        self.open: dict[str, _RunLog] = {}
        # Records queued and records the writer took; each is written by one thread only,
        # so their difference is exact without a lock.
        self.queued = 0
        self.taken = 0
        self._slot = id(self)
        self.dropped = metrics.get_counter("eventLogDropped")
        self._warned_drop = False
        self.writer: _Writer | ProcessWriter
        if config.get(EventLogOptions.WRITER) == "process":
            from flink_agents.runtime.observability.event_log_process import ProcessWriter

            self.writer = ProcessWriter(self, path, list(secrets), metrics, dict(ids))
        else:
            self.writer = _Writer(self, path, secrets, metrics, dict(ids))

    def level_of(self, event_type: str) -> str:
        """The level of an event type (``event-log.type.<type>.level``, else the default)."""
        level = self._levels.get(event_type)
        if level is None:
            own = self.config.get_str(f"{_TYPE_PREFIX}{event_type}.level")
            level = self._levels[event_type] = _level(own) if own else self.default_level
        return level

    def _put(self, run_log: _RunLog) -> None:
        # Those the writer took while the run was in progress are written already.
        n = run_log.count - run_log.early
        if self.queued - self.taken + n > self._max:
            self.dropped.inc(n)
            if not self._warned_drop:
                self._warned_drop = True
                log.warning(
                    "event log queue full (%d records): records are dropped and counted in "
                    "eventLogDropped; raise event-log.queue-size or lower event-log.level",
                    self._max,
                )
            return
        self.queued += n
        run_log.count = n  # the writer counts them taken
        self.queue.append(run_log)

    def _log_of(self, run: RunInfo) -> _RunLog:
        run_log = run.data.get(self._slot)
        if run_log is None:  # a run that started before this observer was added
            run_log = run.data[self._slot] = self.open[run.run_id] = _RunLog(run.key, run.run_id)
        return run_log

    # -- observer ------------------------------------------------------------------------------
    def run_started(self, run: RunInfo) -> None:
        run.data[self._slot] = self.open[run.run_id] = _RunLog(run.key, run.run_id)

    def events_sent(
        self, run: RunInfo, events: Sequence[Event], parent: Event | None, action: str | None
    ) -> None:
        run_log = self._log_of(run)
        scratch = run_log.scratch
        run_log.scratch = None
        extend = run_log.records.extend
        levels = self._levels
        now = time.time()
        parent_id = None if parent is None else to_json(parent.id)
        n = 0
        for event in events:
            event_type = event.type
            level = levels.get(event_type) or self.level_of(event_type)
            if level == "OFF":
                continue
            # The payload's JSON, made here (pydantic_core, ~1-3 us): a kept event would keep
            # its object graph alive until the writer runs, and the garbage collector's walks
            # over those survivors cost more than this (measured: ~50 us per run).
            try:
                body: bytes | Event = to_json(event, fallback=str, exclude=_ID_TYPE)
            except Exception:  # noqa: BLE001 - the writer reports it as an error record
                body = event
            event_id = to_json(event.id)
            extend(("event", now, event_id, event_type, body, parent_id, action, level, scratch))
            n += 1
        run_log.count += n
        if n:
            run_log.pending = None  # its events carry the action's execution
        elif run_log.pending is not None:
            self._flush_pending(run_log)

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
        run_log = self._log_of(run)
        if run_log.pending is not None:
            self._flush_pending(run_log)
        scratch = run_log.scratch
        if scratch is None:
            scratch = run_log.scratch = {}
        ts = run.started + (started - run.started_perf)
        scratch["actionStart"] = ts
        scratch["durationMs"] = seconds  # in seconds: the writer rounds it to ms (off this thread)
        record = ("action", ts, action, to_json(event.id), event.type, seconds)
        if error is None and outcome is None:
            # The events it sends say all this (action, parentEventId, actionStart,
            # durationMs): an action record only if it sends none (see _flush_pending).
            run_log.pending = record
            return
        run_log.records.extend((*record, _error(error), outcome))
        run_log.count += 1

    @staticmethod
    def _flush_pending(run_log: _RunLog) -> None:
        """Record the action execution that ended without sending a logged event (called
        by the next hook of its run)."""
        run_log.records.extend((*run_log.pending, None, None))  # type: ignore[misc]
        run_log.count += 1
        run_log.pending = None

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
        run_log = self._log_of(run)
        if run_log.pending is not None:
            self._flush_pending(run_log)
        usage = None
        extra = getattr(result, "extra_args", None) if kind == "model" else None
        if extra:
            usage = extra.get("usage")
            if usage:
                scratch = run_log.scratch
                if scratch is None:
                    scratch = run_log.scratch = {}
                total = scratch.setdefault("usage", {})
                prompt = int(usage.get("prompt_tokens") or 0)
                completion = int(usage.get("completion_tokens") or 0)
                total["prompt_tokens"] = total.get("prompt_tokens", 0) + prompt
                total["completion_tokens"] = total.get("completion_tokens", 0) + completion
                total["total_tokens"] = total.get("total_tokens", 0) + int(
                    usage.get("total_tokens") or prompt + completion
                )
        run_log.count += 1
        run_log.records.extend(
            (
                "call",
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
        run_log = self._log_of(run)
        del run.data[self._slot]
        self.open.pop(run.run_id, None)
        if run_log.pending is not None:
            self._flush_pending(run_log)
        run_log.records.extend(("run", run.started, seconds, _error(error)))
        run_log.count += 1
        self._put(run_log)

    def take(self) -> Iterator[tuple[_RunLog, list[Any]]]:
        """What a writer takes at a flush, run by run: the records of ended runs (queued),
        then what runs in progress recorded so far (flat lists, see :class:`_RunLog`)."""
        queue = self.queue
        while queue:
            run_log = queue.popleft()
            self.taken += run_log.count
            yield run_log, run_log.records
        # Runs in progress: under the GIL the copy and the deletion of that many records
        # from the front are each atomic, and the run thread only appends, so no record is
        # lost or written twice.
        for run_log in list(self.open.values()):
            records = run_log.records
            n = len(records)
            if n:
                taken = records[:n]
                del records[:n]
                run_log.early += _count(taken)
                yield run_log, taken

    def close(self) -> None:
        """Write what is queued and stop the writer thread."""
        self.writer.close()


class _Writer:
    """The writer thread: formats queued records and appends them to the file."""

    def __init__(
        self,
        observer: EventLogObserver | None,
        path: str,
        secrets: Sequence[str],
        metrics: SimpleMetricGroup,
        ids: dict[str, Any],
        config: AgentConfiguration | None = None,
    ) -> None:
        # Without an observer (the writer process) it only formats and writes what it is
        # given: no thread.
        if config is None:
            assert observer is not None
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
        # The ids of every record as JSON fields, with a trailing comma (made once).
        self._ids = to_json(ids, fallback=str)[1:-1] + b"," if ids else b""
        self._names: dict[Any, bytes] = {None: b"null"}
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
        if observer is not None:
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.drain()
        self.drain()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        with self._lock:
            if self._file is not None:
                try:
                    self._file.close()
                except OSError:
                    pass
                self._file = None

    def drain(self) -> None:
        """Format and write what ended runs queued and what runs in progress recorded so
        far (best effort)."""
        observer = self.observer
        assert observer is not None
        with self._lock:
            lines: list[bytes] = []
            for run_log, records in observer.take():
                self._format(run_log, records, lines)
            if lines:
                self._write(lines)

    def _format(self, run_log: _RunLog, records: list[Any], out: list[bytes]) -> None:
        """Append the lines of ``records`` (of one run, flat: see :class:`_RunLog`) to
        ``out``."""
        try:
            head = self._head(run_log)
            items = _items(records)
        except Exception as exc:  # noqa: BLE001 - a bad record must not stop the log
            out.append(self._error_line(exc))
            return
        names = self._names
        named = self._name
        # One look over all payloads of the part of the run for what no payload may have
        # (a secret, a secret-named key, a long string): each payload is a part of the
        # joined bytes, so none has it when they have not (a miss costs a look per payload).
        payloads = [item[4] for item in items if item[0] == "event"]
        seen = self._seen(payloads) if payloads else _SEEN_NOTHING
        scratches: dict[int, bytes] = {}
        for item in items:
            try:
                kind = item[0]
                if kind == "event":
                    line = self._event_line(head, item, seen, scratches) or to_json(
                        self._event_record(run_log, item), fallback=str
                    )
                elif kind == "action":
                    _, ts, action, event_id, event_type, seconds, error, outcome = item
                    line = (
                        b'{"record":"action",%s%s,"action":%s,"eventId":%s,"eventType":%s,'
                        b'"durationMs":%s,"error":%s,"outcome":%s}'
                        % (
                            head,
                            to_json(ts),
                            names.get(action) or named(action),
                            _id_json(event_id),
                            names.get(event_type) or named(event_type),
                            to_json(_ms(seconds)),
                            self._error_json(error),
                            names.get(outcome) or named(outcome),
                        )
                    )
                elif kind == "call":
                    _, ts, action, call_kind, call_name, seconds, usage, error, replayed = item
                    line = (
                        b'{"record":"call",%s%s,"action":%s,"kind":%s,"name":%s,"durationMs":%s,'
                        b'"usage":%s,"error":%s,"replayed":%s}'
                        % (
                            head,
                            to_json(ts),
                            names.get(action) or named(action),
                            names.get(call_kind) or named(call_kind),
                            names.get(call_name) or named(call_name),
                            to_json(_ms(seconds)),
                            to_json(usage, fallback=str),
                            self._error_json(error),
                            b"true" if replayed else b"false",
                        )
                    )
                else:
                    _, ts, seconds, error = item
                    line = b'{"record":"run",%s%s,"durationMs":%s,"status":"%s","error":%s}' % (
                        head,
                        to_json(ts),
                        to_json(_ms(seconds)),
                        b"failed" if error else b"ok",
                        self._error_json(error),
                    )
                out.append(line)
            except Exception as exc:  # noqa: BLE001 - a bad record must not stop the log
                out.append(self._error_line(exc))

    def _head(self, run_log: _RunLog) -> bytes:
        """What every record of a run starts with after its ``record`` field (made once per
        run, or per part of a run in progress): ids, key, run id, ``"timestamp":``."""
        return b'%s"key":%s,"runId":%s,"timestamp":' % (
            self._ids,
            to_json(_key(run_log.key), fallback=str),
            to_json(run_log.run_id),
        )

    def _error_line(self, exc: BaseException) -> bytes:
        return json.dumps(
            {"record": "error", "error": _error(exc), **self.ids}, default=str
        ).encode()

    def _name(self, value: Any) -> bytes:
        """The JSON of a name (an action, an event type, a level): made once per name."""
        json_ = self._names.get(value)
        if json_ is None:
            json_ = to_json(value, fallback=str)
            if isinstance(value, str) and len(self._names) < 10_000:
                self._names[value] = json_
        return json_

    def _error_json(self, error: str | None) -> bytes:
        return b"null" if error is None else to_json(redact(error, self.secrets))

    def _scratch(self, scratch: dict[str, Any] | None) -> bytes:
        """The fields an event takes from the action that sent it (``actionStart``,
        ``durationMs``, ``usage``), with their leading comma."""
        if not scratch:
            return b""
        start = scratch.get("actionStart")
        seconds = scratch.get("durationMs")
        usage = scratch.get("usage")
        if start is None or seconds is None:  # not from action_finished: as the walk does
            return b"," + to_json(_scratch_fields(scratch), fallback=str)[1:-1]
        fields = b',"actionStart":%s,"durationMs":%s' % (
            to_json(start),
            to_json(_ms(seconds)),
        )
        return (
            fields if usage is None else b'%s,"usage":%s' % (fields, to_json(usage, fallback=str))
        )

    def _write(self, lines: list[bytes]) -> None:
        start = 0  # lines before it are written
        try:
            if self._file is None:
                os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
                self._file = open(self.path, "ab")  # noqa: SIM115 - kept open
                self._size = self._file.tell()
            size = self._size
            if size + sum(map(len, lines)) + len(lines) <= self.max_bytes:
                self._append(lines)  # the usual case: the whole batch fits
                return
            # One write per file: a batch that crosses max-file-bytes is split at the line
            # where the file would grow past it, so every file stays under the limit (but
            # one line longer than the limit) however the drain happened to batch records.
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
                self._warn(str(exc))

    def _warn(self, error: str) -> None:
        """The one warning about a failing disk (the writer process sends it to its parent)."""
        warn_write_error(self.path, error)

    def _append(self, lines: list[bytes]) -> None:
        lines.append(b"")  # the last newline, without copying the joined bytes again
        data = b"\n".join(lines)
        lines.pop()
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

    def _seen(self, payloads: list[Any]) -> tuple[bool, bool]:
        """``(secret-free, long-string-free)`` of all these payloads' JSON together
        (conservative: False when in doubt)."""
        blob = b"\n".join(p for p in payloads if isinstance(p, bytes))
        secrets = self._secret_bytes
        secret_free = (
            secrets is not None
            and not _secret_key_in(blob)
            and not any(secret in blob for secret in secrets)
        )
        long_free = len(blob) <= self.limits.string or self._long.search(blob) is None
        return secret_free, long_free

    def _plain(
        self, data: bytes, limits: _Limits | None, seen: tuple[bool, bool] = _SEEN_NOTHING
    ) -> bool:
        """Whether a payload's JSON certainly needs no redaction (and, with ``limits``, no
        truncation); conservative byte checks, any doubt is False (then the walk decides).
        ``seen``: what :meth:`_seen` found of the run's payloads (skips those checks)."""
        secret_free, long_free = seen
        if not secret_free:
            secrets = self._secret_bytes
            if secrets is None or _secret_key_in(data):
                return False
            for secret in secrets:
                if secret in data:
                    return False
        if limits is None:
            return True
        if not long_free and len(data) > limits.string and self._long.search(data):
            return False
        if data.count(b",") < limits.array and data.count(b"{") + data.count(b"[") <= limits.depth:
            return True
        # Count the structure only (what is outside string literals): without escaped
        # backslashes and quotes, every quote opens or closes a literal, so the pieces
        # between them alternate outside / inside. n items of a list have n - 1 commas;
        # removing innermost bracket pairs ``depth`` times leaves nothing iff no nesting
        # is deeper.
        if b"\\" in data:
            # Escaped backslashes first (replace pairs them left to right, as a reader
            # does): a backslash left before a quote then escapes it.
            data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
        structure = b"".join(data.split(b'"')[::2])
        if structure.count(b",") >= limits.array:
            return False
        brackets = structure.translate(None, _NOT_BRACKETS)
        for _ in range(limits.depth):
            # Innermost pairs marked first, then removed: one nesting level per pass.
            brackets = brackets.replace(b"[]", b"-").replace(b"{}", b"-").replace(b"-", b"")
            if not brackets:
                return True
        return not brackets

    def _event_line(
        self,
        head: bytes,
        item: Sequence[Any],
        seen: tuple[bool, bool] = _SEEN_NOTHING,
        scratches: dict[int, bytes] | None = None,
    ) -> bytes | None:
        """The fast path of an event record: the payload's JSON spliced in when nothing in
        it needs redaction or truncation; None when the walk must decide. ``seen``: see
        :meth:`_plain`; ``scratches``: the fields of scratches already made (by id, for
        the events one action sent; valid while their records are alive)."""
        _, ts, event_id, event_type, data, parent, action, level, scratch = item
        if (
            not isinstance(data, bytes)
            or data[:1] != b"{"
            or not self._plain(data, self.limits if level == "STANDARD" else None, seen)
        ):
            return None
        if not scratch:
            fields = b""
        elif scratches is None:
            fields = self._scratch(scratch)
        else:
            fields = scratches.get(id(scratch))  # type: ignore[assignment]
            if fields is None:
                fields = scratches[id(scratch)] = self._scratch(scratch)
        names = self._names
        return (
            b'{"record":"event",%s%s,"eventId":%s,"parentEventId":%s,"eventType":%s,'
            b'"action":%s,"logLevel":%s%s,"payload":%s}'
            % (
                head,
                to_json(ts),
                event_id if type(event_id) is bytes else _id_json(event_id),
                parent if type(parent) is bytes else _id_json(parent),
                names.get(event_type) or self._name(event_type),
                names.get(action) or self._name(action),
                names.get(level) or self._name(level),
                fields,
                data,
            )
        )

    def _event_record(self, run_log: _RunLog, item: Sequence[Any]) -> dict[str, Any]:
        """The walk: an event record whose payload is redacted and truncated as a value."""
        _, ts, event_id, event_type, body, parent, action, level, scratch = item
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
        record: dict[str, Any] = {"record": "event"}
        record.update(self.ids)
        record["key"] = _key(run_log.key)
        record["runId"] = run_log.run_id
        record["timestamp"] = ts
        record["eventId"] = _id_value(event_id)
        record["parentEventId"] = _id_value(parent)
        record["eventType"] = event_type
        record["action"] = action
        record["logLevel"] = level
        if scratch:
            record.update(_scratch_fields(scratch))
        record["payload"] = payload
        if truncated:
            record["truncated"] = True
        return record


def warn_write_error(path: str, error: str) -> None:
    """The one warning when the event log cannot be written."""
    log.warning(
        "cannot write the event log %s (%s); its records are dropped and counted "
        "in eventLogWriteErrors (the job goes on)",
        path,
        error,
    )


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
