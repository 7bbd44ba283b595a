"""`flink-agents trace` shows what the rate governance did: throttled and waited calls,
cached answers, spent budgets (from the event log's ``rate`` fields and ``budget`` records)."""

from __future__ import annotations

import json
from pathlib import Path

from flink_agents.runtime.observability.trace import load_runs, render_text


def _write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_throttled_waited_and_cached_calls_and_budget_records(tmp_path: Path) -> None:
    head = {"jobId": "j", "subtask": 0, "key": "a", "runId": "r1"}
    _write(
        tmp_path / "events-j-agent-0.log",
        [
            {**head, "record": "action", "timestamp": 1.0, "action": "chat_model_action",
             "eventId": "e1", "eventType": "_chat_request_event", "durationMs": 300.0,
             "error": None, "outcome": None},
            {**head, "record": "call", "timestamp": 1.01, "action": "chat_model_action",
             "kind": "model", "name": "model", "durationMs": 250.0,
             "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
             "error": None, "replayed": False, "rate": {"throttled": 2, "waitMs": 120.4}},
            {**head, "record": "call", "timestamp": 1.2, "action": "chat_model_action",
             "kind": "model", "name": "model", "durationMs": 0.1, "usage": None,
             "error": None, "replayed": False, "rate": {"cached": True}},
            {**head, "record": "budget", "timestamp": 1.25, "action": "chat_model_action",
             "budget": "key", "option": "budget.tokens-per-key-per-day", "model": "model",
             "used": 54, "limit": 40, "resetsAt": 86400.0, "then": "error"},
            {**head, "record": "run", "timestamp": 1.0, "durationMs": 400.0, "status": "ok",
             "error": None},
        ],
    )  # fmt: skip
    (run,) = load_runs(tmp_path)
    calls = run.actions[0].calls
    assert [c.rate for c in calls] == [{"throttled": 2, "waitMs": 120.4}, {"cached": True}]
    assert run.notes[0]["used"] == 54
    text = render_text([run])
    assert "model model 250" in text and "(throttled 2x, waited 120 ms)" in text
    assert "(cached)" in text
    assert "budget key spent: 54 of 40 tokens (budget.tokens-per-key-per-day), then error" in text
