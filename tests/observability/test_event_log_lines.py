"""The event log's lines, made from bytes, against the records as dicts (to_json), and the
records of a run in progress (written at a flush, before the run ends)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.events.event import Event, InputEvent
from flink_agents.runtime.metric_groups import SimpleMetricGroup
from flink_agents.runtime.observability import (
    ActionFinished,
    CallFinished,
    EventsSent,
    RunFinished,
    RunInfo,
)
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
        observer.events_sent(EventsSent(run, [first], None, None))
        observer.call_finished(
            CallFinished(
                run, 'act"1', "model", "m", run.started_perf, 0.0123456, _Result(), None, False
            )
        )
        observer.action_finished(
            ActionFinished(run, 'act"1', first, run.started_perf, 0.5, None, None)
        )
        sent = [Event(type="a", attributes={"n": 1}), Event(type="b", attributes={})]
        observer.events_sent(EventsSent(run, sent, first, 'act"1'))
        failure = ValueError(f"bad {SECRET}")
        observer.action_finished(
            ActionFinished(run, "act2", sent[0], run.started_perf, 0.25, failure, "ignored")
        )
        # an action that sends nothing: its record comes with the run's next hook
        observer.action_finished(
            ActionFinished(run, "act3", sent[1], run.started_perf + 1.0, 0.125, None, None)
        )
        observer.run_finished(RunFinished(run, 1.5, RuntimeError("boom")))
        observer.writer.drain()
        lines = _lines(path)
        key = repr(("k", 1))  # not a JSON value: written as its repr
        base = {**IDS, "key": key, "runId": "run-7"}
        usage = {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
        expected: list[dict[str, Any]] = [
            {
                "record": "event",
                **base,
                "timestamp": run.started,  # the input: sent at the run's start
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
                    # sent when the action ended: its start + its duration
                    "timestamp": run.started + 0.5,
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
        observer.events_sent(EventsSent(run, [first], None, None))
        observer.writer.drain()
        # the run waits (a slow model call, say): what it did so far is in the log
        assert [json.loads(line)["eventType"] for line in _lines(path)] == ["_input_event"]
        observer.action_finished(
            ActionFinished(run, "quiet", first, run.started_perf, 0.1, None, None)
        )
        observer.action_finished(
            ActionFinished(run, "act", first, run.started_perf, 0.1, None, None)
        )
        observer.writer.drain()
        observer.events_sent(EventsSent(run, [Event(type="out", attributes={})], first, "act"))
        observer.run_finished(RunFinished(run, 0.2, None))
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


def test_the_writer_process_writes_the_same_bytes(tmp_path: Path) -> None:
    # The same calls into an observer of each writer: every timestamp comes from the run's
    # start and the hooks' arguments, so the files can be compared byte for byte.
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
        observer.events_sent(EventsSent(run, [first], None, None))
        observer.call_finished(
            CallFinished(run, "act", "model", "m", 0.0, 0.0123456, _Result(), None, False)
        )
        observer.action_finished(
            ActionFinished(run, "act", first, 0.0, 0.5, ValueError(SECRET), None)
        )
        observer.events_sent(EventsSent(run, [sent], first, "act"))
        observer.run_finished(RunFinished(run, 1.5, None))
        observer.close()
        assert metrics.to_dict()["eventLogRecordsWritten"] == 5
        assert metrics.to_dict()["eventLogWriteErrors"] == 0
    assert files["process"].read_bytes() == files["thread"].read_bytes()
    assert SECRET.encode() not in files["process"].read_bytes()


def test_an_action_that_sends_nothing_keeps_its_usage_to_itself(tmp_path: Path) -> None:
    # "quiet" calls the model and sends nothing; "act" sends an event: its usage is its own
    # (none here), and the quiet execution has an action record with its own times.
    path = tmp_path / "events.log"
    observer = _observer(path)
    try:
        run = RunInfo("k", "run-1", 1_763_900_000.0, 100.0)
        observer.run_started(run)
        first = InputEvent(input=1)
        observer.events_sent(EventsSent(run, [first], None, None))
        observer.call_finished(
            CallFinished(run, "quiet", "model", "m", 100.25, 0.5, _Result(), None, False)
        )
        observer.action_finished(ActionFinished(run, "quiet", first, 100.0, 1.0, None, None))
        observer.action_finished(ActionFinished(run, "act", first, 101.0, 0.25, None, None))
        observer.events_sent(EventsSent(run, [Event(type="out", attributes={})], first, "act"))
        observer.run_finished(RunFinished(run, 2.0, None))
        observer.writer.drain()
        records = [json.loads(line) for line in _lines(path)]
        assert [(r["record"], r.get("action")) for r in records] == [
            ("event", None),
            ("call", "quiet"),
            ("action", "quiet"),
            ("event", "act"),
            ("run", None),
        ]
        call, quiet, out = records[1], records[2], records[3]
        assert call["usage"] == _Result.extra_args["usage"]
        assert call["timestamp"] == run.started + 0.25
        assert (quiet["timestamp"], quiet["durationMs"]) == (run.started, 1000.0)
        assert "usage" not in out
        assert (out["actionStart"], out["durationMs"]) == (run.started + 1.0, 250.0)
        assert out["timestamp"] == run.started + 1.25
    finally:
        observer.close()


def test_a_value_json_cannot_hold_is_written_as_its_str(tmp_path: Path) -> None:
    # output_schema is kept as given (exempt from the JSON check): an object JSON cannot
    # hold is written as its str(), the rest of the event as usual.
    from flink_agents.api.events.chat_event import ChatRequestEvent

    class Odd:
        def __str__(self) -> str:
            return "odd schema"

    path = tmp_path / "events.log"
    observer = _observer(path)
    try:
        run = RunInfo("k", "run-1", 1_763_900_000.0, 100.0)
        observer.run_started(run)
        request = ChatRequestEvent(model="m", messages=[], output_schema=Odd())
        observer.events_sent(EventsSent(run, [request], None, None))
        observer.run_finished(RunFinished(run, 1.0, None))
        observer.writer.drain()
        event = json.loads(_lines(path)[0])
        assert event["eventId"] == str(request.id)
        assert event["payload"]["output_schema"] == "odd schema"
        assert event["payload"]["model"] == "m"
    finally:
        observer.close()
