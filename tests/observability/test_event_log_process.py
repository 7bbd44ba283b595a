"""The event log's writer process: it exits when its pipe closes (the parent closed it or
died), and reports write errors back (one warning)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.errors import ConfigurationError
from flink_agents.runtime.metric_groups import SimpleMetricGroup
from flink_agents.runtime.observability import RunFinished, RunInfo, event_log_options
from flink_agents.runtime.observability.event_log import EventLogObserver
from flink_agents.runtime.observability.event_log_process import ProcessWriter, find_python


def _gone(pid: int, seconds: float = 20.0) -> bool:
    """Whether process ``pid`` ended (a zombie nobody reaps counts as ended)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            return True
        if "\nState:\tZ" in status:
            return True
        time.sleep(0.05)
    return False


def _observer(path: Path, metrics: SimpleMetricGroup) -> EventLogObserver:
    return EventLogObserver(
        AgentConfiguration({"event-log.writer": "process"}), str(path), [], metrics, {"subtask": 0}
    )


def test_the_interpreter_is_found() -> None:
    python = find_python()
    assert python is not None and os.access(python, os.X_OK)


def test_the_child_exits_when_the_parent_closes_the_pipe(tmp_path: Path) -> None:
    observer = _observer(tmp_path / "e.log", SimpleMetricGroup())
    writer = observer.writer
    assert isinstance(writer, ProcessWriter)
    assert writer.started.wait(30) and writer.proc is not None
    run = RunInfo("k", "run-1", time.time(), time.perf_counter())
    observer.run_started(run)
    observer.run_finished(RunFinished(run, 0.1, None))
    observer.close()
    assert writer.proc.returncode == 0
    assert b'"record":"run"' in (tmp_path / "e.log").read_bytes()


def test_the_child_exits_when_the_parent_dies(tmp_path: Path) -> None:
    # A parent killed with SIGKILL closes nothing itself: its end of the pipe closes with it.
    script = (
        "import sys, time\n"
        "from flink_agents.api.core_options import AgentConfiguration\n"
        "from flink_agents.runtime.metric_groups import SimpleMetricGroup\n"
        "from flink_agents.runtime.observability.event_log import EventLogObserver\n"
        "c = AgentConfiguration({'event-log.writer': 'process'})\n"
        "o = EventLogObserver(c, sys.argv[1], [], SimpleMetricGroup(), {})\n"
        "o.writer.started.wait(30)\n"
        "print(o.writer.proc.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path / "e.log")], stdout=subprocess.PIPE
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert not _gone(child, 0.5)
    parent.kill()
    parent.wait()
    assert _gone(child)


def test_a_failing_directory_counts_errors_and_warns_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    metrics = SimpleMetricGroup()
    with caplog.at_level(logging.WARNING, logger="flink_agents.event_log"):
        observer = _observer(blocker / "log" / "e.log", metrics)
        for i in range(3):
            run = RunInfo("k", f"run-{i}", time.time(), time.perf_counter())
            observer.run_started(run)
            observer.run_finished(RunFinished(run, 0.1, None))
            observer.writer.drain()  # three batches: three failing writes
        observer.close()
    assert isinstance(observer.writer, ProcessWriter) and observer.writer.proc is not None
    m = metrics.to_dict()
    assert m["eventLogWriteErrors"] == 3 and m["eventLogRecordsWritten"] == 0
    warnings = [r for r in caplog.records if "cannot write the event log" in r.message]
    assert len(warnings) == 1 and "not-a-dir" in warnings[0].getMessage()


@pytest.mark.parametrize(
    ("setting", "flink", "cpus", "expected"),
    [
        ("auto", True, 2, "process"),  # a Flink subtask with a CPU to spare
        ("auto", True, 1, "thread"),  # one CPU: a child would take the job's
        ("auto", False, 8, "thread"),  # the local environment: no child per runner
        ("process", False, 1, "process"),
        ("thread", True, 8, "thread"),
    ],
)
def test_the_writer_is_chosen_by_host_and_cpus(
    monkeypatch: pytest.MonkeyPatch, setting: str, flink: bool, cpus: int, expected: str
) -> None:
    monkeypatch.setattr(event_log_options, "_usable_cpus", lambda: cpus)
    config = AgentConfiguration({"event-log.writer": setting})
    assert event_log_options.writer_kind(config, flink=flink) == expected


def test_auto_is_the_default_and_a_bad_writer_is_an_error() -> None:
    assert AgentConfiguration().get(event_log_options.EventLogOptions.WRITER) == "auto"
    with pytest.raises(ConfigurationError, match="auto, process or thread"):
        AgentConfiguration({"event-log.writer": "fork"})


def test_the_writer_process_imports_neither_the_core_nor_the_plan() -> None:
    # It starts with every Flink subtask that logs: the core and the plan (pydantic models,
    # tools, the event classes) cost it ~0.15 s of CPU more at each start.
    code = (
        "import sys, flink_agents.runtime.observability.event_log_process\n"
        "heavy = [m for m in ('flink_agents.runtime.core', 'flink_agents.plan.agent_plan',\n"
        "    'flink_agents.api.events.event') if m in sys.modules]\n"
        "print(heavy)\n"
        "import flink_agents.runtime as r\n"
        "print(r.AgentRunner.__name__, r.RunResult.__name__, r.ResourceCache.__name__)\n"
        "print({'AgentRunner', 'RunResult', 'ResourceCache'} <= set(dir(r)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == "AgentRunner RunResult ResourceCache"  # still there, loaded on use
    assert out[2] == "True"
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        import flink_agents.runtime as runtime

        runtime.Nope  # noqa: B018
