"""The pytest plugin of flink-agents (entry point ``pytest11``: installed with the package).

Off unless used: it adds options, a marker and fixtures; nothing changes for a test that
uses none of them. ``-p no:flink_agents`` turns it off entirely.

Fixtures:

- ``local_env``: a fresh local ``AgentsExecutionEnvironment``.
- ``flink_env``: a :class:`FlinkTestEnv`: a fresh MiniCluster stream environment
  (``.env``), the agents environment over it (``.agents_env``), its table environment
  (``.t_env``), in the execution mode of ``flink_mode``; ``.source(records)``,
  ``.collect(stream)``.
- ``flink_mode``: ``"thread"`` or ``"process"``: ``--flink-mode``, else
  ``FLINK_AGENTS_TEST_MODE``, else ``thread``. Run a test in both with
  ``@pytest.mark.parametrize("flink_mode", ["thread", "process"])``.
- ``event_log``: a temporary event log directory: ``.config`` (agent configuration that
  writes it there), ``.read()`` (an :class:`~flink_agents.testing.event_log.EventLog`).
- ``cassette``: a :class:`~flink_agents.testing.cassette.Cassette` at
  ``cassettes/<test module>/<test name>.yaml`` next to the test file (or the path of
  ``@pytest.mark.cassette("path.yaml")``, relative to the test file), in the mode of
  ``--cassette-mode`` (else ``FLINK_AGENTS_CASSETTE_MODE``, else ``replay``); finished
  after a passing test (a recording is written, mismatches fail the test).

Marker ``flink``: the test runs a real PyFlink job. Such tests, and tests using
``flink_env``, are skipped with the reason when Java or apache-flink is missing
(``--require-flink`` makes that an error, for CI).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flink_agents.testing.minicluster import MODE_VARIABLE

_FLINK_FIXTURES = {"flink_env"}
_PASSED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("flink-agents", "flink-agents testing kit")
    group.addoption(
        "--flink-mode",
        choices=("thread", "process"),
        default=None,
        help=f"python.execution-mode of the flink_env fixture (default: ${MODE_VARIABLE} "
        "or thread)",
    )
    group.addoption(
        "--cassette-mode",
        choices=("replay", "record", "new_episodes", "passthrough"),
        default=None,
        help="mode of the cassette fixture (default: $FLINK_AGENTS_CASSETTE_MODE or replay)",
    )
    group.addoption(
        "--require-flink",
        action="store_true",
        default=False,
        help="fail Flink tests when Java or apache-flink is missing instead of skipping them",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "flink: runs a real PyFlink job (MiniCluster or standalone cluster); slow"
    )
    config.addinivalue_line(
        "markers", "cassette(path): the cassette fixture's file, relative to the test file"
    )


def flink_missing() -> str | None:
    """Why a Flink job cannot run here (None: it can)."""
    if importlib.util.find_spec("pyflink") is None:
        return (
            "apache-flink is not installed: pip install 'flink-agents-py[flink]' to run Flink tests"
        )
    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (
        java_home and os.path.exists(os.path.join(java_home, "bin", "java"))
    ):
        return (
            "Flink tests need a Java runtime (JDK 11 or later): `java` is not on PATH and "
            "JAVA_HOME is not set; install a JDK (e.g. apt-get install openjdk-17-jdk-headless)"
        )
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    uses_flink = item.get_closest_marker("flink") is not None or bool(
        _FLINK_FIXTURES & set(getattr(item, "fixturenames", ()))
    )
    if not uses_flink:
        return
    why = flink_missing()
    if why is None:
        return
    if item.config.getoption("--require-flink"):
        pytest.fail(f"--require-flink: {why}", pytrace=False)
    pytest.skip(why)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    # Old-style wrapper: works with pytest 7 too. Remembers whether the test passed (the
    # cassette fixture writes its recording only then).
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when == "call":
        item.stash[_PASSED] = report.passed


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def flink_mode(request: pytest.FixtureRequest) -> str:
    """The ``python.execution-mode`` of ``flink_env``: ``--flink-mode``, else
    ``FLINK_AGENTS_TEST_MODE``, else ``thread``."""
    from flink_agents.testing.minicluster import default_mode

    chosen = request.config.getoption("--flink-mode")
    return str(chosen) if chosen else default_mode()


@pytest.fixture
def local_env() -> Any:
    """A fresh local agents execution environment."""
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    return AgentsExecutionEnvironment.get_execution_environment()


@dataclass
class FlinkTestEnv:
    """What the ``flink_env`` fixture gives.

    Attributes:
        env: the PyFlink ``StreamExecutionEnvironment`` (parallelism 1; set another).
        agents_env: the agents environment over it.
        mode: its ``python.execution-mode``.
    """

    env: Any
    agents_env: Any
    mode: str

    @property
    def t_env(self) -> Any:
        """The ``StreamTableEnvironment`` of the job (made on first use)."""
        return self.agents_env.t_env

    def source(self, records: list[Any]) -> Any:
        """A bounded stream of JSON-like ``records`` (not rewound on restore)."""
        from flink_agents.testing.minicluster import source

        return source(self.env, records)

    def collect(self, stream: Any) -> list[Any]:
        """Run the job; every record of ``stream``."""
        from flink_agents.testing.minicluster import collect

        return collect(stream)


def _clear_gateway_block() -> None:
    # After an in-process PyFlink job, PYFLINK_GATEWAY_DISABLED=true is left in this
    # process's environment (meant for Python workers): a subprocess started later (a job
    # script, `flink run`) would inherit it and refuse to start its own gateway.
    os.environ.pop("PYFLINK_GATEWAY_DISABLED", None)


@pytest.fixture
def flink_env(flink_mode: str) -> Iterator[FlinkTestEnv]:
    """A fresh MiniCluster stream environment and the agents environment over it."""
    from flink_agents.testing.minicluster import make_env

    _clear_gateway_block()
    env, agents_env = make_env(mode=flink_mode)
    try:
        yield FlinkTestEnv(env=env, agents_env=agents_env, mode=flink_mode)
    finally:
        _clear_gateway_block()


@dataclass(frozen=True)
class EventLogDir:
    """What the ``event_log`` fixture gives.

    Attributes:
        directory: the event log directory.
    """

    directory: Path

    @property
    def config(self) -> dict[str, Any]:
        """Agent configuration writing the event log here."""
        return {"event-log.enabled": True, "baseLogDir": str(self.directory)}

    def read(self) -> Any:
        """The records written so far (an ``EventLog``)."""
        from flink_agents.testing.event_log import read_event_log

        return read_event_log(self.directory)


@pytest.fixture
def event_log(tmp_path: Path) -> EventLogDir:
    """A temporary event log directory (``.config`` for the environment, ``.read()``)."""
    directory = tmp_path / "event-log"
    directory.mkdir()
    return EventLogDir(directory)


@pytest.fixture
def cassette(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The test's cassette (see the module docstring); finished after a passing test."""
    from flink_agents.testing.cassette import Cassette

    marker = request.node.get_closest_marker("cassette")
    base = Path(str(request.node.path)).parent
    if marker is not None and marker.args:
        path = base / str(marker.args[0])
    else:
        module = Path(str(request.node.path)).stem
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
        path = base / "cassettes" / module / f"{name}.yaml"
    mode = request.config.getoption("--cassette-mode")
    found = Cassette(path, mode=mode)
    yield found
    if request.node.stash.get(_PASSED, False):
        found.finish()
    else:
        found.discard()
