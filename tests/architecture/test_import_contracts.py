"""The layer contracts of .importlinter hold, and a planted violation breaks them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(
    not LINT_IMPORTS.exists(), reason="import-linter (the dev extra) is not installed"
)


def _lint(package_parent: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports with our contracts over the flink_agents package in ``package_parent``."""
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(ROOT / ".importlinter")],
        cwd=package_parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _copy_package(tmp_path: Path) -> Path:
    shutil.copytree(
        ROOT / "flink_agents",
        tmp_path / "flink_agents",
        ignore=shutil.ignore_patterns("__pycache__", "*.jar"),
    )
    return tmp_path / "flink_agents"


def test_contracts_are_kept_by_the_package() -> None:
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "planted", "contract"),
    [
        (
            "api/memory_object.py",
            "from flink_agents.runtime.core import AgentRunner",
            "api imports no other layer",
        ),
        ("plan/behaviours.py", "import flink_agents.runtime.memory", "plan imports api only"),
        (
            "runtime/core/records.py",
            "from flink_agents.runtime.flink import slot",
            "the runtime core does not import the hosts",
        ),
        ("runtime/local/runner.py", "import pyflink.datastream", "only runtime.flink imports"),
    ],
)
def test_a_planted_violation_breaks_its_contract(
    tmp_path: Path, module: str, planted: str, contract: str
) -> None:
    package = _copy_package(tmp_path)
    clean = _lint(tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr  # the copy is what is linted
    target = package / module
    # Inside a function, as a lazy import would be: those count too.
    target.write_text(target.read_text() + f"\n\ndef _planted():\n    {planted}\n")
    broken = _lint(tmp_path)
    assert broken.returncode != 0
    assert f"{contract}" in broken.stdout and "BROKEN" in broken.stdout, broken.stdout
