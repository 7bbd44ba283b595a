"""The event log's lines, made from bytes, against the records as dicts (to_json), and the
records of a run in progress (written at a flush, before the run ends)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic_core import to_json

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.events.event import Event, InputEvent
from flink_agents.runtime.metrics import SimpleMetricGroup
from flink_agents.runtime.observability import RunInfo, event_log
from flink_agents.runtime.observability.event_log import EventLogObserver

SECRET = "sk-lines-secret"
IDS = {"jobId": "job-1", "subtask": 3}


class _Result:
    extra_args = {"usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}}


def _observer(path: Path) -> EventLogObserver:
    return EventLogObserver(
        AgentConfiguration(
            # Drains only when told; the thread writer formats in this process.
            {"event-log.flush-ms": 600_000, "event-log.writer": "thread"}
        ),
        str(path),
        [SECRET],
        SimpleMetricGroup(),
        IDS,
    )


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def test_lines_are_the_records_to_json_writes(tmp_path: Path) -> None:
    path = tmp_path / "events.log"
    observer = _observer(path)
    try:
        run = RunInfo(("k", 1), "run-7", 1_763_900_000.25, time.perf_counter())
        observer.run_started(run)
        first = InputEvent(input={"q": 'a "quoted" \\ line'})
        observer.events_sent(run, [first], None, None)
        observer.call_finished(
            run, 'act"1', "model", "m", run.started_perf, 0.0123456, _Result(), None, False
        )
        observer.action_finished(run, 'act"1', first, run.started_perf, 0.5, None, None)
        sent = [Event(type="a", attributes={"n": 1}), Event(type="b", attributes={})]
        observer.events_sent(run, sent, first, 'act"1')
        failure = ValueError(f"bad {SECRET}")
        observer.action_finished(run, "act2", sent[0], run.started_perf, 0.25, failure, "ignored")
        # an action that sends nothing: its record comes with the run's next hook
        observer.action_finished(run, "act3", sent[1], run.started_perf + 1.0, 0.125, None, None)
        observer.run_finished(run, 1.5, RuntimeError("boom"))
        observer.writer.drain()
        lines = _lines(path)
        records = [json.loads(line) for line in lines]
        key = repr(("k", 1))  # not a JSON value: written as its repr
        base = {**IDS, "key": key, "runId": "run-7"}
        usage = {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
        event_ts = records[0]["timestamp"]
        expected: list[dict[str, Any]] = [
            {
                "record": "event",
                **base,
                "timestamp": event_ts,
                "eventId": first.id,
                "parentEventId": None,
                "eventType": "_input_event",
                "action": None,
                "logLevel": "STANDARD",
                "payload": {"input": {"q": 'a "quoted" \\ line'}},
            },
            {
                "record": "call",
                **base,
                "timestamp": run.started,
                "action": 'act"1',
                "kind": "model",
                "name": "m",
                "durationMs": 12.346,
                "usage": _Result.extra_args["usage"],
                "error": None,
                "replayed": False,
            },
        ]
        # An action that sent events has no record of its own: both events carry its
        # start, duration and usage.
        for event in sent:
            expected.append(
                {
                    "record": "event",
                    **base,
                    "timestamp": records[2]["timestamp"],
                    "eventId": event.id,
                    "parentEventId": first.id,
                    "eventType": event.type,
                    "action": 'act"1',
                    "logLevel": "STANDARD",
                    "actionStart": run.started,
                    "durationMs": 500.0,
                    "usage": usage,
                    "payload": dict(event.attributes),  # an Event writes them flat
                }
            )
        expected += [
            {
                "record": "action",
                **base,
                "timestamp": run.started,
                "action": "act2",
                "eventId": sent[0].id,
                "eventType": "a",
                "durationMs": 250.0,
                "error": "ValueError: bad ***",
                "outcome": "ignored",
            },
            {
                "record": "action",
                **base,
                "timestamp": run.started + 1.0,
                "action": "act3",
                "eventId": sent[1].id,
                "eventType": "b",
                "durationMs": 125.0,
                "error": None,
                "outcome": None,
            },
            {
                "record": "run",
                **base,
                "timestamp": run.started,
                "durationMs": 1500.0,
                "status": "failed",
                "error": "RuntimeError: boom",
            },
        ]
        assert len(lines) == len(expected)
        for line, record in zip(lines, expected, strict=True):
            assert line == to_json(record, fallback=str), (line, record)
    finally:
        observer.close()


def test_a_run_in_progress_is_written_at_a_flush(tmp_path: Path) -> None:
    path = tmp_path / "events.log"
    observer = _observer(path)
    try:
        run = RunInfo("k", "run-1", time.time(), time.perf_counter())
        observer.run_started(run)
        first = InputEvent(input=1)
        observer.events_sent(run, [first], None, None)
        observer.writer.drain()
        # the run waits (a slow model call, say): what it did so far is in the log
        assert [json.loads(line)["eventType"] for line in _lines(path)] == ["_input_event"]
        observer.action_finished(run, "quiet", first, run.started_perf, 0.1, None, None)
        observer.action_finished(run, "act", first, run.started_perf, 0.1, None, None)
        observer.writer.drain()
        observer.events_sent(run, [Event(type="out", attributes={})], first, "act")
        observer.run_finished(run, 0.2, None)
        observer.writer.drain()
        observer.writer.drain()
        records = [json.loads(line) for line in _lines(path)]
        # each once, in order: "quiet" sent nothing (a record of its own), "act" did
        assert [(r["record"], r.get("action")) for r in records] == [
            ("event", None),
            ("action", "quiet"),
            ("event", "act"),
            ("run", None),
        ]
        assert observer.open == {} and observer.queued == observer.taken == 2
    finally:
        observer.close()


def test_the_writer_process_writes_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same calls into an observer of each writer; event timestamps fixed (they are taken
    # when events are sent) so that the files can be compared byte for byte.
    monkeypatch.setattr(event_log, "time", SimpleNamespace(time=lambda: 1_763_900_001.5))
    first = InputEvent(input={"q": 'a "quoted" \\ line', "long": "x" * 5000})
    sent = Event(type="a", attributes={"api_key": "x"})
    files = {}
    for writer in ("thread", "process"):
        path = files[writer] = tmp_path / f"{writer}.log"
        metrics = SimpleMetricGroup()
        observer = EventLogObserver(
            AgentConfiguration({"event-log.writer": writer}), str(path), [SECRET], metrics, IDS
        )
        run = RunInfo(("k", 1), "run-7", 1_763_900_000.25, 0.0)
        observer.run_started(run)
        observer.events_sent(run, [first], None, None)
        observer.call_finished(run, "act", "model", "m", 0.0, 0.0123456, _Result(), None, False)
        observer.action_finished(run, "act", first, 0.0, 0.5, ValueError(SECRET), None)
        observer.events_sent(run, [sent], first, "act")
        observer.run_finished(run, 1.5, None)
        observer.close()
        assert metrics.to_dict()["eventLogRecordsWritten"] == 5
        assert metrics.to_dict()["eventLogWriteErrors"] == 0
    assert files["process"].read_bytes() == files["thread"].read_bytes()
    assert SECRET.encode() not in files["process"].read_bytes()
