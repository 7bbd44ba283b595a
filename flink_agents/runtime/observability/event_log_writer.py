"""The event log's lines: made from the records runs left, redacted, truncated, written.

The run thread (``event_log.py``) keeps each run's records as one flat list of plain values
(layout: :data:`SIZES`); the writer thread (or the writer process,
``event_log_process.py``) turns them into JSON lines here. A line is made from bytes: the
ids, key and run id once per run, names once per name, and an event's payload spliced in
from the JSON the run thread made, when it needs neither redaction nor truncation (byte
checks, conservative: any doubt takes the walk over its value, which decides).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import re
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json, to_jsonable_python

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.runtime.metric_groups import SimpleMetricGroup
from flink_agents.runtime.observability.event_log_options import EventLogOptions
from flink_agents.secrets import MASK, Masker, is_secret_name, is_secret_value, json_may_hold_secret

if TYPE_CHECKING:
    from flink_agents.runtime.observability.event_log import EventLogObserver

log = logging.getLogger("flink_agents.event_log")

#: The fields of each kind of record in a run's flat list, its kind first:
#:
#: - ``event``: kind, timestamp, event id (None: it is in the body), event type, body,
#:   parent id, action, level, action start, action seconds, usage. The body is the
#:   event's JSON with ``id`` and ``type`` first (event id None), or without them (event id
#:   its JSON: an event whose JSON does not start with them), or the event itself when it
#:   cannot be written as JSON (an error record says why). The action fields are those of
#:   the execution that sent it (None for the input).
#: - ``action``: kind, timestamp, action, event id, event type, seconds, error, outcome.
#: - ``call``: kind, timestamp, action, call kind, name, seconds, usage, error, replayed.
#: - ``run``: kind, timestamp (the run's start), seconds, error.
#:
#: Ids are JSON bytes, times ``time.time()`` values, durations seconds (written as ms).
SIZES = {"event": 11, "action": 8, "call": 9, "run": 4}


def count_records(records: list[Any]) -> int:
    """The number of records in a flat list of records' fields."""
    i = n = 0
    while i < len(records):
        i += SIZES[records[i]]
        n += 1
    return n


def runs_of(item: Any) -> list[tuple[Any, str, list[Any]]]:
    """The ``(key, run id, records)`` of what the writer takes: a pickled list of ended runs,
    or one run as it is (in progress, or one that does not pickle)."""
    if type(item) is bytes:
        runs: list[tuple[Any, str, list[Any]]] = pickle.loads(item)
        return runs
    return [item]


def lines_made(item: Any) -> list[bytes] | None:
    """The lines of an item whose lines were made already (a one-item tuple: the writer
    process gets those for runs that do not pickle), else None."""
    if type(item) is not bytes and len(item) == 1:
        lines: list[bytes] = item[0]
        return lines
    return None


def _key(key: Any) -> Any:
    return key if isinstance(key, (str, int, float, bool, type(None))) else repr(key)


def _error(exc: BaseException | None) -> str | None:
    return None if exc is None else f"{type(exc).__name__}: {exc}"


def _ms(seconds: float) -> float:
    """Seconds as milliseconds rounded to the microsecond (``round(x, 3)`` is several times
    slower: it rounds through decimal text)."""
    return round(seconds * 1e6) / 1000.0


class _Limits:
    def __init__(self, config: AgentConfiguration) -> None:
        self.string = config.get(EventLogOptions.MAX_STRING_LENGTH)
        self.array = config.get(EventLogOptions.MAX_ARRAY_ELEMENTS)
        self.depth = config.get(EventLogOptions.MAX_DEPTH)


def redact(value: Any, secrets: Sequence[str] | Masker) -> Any:
    """``value`` (JSON form) masked by the secret rule (``flink_agents/secrets.py``: strings
    under secret names, credentials in text) and of every known secret value."""
    masker = secrets if isinstance(secrets, Masker) else Masker(secrets)
    return _clean(value, masker, None, 0)[0]


