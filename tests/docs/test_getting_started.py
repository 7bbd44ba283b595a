"""The code of the Getting started page runs and prints what the page shows: the first agent
(local environment) and the first Flink job (a MiniCluster)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "getting-started.md"


def _blocks() -> tuple[dict[str, str], dict[str, list[str]]]:
    """The page's ```python title="file.py"``` blocks, and the output lines of its
    ```console blocks by the file they run (``$ python file.py``)."""
    text = PAGE.read_text(encoding="utf-8")
    files = dict(re.findall(r'```python title="([\w.]+)"\n(.*?)```', text, re.S))
    outputs = {}
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        command, *lines = block.strip().splitlines()
        match = re.match(r"\$ python ([\w.]+)", command)
        if match:
            outputs[match.group(1)] = lines
    return files, outputs


def _run(name: str, tmp_path: Path, timeout: float) -> tuple[list[str], list[str]]:
    files, outputs = _blocks()
    assert name in files and name in outputs, f"{PAGE.name} lost its {name} block"
    for file, code in files.items():
        (tmp_path / file).write_text(code, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    done = subprocess.run(
        [sys.executable, name],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout.strip().splitlines(), outputs[name]


def test_the_first_agent_prints_what_the_page_shows(tmp_path: Path) -> None:
    printed, shown = _run("first_agent.py", tmp_path, timeout=120)
    assert printed == shown


@pytest.mark.flink
def test_the_first_flink_job_prints_what_the_page_shows(tmp_path: Path) -> None:
    printed, shown = _run("first_job.py", tmp_path, timeout=600)
    # Keys run concurrently: the same lines, and alice's in the order of her inputs.
    assert sorted(printed) == sorted(shown)
    alice = [line for line in printed if "'stars': 5" in line]
    assert alice == [line for line in shown if "'stars': 5" in line]
