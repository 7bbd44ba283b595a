"""Reads event logs back into runs and shows them: an indented tree, or one HTML page.

:func:`load_runs` reads every ``events-*.log`` file of a directory (rotated ones too) and
groups the records by run; a call belongs to the execution of its action during which it
started. Lines that are not JSON or not records of the shape the event log writes (a file
cut by a crash, a file edited by hand) are skipped and counted (:func:`load_trace`).
:func:`render_text` prints a run as a tree with durations and tokens, control characters of
the data escaped (a log is data: it must not drive the terminal); :func:`render_html`
writes a self-contained page (inline CSS and JavaScript, no network) with a timeline of the
runs, their actions and their model and tool calls, its data block escaped so that no text
inside it can end the script.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flink_agents.errors import UsageError


@dataclass
class Call:
    """A model, tool or other durable call."""

    kind: str
    name: str
    start: float
    duration_ms: float
    usage: dict[str, int] | None = None
    error: str | None = None
    replayed: bool = False


@dataclass
class ActionRun:
    """One execution of an action."""

    name: str
    event_type: str
    event_id: str
    start: float
    duration_ms: float
    error: str | None = None
    outcome: str | None = None
    calls: list[Call] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)


@dataclass
class Run:
    """One input's run."""

    key: Any
    run_id: str
    start: float
    duration_ms: float | None = None
    status: str = "running"
    error: str | None = None
    job_id: str | None = None
    subtask: Any = None
    actions: list[ActionRun] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def tokens(self) -> tuple[int, int]:
        """``(prompt, completion)`` tokens of its model calls."""
        prompt = completion = 0
        for action in self.actions:
            for call in action.calls:
                if call.usage:
                    prompt += int(call.usage.get("prompt_tokens") or 0)
                    completion += int(call.usage.get("completion_tokens") or 0)
        return prompt, completion


def _files(log_dir: str | os.PathLike[str]) -> list[Path]:
    path = Path(log_dir)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise UsageError(f"no event log directory {str(path)!r}")
    files = sorted(p for p in path.iterdir() if p.name.startswith("events-") and ".log" in p.name)
    if not files:
        raise UsageError(
            f"no event log files (events-*.log) in {str(path)!r}; is event-log.enabled set "
            "and baseLogDir pointing here?"
        )
    return files


@dataclass
class ReadStats:
    """What reading an event log skipped.

    Attributes:
        lines: non-empty lines read.
        not_json: lines that are not JSON objects (a line cut by a crash).
        bad_records: JSON lines that are no record of the event log's shape (a field of
            the wrong type: a file edited or written by something else).
    """

    lines: int = 0
    not_json: int = 0
    bad_records: int = 0

    @property
    def skipped(self) -> int:
        """Lines skipped in all."""
        return self.not_json + self.bad_records


_NUMBERS = ("timestamp", "durationMs", "actionStart")


def _checked(record: Any) -> dict[str, Any] | None:
    """``record`` when it has the shape the trace reads (a string run id, finite numbers
    where numbers belong), with those numbers as floats; else None."""
    if not isinstance(record, dict) or not isinstance(record.get("runId"), str):
        return None
    if "timestamp" not in record:
        return None
    for name in _NUMBERS:
        value = record.get(name)
        if value is None and name != "timestamp":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        if not math.isfinite(value):
            return None
        record[name] = float(value)
    usage = record.get("usage")
    if usage is not None and not (
        isinstance(usage, dict)
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in usage.values())
    ):
        return None
    return record