def _clean(value: Any, masker: Masker, limits: _Limits | None, depth: int) -> tuple[Any, bool]:
    """One walk for both: masking always, truncation when ``limits`` are given."""
    if isinstance(value, str):
        value = MASK if is_secret_value(value) else masker.mask(value)
        if limits is not None and len(value) > limits.string:
            return f"{value[: limits.string]}...[{len(value) - limits.string} more chars]", True
        return value, False
    if isinstance(value, dict):
        if limits is not None and depth >= limits.depth:
            return f"[dict nested deeper than {limits.depth}]", True
        cut = False
        out: dict[str, Any] = {}
        for k, v in value.items():
            if isinstance(k, str):
                if isinstance(v, str) and v and is_secret_name(k):
                    out[masker.mask(k)] = MASK
                    continue
                k = masker.mask(k)
            out[k], c = _clean(v, masker, limits, depth + 1)
            cut = cut or c
        return out, cut
    if isinstance(value, list):
        if limits is not None and depth >= limits.depth:
            return f"[list nested deeper than {limits.depth}]", True
        cut = False
        items = value if limits is None else value[: limits.array]
        cleaned = []
        for v in items:
            item, c = _clean(v, masker, limits, depth + 1)
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


def _needs_escape(text: str) -> bool:
    return '"' in text or "\\" in text or any(ord(c) < 0x20 for c in text)


#: ``{"id":"`` + a UUID's 36 characters + ``","type":``: where an event's JSON has its type.
_ID_END = 44
_TYPE_AT = 52


def uuid_id_of(body: bytes) -> bytes | None:
    """The id's JSON of an event's JSON that starts with a UUID ``id`` and then ``type``;
    None for any other shape."""
    if body[:7] != b'{"id":"' or body[_ID_END - 1 : _TYPE_AT] != b'","type":':
        return None
    return body[6:_ID_END]


