"""The pytest plugin, run in a pytest subprocess on test files written here: fixtures,
options, the cassette fixture's file and modes, the skip where Java is missing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pytest(tmp_path: Path, test: str, *args: str, env: dict[str, str] | None = None):
    (tmp_path / "test_user.py").write_text(textwrap.dedent(test))
    # The plugin by name (the entry point of an install is blocked so it is loaded once).
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:flink_agents",
        "-p",
        "flink_agents.testing.pytest_plugin",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:asyncio",
        "--strict-markers",
        "-rs",
        "-q",
        str(tmp_path / "test_user.py"),
        *args,
    ]
    base = {**os.environ, "PYTHONPATH": str(ROOT)}
    base.pop("FLINK_AGENTS_TEST_MODE", None)
    base.pop("FLINK_AGENTS_CASSETTE_MODE", None)
    return subprocess.run(
        command,
        cwd=tmp_path,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


FIXTURES = """
    import pytest
    from flink_agents.testing import run_agent
    from tests.testing.agents import weather_agent, inputs

    def test_local_env_and_event_log(local_env, event_log):
        for key, value in event_log.config.items():
            local_env.get_config().set_str(key, value)
        out = local_env.from_list([{"key": "k", "value": inputs(1)[0]}]).apply(
            weather_agent()).to_list()
        local_env.execute()
        assert len(out) == 1
        assert event_log.read().metrics()["numOfRuns"] == 1

    def test_mode(flink_mode):
        print("MODE", flink_mode)

    @pytest.mark.parametrize("flink_mode", ["process"])
    def test_mode_parametrized(flink_mode):
        assert flink_mode == "process"

    def test_unrelated():
        assert True
"""


def test_fixtures_and_the_mode_option(tmp_path):
    done = _pytest(tmp_path, FIXTURES, "-s")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout and "MODE thread" in done.stdout
    done = _pytest(tmp_path, FIXTURES, "-s", env={"FLINK_AGENTS_TEST_MODE": "process"})
    assert "MODE process" in done.stdout
    done = _pytest(tmp_path, FIXTURES, "-s", "--flink-mode", "process", "-k", "test_mode")
    assert "MODE process" in done.stdout


FLINK_TESTS = """
    import pytest

    @pytest.mark.flink
    def test_marked():
        raise AssertionError("must not run without Java")

    def test_with_fixture(flink_env):
        raise AssertionError("must not run without Java")

    def test_plain():
        assert True
"""


def test_flink_tests_are_skipped_with_the_reason_where_java_is_missing(tmp_path):
    empty = tmp_path / "no-java"
    empty.mkdir()
    no_java = {"PATH": str(empty), "JAVA_HOME": ""}
    done = _pytest(tmp_path, FLINK_TESTS, env=no_java)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 2 skipped" in done.stdout
    assert "Flink tests need a Java runtime (JDK 11 or later)" in done.stdout
    done = _pytest(tmp_path, FLINK_TESTS, "--require-flink", env=no_java)
    assert done.returncode == 1
    assert "--require-flink: Flink tests need a Java runtime" in done.stdout
    assert "1 passed, 2 errors" in done.stdout  # failed in setup


CASSETTE_TESTS = """
    import pytest
    from flink_agents.testing import run_agent
    from tests.testing.agents import weather_agent, inputs, expected_outputs

    def test_weather(cassette):
        run = run_agent(weather_agent(), inputs(2), key="id", cassette=cassette)
        assert run.outputs == expected_outputs(inputs(2))

    @pytest.mark.cassette("shared/weather.yaml")
    def test_named(cassette):
        assert cassette.path.name == "weather.yaml"
        run_agent(weather_agent(), inputs(1), key="id", cassette=cassette)
"""

CHANGED = CASSETTE_TESTS.replace("inputs(2), key", "inputs(3), key")


def test_cassette_fixture_records_replays_and_reports_mismatches(tmp_path):
    done = _pytest(tmp_path, CASSETTE_TESTS)
    assert done.returncode == 1
    assert "does not exist: record it first" in done.stdout

    done = _pytest(tmp_path, CASSETTE_TESTS, "--cassette-mode", "record")
    assert done.returncode == 0, done.stdout + done.stderr
    recorded = tmp_path / "cassettes" / "test_user" / "test_weather.yaml"
    assert recorded.exists() and (tmp_path / "shared" / "weather.yaml").exists()

    done = _pytest(tmp_path, CASSETTE_TESTS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout

    done = _pytest(tmp_path, CHANGED)  # a third input the cassette has no recording of
    assert done.returncode == 1
    assert "no recording matches this chat call" in done.stdout
