"""The event log of a test run, read back: records, runs, calls, and metrics made from them.

``run_agent`` writes the event log of every run (``event-log.enabled``) into a directory of
its own and returns it as an :class:`EventLog`; the ``event_log`` fixture of the pytest
plugin gives one for any job. Each record is one JSON line of the event log (see
``flink_agents/runtime/observability/event_log.py``): ``record`` is ``event``, ``action``,
``call`` or ``run``.

:meth:`EventLog.metrics` counts what the records say under the names of the built-in
metrics (``numOfRuns``, ``numOfEventProcessed``, ``numOfActionsExecuted``,
``numOfModelCalls``, ``numOfCallsReplayed``, ``promptTokens``...), in every mode: a Flink
job's metric values are gone when a MiniCluster job ends, its event log is not. After a
failure and restart they count the work of every attempt (``numOfCallsReplayed`` says how
many calls the restart answered from Flink state).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["EventLog", "read_event_log"]


def read_event_log(log_dir: str | os.PathLike[str]) -> EventLog:
    """The records of the event log files (``events-*.log*``) in ``log_dir``, by time; an
    empty log when there are none. Lines cut by a crash are skipped."""
    records: list[dict[str, Any]] = []
    path = Path(log_dir)
    files = (
        sorted(p for p in path.iterdir() if p.name.startswith("events-")) if path.is_dir() else []
    )
    for file in files:
        with open(file, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(record, dict) and "record" in record:
                    records.append(record)
    records.sort(key=lambda r: float(r.get("timestamp") or 0))
    return EventLog(records, path)


class EventLog:
    """Records of an event log, with the questions tests ask of them.

    Args:
        records: the records (dicts, one per JSON line), by time.
        directory: where they were read from.
    """

    def __init__(self, records: list[dict[str, Any]], directory: Path | None = None) -> None:
        self.records = records
        self.directory = directory

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.records)

    def __repr__(self) -> str:
        kinds = Counter(r.get("record") for r in self.records)
        return f"EventLog({dict(kinds)})"

    def events(self, event_type: str | None = None, *, key: Any = None) -> list[dict[str, Any]]:
        """Event records (of ``event_type``, e.g. ``"_chat_request_event"``; of ``key``)."""
        return [
            r
            for r in self.records
            if r.get("record") == "event"
            and (event_type is None or r.get("eventType") == event_type)
            and (key is None or _same_key(r.get("key"), key))
        ]

    def calls(
        self,
        kind: str | None = None,
        *,
        name: str | None = None,
        key: Any = None,
        replayed: bool | None = None,
    ) -> list[dict[str, Any]]:
        """Call records: ``kind`` ``"model"``, ``"tool"`` or ``"call"`` (another durable
        call, ``ctx.durable_execute``); ``name`` the chat model setup, tool or function;
        ``replayed`` True for calls answered from the durable log after a restore (the
        model or tool was not called), False for real ones.
        """
        return [
            r
            for r in self.records
            if r.get("record") == "call"
            and (kind is None or r.get("kind") == kind)
            and (name is None or r.get("name") == name)
            and (key is None or _same_key(r.get("key"), key))
            and (replayed is None or bool(r.get("replayed")) is replayed)
        ]

    def runs(self, *, key: Any = None) -> list[dict[str, Any]]:
        """Run records (one per run that ended: ``status``, ``durationMs``, ``error``)."""
        return [
            r
            for r in self.records
            if r.get("record") == "run" and (key is None or _same_key(r.get("key"), key))
        ]

    def errors(self) -> list[dict[str, Any]]:
        """Records that carry an error (failed runs, actions, calls)."""
        return [r for r in self.records if r.get("error")]

    def text(self) -> str:
        """The log as JSON lines (for searching it, e.g. for a secret)."""
        return "\n".join(json.dumps(r, ensure_ascii=False) for r in self.records)

    def metrics(self) -> dict[str, Any]:
        """Counts under the built-in metrics' names (see the module docstring); per action:
        ``"action.<name>.numOfActionsExecuted"``, per model: ``"model.<name>.promptTokens"``
        and ``completionTokens``, per tool: ``"tool.<name>.numOfToolCalls"``."""
        out: Counter[str] = Counter()
        executions: set[tuple[Any, ...]] = set()
        for r in self.records:
            kind = r.get("record")
            if kind == "event":
                out["numOfEventProcessed"] += 1
                if r.get("action") is not None:
                    executions.add((r.get("runId"), r.get("action"), r.get("actionStart")))
            elif kind == "action":
                out["numOfActionsExecuted"] += 1
                out[f"action.{r.get('action')}.numOfActionsExecuted"] += 1
                outcome = r.get("outcome")
                if outcome in ("failed", "retried", "ignored"):
                    out[f"numOfActions{outcome.capitalize()}"] += 1
            elif kind == "run":
                out["numOfRuns"] += 1
                if r.get("status") != "ok":
                    out["numOfRunsFailed"] += 1
            elif kind == "call":
                call_kind, name = r.get("kind"), r.get("name")
                if r.get("replayed"):
                    # answered from the durable log: the model or tool was not called
                    out["numOfCallsReplayed"] += 1
                elif call_kind == "model":
                    out["numOfModelCalls"] += 1
                    usage = r.get("usage") or {}
                    prompt = int(usage.get("prompt_tokens") or 0)
                    completion = int(usage.get("completion_tokens") or 0)
                    out["promptTokens"] += prompt
                    out["completionTokens"] += completion
                    out[f"model.{name}.promptTokens"] += prompt
                    out[f"model.{name}.completionTokens"] += completion
                elif call_kind == "tool":
                    out["numOfToolCalls"] += 1
                    out[f"tool.{name}.numOfToolCalls"] += 1
        for _, action, _ in executions:
            out["numOfActionsExecuted"] += 1
            out[f"action.{action}.numOfActionsExecuted"] += 1
        base = {
            "numOfRuns": 0,
            "numOfRunsFailed": 0,
            "numOfEventProcessed": 0,
            "numOfActionsExecuted": 0,
            "numOfActionsFailed": 0,
            "numOfActionsRetried": 0,
            "numOfActionsIgnored": 0,
            "numOfModelCalls": 0,
            "numOfToolCalls": 0,
            "numOfCallsReplayed": 0,
            "promptTokens": 0,
            "completionTokens": 0,
        }
        return {**base, **dict(sorted(out.items()))}


def _same_key(logged: Any, key: Any) -> bool:
    """Keys are compared as the event log writes them (JSON values; others as text)."""
    return bool(logged == key or str(logged) == str(key))
