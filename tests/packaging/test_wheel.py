"""The package as users install it: sdist -> wheel (which compiles the bridge jar) -> a fresh
venv -> a thread-mode job that runs on the jar's Java operators."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from tests.flink.test_one_file_jobs import EXPECTED, JOB, read_outputs

pytestmark = pytest.mark.flink

REPO = Path(__file__).resolve().parents[2]
JAR = "flink_agents/runtime/java/lib/flink-agents-bridge.jar"


def run(command: list[str], *, cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"{command}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def test_wheel_from_the_sdist_carries_the_jar_and_runs_the_java_operators(tmp_path: Path) -> None:
    seconds: dict[str, float] = {}
    started = time.monotonic()
    # `python -m build`: the sdist, then a wheel built from the unpacked sdist (isolated,
    # apache-flink-libraries as build requirement), as `pip install <sdist>` would.
    dist = tmp_path / "dist"
    run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(REPO)], cwd=tmp_path, timeout=600
    )
    seconds["build"] = time.monotonic() - started
    (sdist,) = dist.glob("*.tar.gz")
    (wheel,) = dist.glob("*.whl")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert "java-bridge/src/main/java/org/flinkagents/flink/AgentKeyedProcessOperator.java" in names
    assert {"java-bridge/build.py", "setup.py"} <= names
    assert not [n for n in names if n.endswith(".jar")]  # the wheel compiles its own
    with zipfile.ZipFile(wheel) as whl:
        jar_bytes = whl.read(JAR)
    (tmp_path / "bridge.jar").write_bytes(jar_bytes)
    with zipfile.ZipFile(tmp_path / "bridge.jar") as jar:
        classes = set(jar.namelist())
    assert {
        "org/flinkagents/bridge/Bridge.class",
        "org/flinkagents/flink/AgentKeyedProcessOperator.class",
        "org/flinkagents/flink/CarriedTimestampOperator.class",
    } <= classes

    # A fresh venv with the wheel and PyFlink (no .pyc compiling: ~25 s less here).
    started = time.monotonic()
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, timeout=120)
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--no-compile"]
    run([*pip, str(wheel), "apache-flink==2.3.0"], cwd=tmp_path, timeout=900)
    seconds["venv"] = time.monotonic() - started

    # The job runs from a folder of its own: nothing of the repository is importable.
    workdir = tmp_path / "job"
    workdir.mkdir()
    job = Path(shutil.copy(JOB, workdir))
    where = run(
        [str(python), "-c", "import flink_agents.runtime.java as j; print(j.bridge_jars()[0])"],
        cwd=workdir,
        timeout=60,
    )
    assert where.stdout.strip().startswith(str(venv)), where.stdout
    started = time.monotonic()
    out = workdir / "out.jsonl"
    proc = run(
        [str(python), str(job), str(out), "--mode", "thread", "--operators"],
        cwd=workdir,
        timeout=600,
    )
    seconds["job"] = time.monotonic() - started
    print("seconds", json.dumps({k: round(v, 1) for k, v in seconds.items()}))
    # The agent ran in the jar's operator (the one that saves durable call records right
    # before each checkpoint barrier) and the outputs went through its timestamp operator;
    # without the jar the environment warns and PyFlink's operators run instead.
    line = next(x for x in proc.stdout.splitlines() if x.startswith("OPERATORS "))
    operators = json.loads(line.removeprefix("OPERATORS "))
    assert operators[:2] == [
        "org.flinkagents.flink.CarriedTimestampOperator",
        "org.flinkagents.flink.AgentKeyedProcessOperator",
    ]
    assert "is not in the job's jars" not in proc.stdout + proc.stderr
    assert read_outputs(out) == EXPECTED
