"""The wheel installed next to an unsupported PyFlink (1.19.3, the last 1.19 release) in a
fresh venv, as a user with a Flink 1.19 cluster would: asking for the Flink environment
fails at once with the supported range and how to fix it.

apache-flink 1.19.3 is installed without its dependencies (Beam, its jars: ~400 MB): the
check runs when the Flink host is imported, before any other part of PyFlink is loaded,
which is also what this proves. The wheel comes from ``FLINK_AGENTS_WHEEL`` (set by
tests/versions/run.py) or is built here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.flink

REPO = Path(__file__).resolve().parents[2]
UNSUPPORTED = "1.19.3"

SCRIPT = """
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
try:
    AgentsExecutionEnvironment.get_execution_environment(object())
except Exception as exc:
    print(type(exc).__name__, "|", isinstance(exc, ImportError), "|", exc)
else:
    print("no error")
"""


def _run(command: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, f"{command}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _wheel(tmp_path: Path) -> Path:
    given = os.environ.get("FLINK_AGENTS_WHEEL")
    if given:
        return Path(given)
    dist = tmp_path / "dist"
    _run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(REPO)], tmp_path, 600
    )
    (wheel,) = dist.glob("*.whl")
    return wheel


def test_the_wheel_with_pyflink_1_19_fails_naming_the_supported_range(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path, 120)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile"]
    _run([*pip, str(wheel)], tmp_path, 900)
    _run([*pip, "--no-deps", f"apache-flink=={UNSUPPORTED}"], tmp_path, 900)

    proc = _run([str(venv / "bin" / "python"), "-c", SCRIPT], tmp_path, 120)
    kind, is_import_error, message = proc.stdout.strip().split(" | ", 2)
    assert (kind, is_import_error) == ("UnsupportedFlinkVersionError", "True")
    assert message.startswith(
        "flink-agents supports PyFlink 1.20.x, 2.0.x, 2.1.x, 2.2.x, 2.3.x "
        f"(apache-flink>=1.20,<2.4); this Python has apache-flink {UNSUPPORTED}."
    ), message
    assert 'pip install "apache-flink==1.20.5"' in message
    assert proc.stderr.strip() == ""  # nothing logged before the error
