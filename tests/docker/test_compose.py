"""The docker/ files, checked by structure (no Docker engine runs here).

The commands inside them (entrypoint roles, healthcheck, the submitter's job command) are
run for real against a local standalone cluster in ``test_docker_commands.py``.
"""

from __future__ import annotations

import http.server
import json
import re
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

DOCKER = Path(__file__).resolve().parents[2] / "docker"
REPO = DOCKER.parent


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DOCKER / "docker-compose.yml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def flink_conf() -> dict:
    return yaml.safe_load((DOCKER / "config.yaml").read_text(encoding="utf-8"))


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = (DOCKER / "Dockerfile").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    out = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


# -- compose ---------------------------------------------------------------------------------


def test_services_roles_and_image(compose):
    services = compose["services"]
    assert set(services) == {"jobmanager", "taskmanager", "submitter"}
    for name, service in services.items():
        assert service["image"] == "flink-agents:${FLINK_VERSION:-2.3.0}", name
        assert service["build"] == {
            "context": "..",
            "dockerfile": "docker/Dockerfile",
            "args": {"FLINK_VERSION": "${FLINK_VERSION:-2.3.0}"},
        }, name
        # The build context must hold what the Dockerfile copies.
        context = (DOCKER / service["build"]["context"]).resolve()
        assert (context / service["build"]["dockerfile"]).is_file()
    assert services["jobmanager"]["command"] == ["jobmanager"]
    assert services["taskmanager"]["command"] == ["taskmanager"]
    assert services["jobmanager"]["hostname"] == "jobmanager"


def test_ports_and_volumes(compose, flink_conf):
    services = compose["services"]
    assert services["jobmanager"]["ports"] == [f"{flink_conf['rest.port']}:8081"]
    assert "ports" not in services["taskmanager"] and "ports" not in services["submitter"]
    named = set(compose["volumes"])
    for name in ("jobmanager", "taskmanager"):
        for volume in services[name]["volumes"]:
            source, target = volume.split(":")
            assert source in named
            # Checkpoints go where the Flink configuration says.
            assert flink_conf["execution.checkpointing.dir"] == f"file://{target}"
    (output,) = services["submitter"]["volumes"]
    source, target = output.split(":")
    assert source == "./output" and target == "/opt/flink-agents/output"


def test_healthcheck_and_start_order(compose, flink_conf):
    services = compose["services"]
    check = services["jobmanager"]["healthcheck"]
    assert check["test"][0] == "CMD"
    assert check["test"][1:3] == ["python", "/opt/flink-agents/docker/healthcheck.py"]
    assert "--min-slots" in check["test"]
    assert f"http://localhost:{flink_conf['rest.port']}" in check["test"]
    assert check["retries"] * _seconds(check["interval"]) >= 60  # TaskManagers take ~20 s
    # The TaskManager must not wait for health (health needs a registered TaskManager).
    assert services["taskmanager"]["depends_on"] == {"jobmanager": {"condition": "service_started"}}
    assert services["submitter"]["depends_on"]["jobmanager"] == {"condition": "service_healthy"}
    assert services["submitter"]["restart"] == "no"


def _seconds(value: str) -> float:
    return float(value.rstrip("s"))


def submitter_command(compose: dict) -> list[str]:
    return list(compose["services"]["submitter"]["command"])


def test_submitter_runs_an_example_job_against_the_jobmanager(compose, flink_conf):
    command = submitter_command(compose)
    assert command[:2] == ["flink", "run"]
    assert command[command.index("-m") + 1] == f"jobmanager:{flink_conf['rest.port']}"
    job = command[command.index("-py") + 1]
    assert (REPO / job).is_file(), f"the submitter runs {job}, which does not exist"
    assert job.startswith("examples/")
    output = command[command.index("-py") + 2]
    assert output.startswith("output/")  # the mounted ./output volume


