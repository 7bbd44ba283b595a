"""The event log's files: private (0600 files, 0700 directories) and strict JSON."""

from __future__ import annotations

import json
import math
import os
import stat
import time
from pathlib import Path

import pytest

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.events.event import Event, InputEvent
from flink_agents.runtime.metric_groups import SimpleMetricGroup
from flink_agents.runtime.observability import EventsSent, RunFinished, RunInfo
from flink_agents.runtime.observability.event_log import EventLogObserver


def _observer(path: Path, **config: object) -> EventLogObserver:
    return EventLogObserver(
        AgentConfiguration({"event-log.flush-ms": 600_000, "event-log.writer": "thread", **config}),
        str(path),
        [],
        SimpleMetricGroup(),
        {"jobId": "job", "subtask": 0},
    )


def _one_run(observer: EventLogObserver, *events: Event) -> None:
    run = RunInfo("k", "run-1", time.time(), time.perf_counter())
    observer.run_started(run)
    observer.events_sent(EventsSent(run, list(events), None, None))
    observer.run_finished(RunFinished(run, 0.5, None))
    observer.writer.drain()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_files_and_directories_are_private(tmp_path: Path) -> None:
    directory = tmp_path / "shared" / "flink-agents"
    path = directory / "events.log"
    observer = _observer(path, **{"event-log.rotation.max-file-bytes": 1024})
    old_umask = os.umask(0o022)  # a usual umask: would give 0644 files and 0755 directories
    try:
        for i in range(6):  # enough lines to rotate
            _one_run(observer, InputEvent(input={"i": i, "text": "x" * 400}))
    finally:
        os.umask(old_umask)
        observer.close()
    assert _mode(directory) == 0o700
    files = sorted(directory.iterdir())
    assert len(files) > 1  # rotated files too
    assert {_mode(f) for f in files} == {0o600}


def test_a_file_made_earlier_with_wider_permissions_is_narrowed(tmp_path: Path) -> None:
    path = tmp_path / "events.log"
    path.write_text("")
    path.chmod(0o644)
    observer = _observer(path)
    try:
        _one_run(observer, InputEvent(input=1))
    finally:
        observer.close()
    assert _mode(path) == 0o600


@pytest.mark.parametrize("level", ["STANDARD", "VERBOSE"])
def test_not_a_number_is_written_as_null(tmp_path: Path, level: str) -> None:
    """Strict JSON: NaN and infinities are null, on the fast path and on the walk (a
    secret-named key sends the payload through the walk)."""
    path = tmp_path / "events.log"
    observer = _observer(path, **{"event-log.level": level})
    try:
        _one_run(
            observer,
            InputEvent(input={"score": math.nan, "big": math.inf}),
            Event(type="t", attributes={"api_key": "k", "low": -math.inf}),
        )
    finally:
        observer.close()
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text

    def strict(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    records = [json.loads(line, parse_constant=strict) for line in text.splitlines()]
    payloads = [r["payload"] for r in records if r["record"] == "event"]
    assert payloads[0] == {"input": {"score": None, "big": None}}
    assert payloads[1] == {"api_key": "***", "low": None}