def _split_body(body: bytes, type_json: bytes) -> tuple[bytes, bytes] | None:
    """``(id JSON, payload JSON)`` of an event's JSON that starts with its UUID ``id`` and
    its ``type`` (``type_json``); None for any other shape."""
    end = _TYPE_AT + len(type_json)
    event_id = uuid_id_of(body)
    if event_id is None or body[_TYPE_AT:end] != type_json:
        return None
    sep = body[end : end + 1]
    if sep == b",":
        return event_id, b"{" + body[end + 1 :]
    if sep == b"}" and len(body) == end + 1:
        return event_id, b"{}"
    return None


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
        self.masker = Masker(s for s in secrets if isinstance(s, str))
        self.secrets = list(self.masker.known)
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
            self._close_file()

    def _close_file(self) -> None:
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
            lines = self.lines_of(observer.take())
            if lines:
                self._write(lines)

    def lines_of(self, items: Iterable[Any]) -> list[bytes]:
        """The lines of what a writer takes (:func:`runs_of`), and of lines made already
        (a one-item tuple: the writer process gets those for runs that do not pickle)."""
        lines: list[bytes] = []
        for item in items:
            made = lines_made(item)
            if made is not None:
                lines.extend(made)
            else:
                for key, run_id, records in runs_of(item):
                    self._format(key, run_id, records, lines)
        return lines

    # -- lines ------------------------------------------------------------------------------
    def _format(self, key: Any, run_id: str, records: list[Any], out: list[bytes]) -> None:
        """Append the lines of ``records`` (of one run, flat: see :data:`SIZES`) to ``out``."""
        try:
            head = self._head(key, run_id)
            starts = []
            i = 0
            while i < len(records):
                starts.append(i)
                i += SIZES[records[i]]
        except Exception as exc:  # noqa: BLE001 - a bad record must not stop the log
            out.append(self._error_line(exc))
            return
        names = self._names
        named = self._name
        # One look over all bodies of the part of the run for what none may have (a secret,
        # a secret-named key, a long string): each body is a part of the joined bytes, so
        # none has it when they have not (a miss costs a look per body).
        bodies = [records[i + 4] for i in starts if records[i] == "event"]
        seen = self._seen(bodies) if bodies else _SEEN_NOTHING
        for i in starts:
            try:
                kind = records[i]
                if kind == "event":
                    item = records[i : i + 11]
                    line = self._event_line(head, item, seen) or to_json(
                        self._event_record(key, run_id, item), fallback=str, inf_nan_mode="null"
                    )
                elif kind == "action":
                    _, ts, action, event_id, event_type, seconds, error, outcome = records[
                        i : i + 8
                    ]
                    line = (
                        b'{"record":"action",%s%s,"action":%s,"eventId":%s,"eventType":%s,'
                        b'"durationMs":%s,"error":%s,"outcome":%s}'
                        % (
                            head,
                            to_json(ts),
                            names.get(action) or named(action),
                            event_id,
                            names.get(event_type) or named(event_type),
                            to_json(_ms(seconds)),
                            b"null" if error is None else self._error_json(error),
                            names.get(outcome) or named(outcome),
                        )
                    )
                elif kind == "call":
                    _, ts, action, call_kind, call_name, seconds, usage, error, replayed = records[
                        i : i + 9
                    ]
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
                            b"null"
                            if usage is None
                            else to_json(usage, fallback=str, inf_nan_mode="null"),
                            b"null" if error is None else self._error_json(error),
                            b"true" if replayed else b"false",
                        )
                    )
                else:
                    _, ts, seconds, error = records[i : i + 4]
                    line = b'{"record":"run",%s%s,"durationMs":%s,"status":"%s","error":%s}' % (
                        head,
                        to_json(ts),
                        to_json(_ms(seconds)),
                        b"failed" if error else b"ok",
                        b"null" if error is None else self._error_json(error),
                    )
                out.append(line)
            except Exception as exc:  # noqa: BLE001 - a bad record must not stop the log
                out.append(self._error_line(exc))

    def _head(self, key: Any, run_id: str) -> bytes:
        """What every record of a run starts with after its ``record`` field (made once per
        run, or per part of a run in progress): ids, key, run id, ``"timestamp":``; a
        secret in the key masked."""
        return b'%s"key":%s,"runId":%s,"timestamp":' % (
            self._ids,
            to_json(self._key_value(key), fallback=str, inf_nan_mode="null"),
            to_json(run_id),
        )

    def _key_value(self, key: Any) -> Any:
        """The key as written: a JSON value (else its repr), secrets in it masked."""
        key = _key(key)
        if isinstance(key, str):
            key = self.masker.mask(key)
        return key

    def _error_line(self, exc: BaseException) -> bytes:
        return json.dumps(
            {"record": "error", "error": self.masker.mask(_error(exc) or ""), **self.ids},
            default=str,
        ).encode()

    def _name(self, value: Any) -> bytes:
        """The JSON of a name (an action, an event type, a level): made once per name."""
        json_ = self._names.get(value)
        if json_ is None:
            json_ = to_json(value, fallback=str)
            if isinstance(value, str) and len(self._names) < 10_000:
                self._names[value] = json_
        return json_

    def _error_json(self, error: str) -> bytes:
        return to_json(self.masker.mask(error))

    def _seen(self, bodies: list[Any]) -> tuple[bool, bool]:
        """``(secret-free, long-string-free)`` of all these bodies' JSON together
        (conservative: False when in doubt)."""
        blob = b"\n".join(p for p in bodies if isinstance(p, bytes))
        long_free = len(blob) <= self.limits.string or self._long.search(blob) is None
        return self._secret_free(blob), long_free

    def _secret_free(self, data: bytes) -> bool:
        """Whether ``data`` (JSON) certainly holds no secret value and no string under a
        secret-like key (conservative)."""
        secrets = self._secret_bytes
        if secrets is None or json_may_hold_secret(data):
            return False
        return not any(secret in data for secret in secrets)

    def _plain(
        self, data: bytes, limits: _Limits | None, seen: tuple[bool, bool] = _SEEN_NOTHING
    ) -> bool:
        """Whether a payload's JSON certainly needs no redaction (and, with ``limits``, no
        truncation); conservative byte checks, any doubt is False (then the walk decides).
        ``seen``: what :meth:`_seen` found of the run's payloads (skips those checks)."""
        secret_free, long_free = seen
        if not secret_free and not self._secret_free(data):
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

    def _action_fields(self, start: Any, seconds: Any, usage: Any) -> bytes:
        """The fields an event takes from the action execution that sent it
        (``actionStart``, ``durationMs``, ``usage``; those it has), with a leading comma."""
        fields = b""
        if start is not None:
            fields = b',"actionStart":' + to_json(start)
        if seconds is not None:
            fields += b',"durationMs":' + to_json(_ms(seconds))
        if usage is not None:
            fields += b',"usage":' + to_json(usage, fallback=str, inf_nan_mode="null")
        return fields

    def _event_line(
        self, head: bytes, item: Sequence[Any], seen: tuple[bool, bool] = _SEEN_NOTHING
    ) -> bytes | None:
        """The fast path of an event record: the payload's JSON spliced in when nothing in
        it needs redaction or truncation; None when the walk must decide. ``seen``: see
        :meth:`_plain`."""
        _, ts, event_id, event_type, body, parent, action, level, start, seconds, usage = item
        if type(body) is not bytes:
            return None
        names = self._names
        type_json = names.get(event_type) or self._name(event_type)
        if event_id is None:
            parts = _split_body(body, type_json)
            if parts is None:
                return None
            event_id, payload = parts
        elif body[:1] == b"{":
            payload = body
        else:
            return None
        if not self._plain(payload, self.limits if level == "STANDARD" else None, seen):
            return None
        fields = (
            b"" if start is None and usage is None else self._action_fields(start, seconds, usage)
        )
        return (
            b'{"record":"event",%s%s,"eventId":%s,"parentEventId":%s,"eventType":%s,'
            b'"action":%s,"logLevel":%s%s,"payload":%s}'
            % (
                head,
                to_json(ts),
                event_id,
                b"null" if parent is None else parent,
                type_json,
                names.get(action) or self._name(action),
                names.get(level) or self._name(level),
                fields,
                payload,
            )
        )

    def _event_record(self, key: Any, run_id: str, item: Sequence[Any]) -> dict[str, Any]:
        """The walk: an event record whose payload is redacted and truncated as a value."""
        _, ts, event_id, event_type, body, parent, action, level, start, seconds, usage = item
        if isinstance(body, bytes):
            payload = json.loads(body)
            if event_id is None and isinstance(payload, dict):
                event_id = to_json(payload.pop("id", None))
                payload.pop("type", None)
        else:  # it could not be serialized: this raises the reason (an error record)
            payload = to_jsonable_python(body, fallback=str)
            if isinstance(payload, dict):
                for k in ("id", "type"):
                    payload.pop(k, None)
        payload, truncated = _clean(
            payload, self.masker, self.limits if level == "STANDARD" else None, 0
        )
        record: dict[str, Any] = {"record": "event"}
        record.update(self.ids)
        record["key"] = self._key_value(key)
        record["runId"] = run_id
        record["timestamp"] = ts
        record["eventId"] = None if event_id is None else json.loads(event_id)
        record["parentEventId"] = None if parent is None else json.loads(parent)
        record["eventType"] = event_type
        record["action"] = action
        record["logLevel"] = level
        if start is not None:
            record["actionStart"] = start
        if seconds is not None:
            record["durationMs"] = _ms(seconds)
        if usage is not None:
            record["usage"] = usage
        record["payload"] = payload
        if truncated:
            record["truncated"] = True
        return record

    # -- the file ---------------------------------------------------------------------------
    def _write(self, lines: list[bytes]) -> None:
        start = 0  # lines before it are written
        try:
            if self._file is None:
                os.makedirs(os.path.dirname(self.path) or ".", mode=0o700, exist_ok=True)
                self._file = _open_private(self.path)
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
            self._close_file()
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
        self._file = _open_private(self.path)
        self._size = 0


def _open_private(path: str) -> Any:
    """``path`` opened for appending, readable and writable by its owner only (0600: the
    default directory ``<tmp>/flink-agents`` is shared; a file made earlier with wider
    permissions is narrowed)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    except OSError:
        pass  # not ours to change: written as it is
    return os.fdopen(fd, "ab")


def warn_write_error(path: str, error: str) -> None:
    """The one warning when the event log cannot be written."""
    log.warning(
        "cannot write the event log %s (%s); its records are dropped and counted "
        "in eventLogWriteErrors (the job goes on)",
        path,
        error,
    )
