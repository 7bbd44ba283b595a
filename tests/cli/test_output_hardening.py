"""What the command shows and writes is safe whatever the data: the trace's text escapes
control characters, its page keeps data inside its script, bad log lines are skipped and
counted, run ids are shown whole, and ``run`` writes strict JSON."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext
from flink_agents.cli import main
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.local.runner import LocalRunner
from flink_agents.runtime.observability.trace import load_trace, render_html

HOSTILE = "\x1b[2J\x1b]0;pwned\x07<!--<script>alert(1)</script>\r\u202eevil"


def echo(event: Event, ctx: RunnerContext) -> None:
    ctx.send_event(Event(type="note", attributes={"text": HOSTILE}))
    ctx.send_event(OutputEvent(output=event.get_attr("input")))


def _log_dir(tmp_path: Path, runs: int = 3) -> Path:
    agent = Agent()
    agent.add_action(HOSTILE, [InputEvent], echo)  # a name with control characters too
    directory = tmp_path / "log"
    config = {"event-log.enabled": True, "event-log.writer": "thread", "baseLogDir": str(directory)}
    with LocalRunner(AgentPlan.from_agent(agent, config)) as runner:
        runner.run([(HOSTILE, i) for i in range(runs)])
    return directory


def test_trace_text_escapes_control_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = _log_dir(tmp_path)
    assert main(["trace", str(directory)]) == 0
    out = capsys.readouterr().out
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", out)
    assert "\\x1b[2J" in out and "\\u202e" in out  # shown, escaped


def test_run_ids_are_shown_whole_and_unique(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = _log_dir(tmp_path, runs=5)
    assert main(["trace", str(directory)]) == 0
    ids = [
        line.split()[1] for line in capsys.readouterr().out.splitlines() if line.startswith("run ")
    ]
    assert len(ids) == 5 and len(set(ids)) == 5


def test_the_page_keeps_hostile_data_inside_its_data_block(tmp_path: Path) -> None:
    page = render_html(load_trace(_log_dir(tmp_path))[0], title="<!--<script>")
    start = page.index('<script id="trace-data" type="application/json">')
    end = page.index("</script>", start)
    block = page[start + len('<script id="trace-data" type="application/json">') : end]
    assert "<" not in block and ">" not in block
    data = json.loads(block)
    assert data and all(run["key"] == HOSTILE for run in data)  # the text itself survives
    assert "<!--<script>" not in page and "&lt;!--&lt;script&gt;" in page  # the title too


def _write_lines(directory: Path, lines: list[str]) -> None:
    path = next(directory.glob("events-*.log"))
    with path.open("a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))


def test_bad_lines_are_skipped_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = _log_dir(tmp_path, runs=2)
    now = time.time()
    _write_lines(
        directory,
        [
            '{"record": "run", "runId": "x", "timestamp": "not a number"}',
            '{"record": "event", "runId": 7, "timestamp": 1.0}',
            '{"record": "call", "runId": "y", "timestamp": 1.0, "usage": {"a": "many"}}',
            '{"record": "run", "runId": "z", "timestamp": NaN}',
            "[1, 2, 3]",
            '{"record": "run", "runId": "cut',
            f'{{"record": "run", "runId": "fine", "timestamp": {now}, "durationMs": 1.5, '
            '"status": "ok", "error": null}',
        ],
    )
    runs, stats = load_trace(directory)
    assert len(runs) == 3 and runs[-1].run_id == "fine"
    assert (stats.not_json, stats.bad_records) == (2, 4)
    assert main(["trace", str(directory)]) == 0
    captured = capsys.readouterr()
    assert (
        "skipped 6 of" in captured.err and "(2 not JSON, 4 not event log records)" in captured.err
    )
    assert "run fine " in captured.out


def test_run_writes_strict_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": 1, "x": NaN, "y": [Infinity, -Infinity, 1.5]}\n', encoding="utf-8")
    target = tmp_path / "out.jsonl"
    code = main(
        [
            "run",
            "tests.cli.agents:CountingAgent",
            "-i",
            str(source),
            "-o",
            str(target),
            "--key-field",
            "id",
            "--no-progress",
        ]
    )
    assert code == 0, capsys.readouterr().err

    def strict(constant: str) -> Any:
        raise ValueError(f"not JSON: {constant}")

    lines = [json.loads(line, parse_constant=strict) for line in target.read_text().splitlines()]
    assert lines[0]["output"]["input"] == {"id": 1, "x": None, "y": [None, None, 1.5]}
