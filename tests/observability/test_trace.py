"""``flink-agents trace``: the tree of a tool-calling run, and the HTML timeline opened in
real headless chromium."""

from __future__ import annotations

import html
import subprocess
import sys
from pathlib import Path

import pytest

from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.cli import main
from flink_agents.runtime.observability.trace import load_runs
from tests.browser import run_headless
from tests.observability.agents import tool_agent


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("event-log")
    env = AgentsExecutionEnvironment.get_execution_environment(
        **{"event-log.enabled": True, "baseLogDir": str(directory)}
    )
    env.from_list([{"key": k, "value": {"name": k}} for k in ("alice", "bob")]).apply(
        tool_agent()
    ).to_list()
    env.execute()
    return directory


def test_tree_shows_actions_calls_durations_and_tokens(
    log_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trace", str(log_dir), "--key", "bob"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("run ") and "key='bob'" in lines[0]
    assert lines[0].endswith("ok tokens 30+7")
    body = [line.split(" ms")[0].rsplit(" ", 1)[0] for line in lines[1:]]
    assert body == [
        "  ask on _input_event",
        "  note_audit on audit",
        "  chat_model_action on _chat_request_event",
        "    model model [scripted]",
        "  tool_call_action on _tool_request_event",
        "    tool lookup",
        "  chat_model_action on _tool_response_event",
        "    model model [scripted]",
        "  answer on _chat_response_event",
    ]
    assert lines[4].endswith("tokens 10+2") and lines[8].endswith("tokens 20+5")
    assert "-> _tool_request_event" in lines[3]


def test_trace_of_a_missing_directory_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trace", str(tmp_path / "nope")]) == 2
    assert "no event log directory" in capsys.readouterr().err
    assert main(["trace", str(tmp_path)]) == 2
    assert "event-log.enabled" in capsys.readouterr().err


def test_html_timeline_in_headless_chromium(log_dir: Path, tmp_path: Path) -> None:
    page = tmp_path / "trace.html"
    assert main(["trace", str(log_dir), "--html", str(page)]) == 0
    text = page.read_text()
    assert "http://" not in text and "https://" not in text  # nothing loaded from a network
    result = run_headless(page.as_uri(), tmp_path / "profile", "--dump-dom")
    dom = html.unescape(result.stdout)
    assert "</html>" in dom, result.stderr[-2000:]
    assert "2 of 2 runs" in dom  # the script ran
    for key in ("alice", "bob"):
        assert f"key {key}" in dom
    runs = load_runs(log_dir)
    for run in runs:
        assert f'data-run="{run.run_id}"' in dom
    assert dom.count('data-kind="action"') == 6 * len(runs)
    assert dom.count('data-kind="model call"') == 2 * len(runs)
    assert dom.count('data-kind="tool call"') == len(runs)
    for label in (
        "tool_call_action on _tool_request_event",
        "model model tokens 10+2",
        "tool lookup",
        "answer on _chat_response_event",
    ):
        assert label in dom, label


def test_cli_entry_point_runs_trace(log_dir: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "flink_agents.cli", "trace", str(log_dir), "--limit", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("\nrun ") + out.stdout.startswith("run ") == 1
    assert "1 earlier runs not shown" in out.stdout