def read_records(
    log_dir: str | os.PathLike[str], stats: ReadStats | None = None
) -> list[dict[str, Any]]:
    """Every record of the event log files in ``log_dir`` (or of one file), by time.
    Lines that are not JSON, or not of a record's shape, are skipped (counted in
    ``stats`` when given)."""
    stats = stats if stats is not None else ReadStats()
    records: list[dict[str, Any]] = []
    for file in _files(log_dir):
        with open(file, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    continue
                stats.lines += 1
                try:
                    record = json.loads(line)
                except (json.JSONDecodeError, RecursionError):
                    stats.not_json += 1
                    continue
                if not isinstance(record, dict):
                    stats.not_json += 1
                    continue
                if "runId" not in record:
                    continue  # an error record of the writer, not a run's
                checked = _checked(record)
                if checked is None:
                    stats.bad_records += 1
                    continue
                records.append(checked)
    records.sort(key=lambda r: r["timestamp"])
    return records


def load_runs(log_dir: str | os.PathLike[str], key: str | None = None) -> list[Run]:
    """The runs in the event log, by start time (only those of ``key`` when given; keys
    are compared as text)."""
    return load_trace(log_dir, key)[0]


def load_trace(
    log_dir: str | os.PathLike[str], key: str | None = None
) -> tuple[list[Run], ReadStats]:
    """:func:`load_runs` and what reading skipped."""
    stats = ReadStats()
    runs: dict[str, Run] = {}
    calls: dict[str, list[tuple[str, Call]]] = {}
    for r in read_records(log_dir, stats):
        if key is not None and str(r.get("key")) != key:
            continue
        run_id = r["runId"]
        run = runs.get(run_id)
        if run is None:
            run = runs[run_id] = Run(
                r.get("key"), run_id, r["timestamp"], None, "running", None,
                r.get("jobId"), r.get("subtask"),
            )  # fmt: skip
        kind = r.get("record")
        if kind == "event":
            run.events.append(r)
        elif kind == "call":
            calls.setdefault(run_id, []).append(
                (
                    str(r.get("action") or ""),
                    Call(
                        str(r.get("kind", "call")),
                        str(r.get("name")),
                        r["timestamp"],
                        r.get("durationMs") or 0.0,
                        r.get("usage"),
                        _text_or_none(r.get("error")),
                        bool(r.get("replayed")),
                    ),
                )
            )
        elif kind == "action":
            run.actions.append(
                ActionRun(
                    str(r.get("action")),
                    str(r.get("eventType")),
                    str(r.get("eventId")),
                    r["timestamp"],
                    r.get("durationMs") or 0.0,
                    _text_or_none(r.get("error")),
                    _text_or_none(r.get("outcome")),
                )
            )
        elif kind == "run":
            run.start = r["timestamp"]
            run.duration_ms = r.get("durationMs") or 0.0
            run.status = str(r.get("status"))
            run.error = _text_or_none(r.get("error"))
    for run_id, run in runs.items():
        _actions_from_events(run)
        run.actions.sort(key=lambda a: a.start)
        for action_name, call in calls.get(run_id, []):
            owner = _owner(run.actions, action_name, call.start)
            if owner is not None:
                owner.calls.append(call)
        by_trigger = {(a.event_id, a.name): a for a in run.actions}
        for event in run.events:
            parent, sender = str(event.get("parentEventId")), str(event.get("action"))
            action = by_trigger.get((parent, sender))
            if action is not None:
                action.sent.append(str(event.get("eventType")))
    return sorted(runs.values(), key=lambda r: r.start), stats


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _actions_from_events(run: Run) -> None:
    """Add the action executions that only their events describe: an execution that sent
    events and ended without an error has no record of its own; its events carry
    ``action``, ``parentEventId`` (the event it handled), ``actionStart`` and ``durationMs``."""
    known = {(a.event_id, a.name) for a in run.actions}
    types = {str(e.get("eventId")): str(e.get("eventType")) for e in run.events}
    for event in run.events:
        name = event.get("action")
        if name is None:
            continue
        trigger = str(event.get("parentEventId"))
        if (trigger, str(name)) in known:
            continue
        known.add((trigger, str(name)))
        start = event.get("actionStart")
        run.actions.append(
            ActionRun(
                str(name),
                types.get(trigger, "?"),
                trigger,
                start if start is not None else event["timestamp"],
                event.get("durationMs") or 0.0,
            )
        )


def _owner(actions: list[ActionRun], name: str, start: float) -> ActionRun | None:
    """The execution of action ``name`` a call that started at ``start`` belongs to: a run's
    actions execute one after another, so it is the last one that started before it."""
    owner = None
    for a in actions:  # sorted by start
        if a.name == name:
            if a.start > start and owner is not None:
                break
            owner = a
    return owner


def _ms(value: float | None) -> str:
    return "?" if value is None else f"{value:.1f} ms"


def _tokens(usage: dict[str, int] | None) -> str:
    if not usage:
        return ""
    return f" tokens {usage.get('prompt_tokens', 0)}+{usage.get('completion_tokens', 0)}"


# C0 and C1 control characters, DEL, and the bidirectional overrides and isolates (which
# reorder what a terminal shows): written as escapes.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape_control(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(value: Any) -> str:
    """``value`` as text for a terminal: control characters (escape sequences, carriage
    returns, bidirectional overrides) written as ``\\xNN`` / ``\\uNNNN``."""
    return _CONTROL.sub(_escape_control, str(value))


def render_text(runs: list[Run]) -> str:
    """The runs as indented trees: run, actions (with the events they sent), calls. Run
    ids are shown whole (the runs of one runner share a prefix); text from the log is
    shown with its control characters escaped."""
    lines: list[str] = []
    for run in runs:
        prompt, completion = run.tokens
        tokens = f" tokens {prompt}+{completion}" if prompt or completion else ""
        error = f" error: {run.error}" if run.error else ""
        lines.append(
            f"run {run.run_id} key={run.key!r} {_ms(run.duration_ms)} {run.status}{tokens}{error}"
        )
        for action in run.actions:
            sent = f" -> {', '.join(action.sent)}" if action.sent else ""
            status = f" [{action.outcome}: {action.error}]" if action.outcome else ""
            lines.append(
                f"  {action.name} on {action.event_type} {_ms(action.duration_ms)}{status}{sent}"
            )
            for call in action.calls:
                flags = " (replayed)" if call.replayed else ""
                flags += f" error: {call.error}" if call.error else ""
                lines.append(
                    f"    {call.kind} {call.name} {_ms(call.duration_ms)}"
                    f"{_tokens(call.usage)}{flags}"
                )
    return "\n".join(safe_text(line) for line in lines)


def _as_json(runs: list[Run]) -> list[dict[str, Any]]:
    out = []
    for run in runs:
        out.append(
            {
                "key": run.key if isinstance(run.key, (str, int, float)) else repr(run.key),
                "runId": run.run_id,
                "start": run.start,
                "durationMs": run.duration_ms,
                "status": run.status,
                "error": run.error,
                "tokens": list(run.tokens),
                "actions": [
                    {
                        "name": a.name,
                        "eventType": a.event_type,
                        "start": a.start,
                        "durationMs": a.duration_ms,
                        "error": a.error,
                        "outcome": a.outcome,
                        "sent": a.sent,
                        "calls": [
                            {
                                "kind": c.kind,
                                "name": c.name,
                                "start": c.start,
                                "durationMs": c.duration_ms,
                                "usage": c.usage,
                                "error": c.error,
                                "replayed": c.replayed,
                            }
                            for c in a.calls
                        ],
                    }
                    for a in run.actions
                ],
            }
        )
    return out


_PAGE = Path(__file__).with_name("trace_page.html")


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities as None (strict JSON for the page)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


# Characters that could end the script or start markup inside it (``</script>``,
# ``<!--``), and the line separators older JavaScript parsers choke on: JSON escapes.
_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                  "\u2029": "\\u2029"}  # fmt: skip
_SCRIPT_UNSAFE_RE = re.compile("[<>&\u2028\u2029]")


def script_json(value: Any) -> str:
    """``value`` as JSON safe inside an HTML ``<script>`` element: strict (no NaN), with
    ``<``, ``>``, ``&`` and the line separators escaped everywhere."""
    text = json.dumps(_finite(value), default=str, allow_nan=False)
    return _SCRIPT_UNSAFE_RE.sub(lambda m: _SCRIPT_UNSAFE[m.group()], text)


def render_html(runs: list[Run], title: str = "flink-agents trace") -> str:
    """One self-contained HTML page with a timeline of ``runs``."""
    data = script_json(_as_json(runs))
    page = _PAGE.read_text(encoding="utf-8")
    safe_title = (
        title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )
    parts = {"__TITLE__": safe_title, "__DATA__": data}
    return re.sub("__TITLE__|__DATA__", lambda m: parts[m.group()], page)
