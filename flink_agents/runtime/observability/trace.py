"""Reads event logs back into runs and shows them: an indented tree, or one HTML page.

:func:`load_runs` reads every ``events-*.log`` file of a directory (rotated ones too) and
groups the records by run; a call belongs to the execution of its action during which it
started. :func:`render_text` prints a run as a tree with durations and tokens;
:func:`render_html` writes a self-contained page (inline CSS and JavaScript, no network)
with a timeline of the runs, their actions and their model and tool calls.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flink_agents.errors import UsageError


@dataclass
class Call:
    """A model, tool or other durable call (a model call's provider and models are known
    when the log has them: see ``genai.py``)."""

    kind: str
    name: str
    start: float
    duration_ms: float
    usage: dict[str, int] | None = None
    error: str | None = None
    replayed: bool = False
    provider: str | None = None
    model: str | None = None
    response_model: str | None = None
    finish_reason: str | None = None
    response_id: str | None = None


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
    #: Calls made outside any action execution (by agent hooks).
    calls: list[Call] = field(default_factory=list)

    @property
    def tokens(self) -> tuple[int, int]:
        """``(prompt, completion)`` tokens of its model calls."""
        prompt = completion = 0
        for call in [c for a in self.actions for c in a.calls] + self.calls:
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


def read_records(log_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every record of the event log files in ``log_dir`` (or of one file), by time.
    Lines that are not JSON (a file cut by a crash) are skipped."""
    records: list[dict[str, Any]] = []
    for file in _files(log_dir):
        with open(file, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(record, dict) and "runId" in record:
                    records.append(record)
    records.sort(key=lambda r: float(r.get("timestamp") or 0))
    return records


def load_runs(log_dir: str | os.PathLike[str], key: str | None = None) -> list[Run]:
    """The runs in the event log, by start time (only those of ``key`` when given; keys
    are compared as text)."""
    runs: dict[str, Run] = {}
    calls: dict[str, list[tuple[str, Call]]] = {}
    for r in read_records(log_dir):
        if key is not None and str(r.get("key")) != key:
            continue
        run_id = r["runId"]
        run = runs.get(run_id)
        if run is None:
            run = runs[run_id] = Run(
                r.get("key"), run_id, float(r["timestamp"]), None, "running", None,
                r.get("jobId"), r.get("subtask"),
            )  # fmt: skip
        kind = r.get("record")
        if kind == "event":
            run.events.append(r)
        elif kind == "call":
            calls.setdefault(run_id, []).append(
                (
                    r.get("action") or "",
                    Call(
                        r.get("kind", "call"),
                        str(r.get("name")),
                        float(r["timestamp"]),
                        float(r.get("durationMs") or 0),
                        r.get("usage"),
                        r.get("error"),
                        bool(r.get("replayed")),
                        r.get("provider"),
                        r.get("model"),
                        r.get("responseModel"),
                        r.get("finishReason"),
                    ),
                )
            )
        elif kind == "action":
            run.actions.append(
                ActionRun(
                    str(r.get("action")),
                    str(r.get("eventType")),
                    str(r.get("eventId")),
                    float(r["timestamp"]),
                    float(r.get("durationMs") or 0),
                    r.get("error"),
                    r.get("outcome"),
                )
            )
        elif kind == "run":
            run.start = float(r["timestamp"])
            run.duration_ms = float(r.get("durationMs") or 0)
            run.status = str(r.get("status"))
            run.error = r.get("error")
    for run_id, run in runs.items():
        _actions_from_events(run)
        run.actions.sort(key=lambda a: a.start)
        for action_name, call in calls.get(run_id, []):
            owner = _owner(run.actions, action_name, call.start)
            (owner.calls if owner is not None else run.calls).append(call)
        by_trigger = {(a.event_id, a.name): a for a in run.actions}
        for event in run.events:
            parent, sender = str(event.get("parentEventId")), str(event.get("action"))
            action = by_trigger.get((parent, sender))
            if action is not None:
                action.sent.append(str(event.get("eventType")))
    return sorted(runs.values(), key=lambda r: r.start)


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
                float(start if start is not None else event["timestamp"]),
                float(event.get("durationMs") or 0),
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


def _call_line(call: Call, indent: str) -> str:
    who = " ".join(p for p in (call.provider, call.model) if p)
    flags = " (replayed)" if call.replayed else ""
    flags += f" error: {call.error}" if call.error else ""
    return (
        f"{indent}{call.kind} {call.name}{f' [{who}]' if who else ''} {_ms(call.duration_ms)}"
        f"{_tokens(call.usage)}{flags}"
    )


def render_text(runs: list[Run]) -> str:
    """The runs as indented trees: run, actions (with the events they sent), calls."""
    lines: list[str] = []
    for run in runs:
        prompt, completion = run.tokens
        tokens = f" tokens {prompt}+{completion}" if prompt or completion else ""
        error = f" error: {run.error}" if run.error else ""
        lines.append(
            f"run {run.run_id[:12]} key={run.key!r} {_ms(run.duration_ms)} {run.status}"
            f"{tokens}{error}"
        )
        for action in run.actions:
            sent = f" -> {', '.join(action.sent)}" if action.sent else ""
            status = f" [{action.outcome}: {action.error}]" if action.outcome else ""
            lines.append(
                f"  {action.name} on {action.event_type} {_ms(action.duration_ms)}{status}{sent}"
            )
            lines.extend(_call_line(call, "    ") for call in action.calls)
        lines.extend(_call_line(call, "  ") for call in run.calls)
    return "\n".join(lines)


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


def render_html(runs: list[Run], title: str = "flink-agents trace") -> str:
    """One self-contained HTML page with a timeline of ``runs``."""
    data = json.dumps(_as_json(runs), default=str).replace("</", "<\\/")
    page = _PAGE.read_text(encoding="utf-8")
    safe_title = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return page.replace("__TITLE__", safe_title).replace("__DATA__", data)
