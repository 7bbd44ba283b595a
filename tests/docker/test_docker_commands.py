"""The docker-compose commands, run for real on this machine (no Docker engine here).

A local standalone cluster is started exactly as the compose services start it: the image's
``entrypoint.sh jobmanager`` / ``taskmanager`` with ``docker/config.yaml`` (only addresses,
ports and paths swapped for local ones) and a ``FLINK_LIB_DIR`` built like the Dockerfile
builds it; ``healthcheck.py`` gates the submission like the compose healthcheck; then the
submitter's command from ``docker-compose.yml`` runs, and the job's output is checked.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from flink_agents.testing.ports import free_port

pytestmark = pytest.mark.flink

DOCKER = Path(__file__).resolve().parents[2] / "docker"
REPO = DOCKER.parent


def flink_home() -> Path:
    import pyflink

    return Path(pyflink.__file__).parent


def local_config(tmp: Path, rest_port: int) -> Path:
    """docker/config.yaml with local addresses, free ports and this interpreter."""
    conf = yaml.safe_load((DOCKER / "config.yaml").read_text(encoding="utf-8"))
    conf.update(
        {
            "jobmanager.rpc.address": "localhost",
            "rest.address": "localhost",
            "jobmanager.bind-host": "localhost",
            "rest.bind-address": "localhost",
            "taskmanager.bind-host": "localhost",
            "taskmanager.host": "localhost",
            "rest.port": rest_port,
            "jobmanager.rpc.port": free_port(),
            "blob.server.port": free_port(),
            "taskmanager.rpc.port": 0,
            "python.executable": sys.executable,
            "python.client.executable": sys.executable,
            "execution.checkpointing.dir": f"file://{tmp / 'checkpoints'}",
            "taskmanager.memory.process.size": "1600m",
        }
    )
    folder = tmp / "conf"
    folder.mkdir()
    (folder / "config.yaml").write_text(yaml.safe_dump(conf), encoding="utf-8")
    for pattern in ("log4j*.properties", "logback*.xml"):
        for file in (flink_home() / "conf").glob(pattern):
            (folder / file.name).write_text(file.read_text())
    return folder


def lib_dir(tmp: Path) -> Path:
    """Links to pyflink/lib/*.jar plus opt/flink-python-*.jar, as the Dockerfile makes."""
    folder = tmp / "flink-lib"
    folder.mkdir()
    home = flink_home()
    for jar in [*home.glob("lib/*.jar"), *home.glob("opt/flink-python-*.jar")]:
        (folder / jar.name).symlink_to(jar)
    return folder


@pytest.fixture
def cluster(tmp_path):
    rest_port = free_port()
    env = {
        **os.environ,
        "FLINK_HOME": str(flink_home()),
        "FLINK_CONF_DIR": str(local_config(tmp_path, rest_port)),
        "FLINK_LIB_DIR": str(lib_dir(tmp_path)),
        "FLINK_LOG_DIR": str(tmp_path / "log"),
        "PATH": f"{Path(sys.executable).parent}:{flink_home() / 'bin'}:{os.environ['PATH']}",
    }
    procs = [
        subprocess.Popen(
            [str(DOCKER / "entrypoint.sh"), role],
            env=env,
            stdout=(tmp_path / f"{role}.out").open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for role in ("jobmanager", "taskmanager")
    ]
    try:
        yield env, rest_port, tmp_path
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def logs(tmp: Path) -> str:
    parts = [p.read_text(errors="replace")[-3000:] for p in sorted(tmp.glob("*.out"))]
    parts += [p.read_text(errors="replace")[-3000:] for p in sorted(tmp.glob("log/*.log"))]
    return "\n----\n".join(parts)


def test_compose_commands_run_the_example_on_a_standalone_cluster(cluster):
    env, rest_port, tmp = cluster
    compose = yaml.safe_load((DOCKER / "docker-compose.yml").read_text(encoding="utf-8"))

    # The healthcheck, as compose runs it, until the TaskManager's slots are registered.
    check = list(compose["services"]["jobmanager"]["healthcheck"]["test"][1:])
    check = [sys.executable if a == "python" else a for a in check]
    check = [str(DOCKER / "healthcheck.py") if a.endswith("healthcheck.py") else a for a in check]
    check = [f"http://localhost:{rest_port}" if a.startswith("http://") else a for a in check]
    deadline = time.monotonic() + 120
    while True:
        proc = subprocess.run(check, capture_output=True, text=True, timeout=30)
        if proc.returncode == 0:
            break
        assert time.monotonic() < deadline, f"cluster not healthy: {proc.stdout}\n{logs(tmp)}"
        time.sleep(2)

    # The submitter's command, verbatim except for the JobManager address and output path.
    command = list(compose["services"]["submitter"]["command"])
    command[command.index("-m") + 1] = f"localhost:{rest_port}"
    out_index = command.index("-py") + 2
    output = tmp / "suggestions.jsonl"
    command[out_index] = str(output)
    proc = subprocess.run(
        [str(DOCKER / "entrypoint.sh"), *command],
        env=env,
        cwd=REPO,  # the image's WORKDIR holds examples/ the same way
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:] + logs(tmp)
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    assert [(r["product_id"], r["window_start"]) for r in rows] == [
        ("blender", 0),
        ("blender", 60_000),
        ("kettle", 0),
        ("kettle", 60_000),
        ("toaster", 0),
    ]
    assert sum(r["review_count"] for r in rows) == 9
    assert rows[0]["suggestions"] == ["improve the packaging", "add sound insulation"]