def test_flink_configuration_for_the_cluster(flink_conf):
    assert flink_conf["jobmanager.rpc.address"] == "jobmanager"
    assert flink_conf["rest.address"] == "jobmanager"
    for key in ("jobmanager.bind-host", "rest.bind-address", "taskmanager.bind-host"):
        assert flink_conf[key] == "0.0.0.0"
    assert flink_conf["python.execution-mode"] in ("thread", "process")
    assert flink_conf["python.executable"] == "/usr/local/bin/python"  # python:3.11-slim
    opts = flink_conf["env.java.opts.all"].split()
    for flag in (
        "--add-opens=java.base/java.lang=ALL-UNNAMED",
        "--add-opens=java.base/java.util=ALL-UNNAMED",
        "--add-opens=java.base/java.nio=ALL-UNNAMED",
        "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    ):
        assert flag in opts
    assert all(o.startswith(("--add-opens=", "--add-exports=")) for o in opts)


def test_jvm_flags_cover_those_of_the_flink_distribution(flink_conf):
    """Ours must not drop any flag the shipped Flink configuration sets for JDK 17."""
    import pyflink

    shipped = yaml.safe_load((Path(pyflink.__file__).parent / "conf" / "config.yaml").read_text())
    shipped_opts = set(shipped["env"]["java"]["opts"]["all"].split())
    assert shipped_opts <= set(flink_conf["env.java.opts.all"].split())


def test_jvm_flags_cover_those_the_local_cluster_module_uses(flink_conf):
    """The local standalone cluster (flink_agents.ops.cluster) measured which flags JDK 17 needs."""
    from flink_agents.ops.cluster import JAVA_OPTS

    assert set(JAVA_OPTS) <= set(flink_conf["env.java.opts.all"].split())


# -- Dockerfile ------------------------------------------------------------------------------


def stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's instructions split by FROM (each stage starts with its FROM)."""
    out: list[list[tuple[str, str]]] = []
    for step in dockerfile_instructions():
        if step[0] == "FROM":
            out.append([])
        if out:
            out[-1].append(step)
    return out


def test_dockerfile_builds_the_wheel_with_a_jdk():
    """The first stage builds the wheel, which compiles the Java bridge jar (needs javac)."""
    wheel, _image = stages()
    assert wheel[0] == ("FROM", "python:3.11-slim-bookworm AS wheel")
    runs = " ".join(args for word, args in wheel if word == "RUN")
    assert "openjdk-17-jdk-headless" in runs
    assert "pip wheel --no-cache-dir --no-deps -w /dist ." in runs
    copied = {src for w, a in wheel if w == "COPY" for src in shlex.split(a)[:-1]}
    # What setup.py needs to compile the jar into the wheel.
    assert {"setup.py", "java-bridge", "flink_agents"} <= copied


def test_dockerfile_installs_python_jdk_flink_and_the_package():
    _wheel, steps = stages()
    assert steps[0] == ("FROM", "python:3.11-slim-bookworm")
    runs = " ".join(args for word, args in steps if word == "RUN")
    assert "openjdk-17-jre-headless" in runs
    args = dict(a.split("=", 1) for w, a in steps if w == "ARG")
    assert args["FLINK_VERSION"] == "2.3.0"
    assert 'pip install --no-cache-dir "apache-flink==${FLINK_VERSION}"' in runs
    assert ("COPY", "--from=wheel /dist /tmp/dist") in steps
    assert "pip install --no-cache-dir /tmp/dist/*.whl" in runs
    # An unsupported FLINK_VERSION fails the build (the host's import checks the range).
    assert 'python -c "import flink_agents.runtime.flink"' in runs
    env = " ".join(a for w, a in steps if w == "ENV")
    for var in ("FLINK_HOME=", "FLINK_LIB_DIR=", "FLINK_CONF_DIR=/opt/flink-agents/conf"):
        assert var in env
    entry = next(json.loads(a) for w, a in steps if w == "ENTRYPOINT")
    assert entry == ["/opt/flink-agents/docker/entrypoint.sh"]
    assert ("WORKDIR", "/opt/flink-agents") in steps


def test_dockerfile_copies_existing_paths_and_ignores_the_venv():
    steps = dockerfile_instructions()
    for word, args in steps:
        if word == "COPY" and not args.startswith("--from="):
            *sources, _target = shlex.split(args)
            for source in sources:
                assert (REPO / source).exists(), f"COPY {source}: missing in the context"
    ignored = (DOCKER / "Dockerfile.dockerignore").read_text().split()
    assert ".venv" in ignored and ".git" in ignored
    copied = [shlex.split(a)[0] for w, a in steps if w == "COPY" and not a.startswith("--from=")]
    assert not any(c in ignored for c in copied)
    # A jar built locally must not reach the image: the wheel stage compiles its own.
    assert "flink_agents/runtime/java/lib/*.jar" in ignored


def test_entrypoint_usage_and_passthrough(tmp_path):
    env = {"FLINK_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "FLINK_LOG_DIR": str(tmp_path)}
    proc = subprocess.run(
        [str(DOCKER / "entrypoint.sh")], env=env, capture_output=True, text=True, timeout=10
    )
    assert proc.returncode == 2 and "usage" in proc.stderr
    # Other commands run as they are, with FLINK_PROPERTIES appended to a config copy.
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "config.yaml").write_text("rest.port: 8081\n")
    proc = subprocess.run(
        [str(DOCKER / "entrypoint.sh"), "sh", "-c", 'cat "$FLINK_CONF_DIR/config.yaml"'],
        env={**env, "FLINK_CONF_DIR": str(conf), "FLINK_PROPERTIES": "parallelism.default: 3"},
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert proc.returncode == 0, proc.stderr
    assert yaml.safe_load(proc.stdout) == {"rest.port": 8081, "parallelism.default": 3}
    assert (conf / "config.yaml").read_text() == "rest.port: 8081\n"  # the original is kept


# -- healthcheck (against a real local HTTP server) -------------------------------------------


class _Overview(http.server.BaseHTTPRequestHandler):
    body: dict = {}

    def do_GET(self) -> None:
        if self.path != "/overview":
            self.send_error(404)
            return
        data = json.dumps(self.body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def rest_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Overview)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def healthcheck(url: str, min_slots: int = 1) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            str(DOCKER / "healthcheck.py"),
            "--url",
            url,
            "--min-slots",
            str(min_slots),
        ],
        capture_output=True,
        text=True,
        timeout=20,
    )


def test_healthcheck_needs_registered_slots(rest_server):
    url = f"http://127.0.0.1:{rest_server.server_address[1]}"
    _Overview.body = {"taskmanagers": 0, "slots-total": 0}
    proc = healthcheck(url)
    assert proc.returncode == 1 and "unhealthy" in proc.stdout
    _Overview.body = {"taskmanagers": 1, "slots-total": 2}
    assert healthcheck(url).returncode == 0
    assert healthcheck(url, min_slots=3).returncode == 1


def test_healthcheck_fails_when_rest_is_down(rest_server):
    port = rest_server.server_address[1]
    rest_server.shutdown()
    rest_server.server_close()
    proc = healthcheck(f"http://127.0.0.1:{port}")
    assert proc.returncode == 1 and "not reachable" in proc.stdout
