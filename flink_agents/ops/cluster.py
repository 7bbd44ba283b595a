"""A local standalone Flink cluster from the installed PyFlink wheel (no Flink download).

The ``apache-flink`` wheel ships the Flink distribution: ``pyflink/lib/*.jar``,
``pyflink/opt/flink-python-*.jar`` and ``pyflink/bin/`` (``start-cluster.sh``, ``flink``...).
:func:`start_cluster` runs it out of a writable *work directory*::

    <workdir>/conf/config.yaml   FLINK_CONF_DIR: REST port, slots, JVM flags, Python paths
    <workdir>/conf/log4j*.properties
    <workdir>/lib/               FLINK_LIB_DIR: links to pyflink/lib/* + opt/flink-python-*.jar
    <workdir>/log/               FLINK_LOG_DIR
    <workdir>/pid/               FLINK_PID_DIR
    <workdir>/cluster.json       what was started (port, slots), read by the other functions

Two facts measured with apache-flink 2.3.0, pemja 0.5.7 and JDK 17 shape it:

- ``flink-python`` must be in ``lib/`` (loaded once by the system classloader), not only in
  the job's classloader: otherwise every thread-mode job after the first on a TaskManager
  fails with ``NoSuchFieldException: loadedLibraryNames`` (pemja loads its native library
  again and reflects on a JDK-internal field that JDK 17 no longer has).
- JVM flags on JDK 17 (``env.java.opts.all``, also read by the ``flink`` client): with none,
  even ``flink run`` fails (``InaccessibleObjectException ... java.util does not "opens
  java.util"``). The minimum for a thread-mode agent job calling Java resources through pemja
  is :data:`MINIMAL_JAVA_OPTS` (``--add-opens`` of ``java.base/java.lang``, ``java.util`` and
  ``java.net``; ``java.net`` is for PyFlink's client adding jars through
  ``URLClassLoader.addURL``). The default, :data:`JAVA_OPTS`, is the full set of Flink's own
  default configuration, which also covers Kryo, NIO and state backends.

Jobs are submitted with ``flink run -py`` (:func:`submit`); the workers use this interpreter
(``python.executable``), so start the cluster from the environment the jobs need.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from flink_agents._python_path import worker_python_path
from flink_agents.errors import ClusterError

__all__ = [
    "JAVA_OPTS",
    "MINIMAL_JAVA_OPTS",
    "ClusterError",
    "ClusterStatus",
    "SubmitResult",
    "client_workdir",
    "cluster_status",
    "pyflink_home",
    "start_cluster",
    "stop_cluster",
    "submit",
]

#: JVM flags for every Flink process on JDK 17 (the defaults of Flink's own config.yaml).
JAVA_OPTS: tuple[str, ...] = (
    "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.text=ALL-UNNAMED",
    "--add-opens=java.base/java.time=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED",
)

#: The smallest set measured to run thread-mode agent jobs with Java resources (JDK 17).
MINIMAL_JAVA_OPTS: tuple[str, ...] = (
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
)

_STATE_FILE = "cluster.json"
_JOB_ID = re.compile(r"JobID\s+([0-9a-f]{32})")


@dataclass
class ClusterStatus:
    """What :func:`cluster_status` (and start/stop) report.

    Attributes:
        workdir: the cluster's work directory.
        running: whether its REST endpoint answers.
        rest_url: ``http://localhost:<port>``.
        taskmanagers: registered TaskManagers.
        slots_total: task slots offered.
        slots_available: free task slots.
        jobs_running: jobs in state RUNNING.
        flink_version: the cluster's Flink version.
        log_dir: where the JobManager and TaskManager logs are.
    """

    workdir: str
    running: bool
    rest_url: str
    taskmanagers: int = 0
    slots_total: int = 0
    slots_available: int = 0
    jobs_running: int = 0
    flink_version: str | None = None
    log_dir: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict."""
        return asdict(self)


@dataclass
class SubmitResult:
    """The outcome of :func:`submit`.

    Attributes:
        job_id: the Flink job id (from the client output), if one was printed.
        returncode: exit status of ``flink run``.
        output: its stdout and stderr.
        seconds: how long the submission (and, unless detached, the job) took.
    """

    job_id: str | None
    returncode: int
    output: str
    seconds: float = 0.0
    command: list[str] = field(default_factory=list)


def pyflink_home() -> Path:
    """The directory of the installed ``pyflink`` package (found without importing it)."""
    spec = importlib.util.find_spec("pyflink")
    if spec is None or not spec.submodule_search_locations:
        raise ClusterError("apache-flink is not installed: pip install 'flink-agents-py[flink]'")
    home = Path(next(iter(spec.submodule_search_locations)))
    if not (home / "bin" / "start-cluster.sh").is_file() or not (home / "lib").is_dir():
        raise ClusterError(f"{home} has no Flink distribution (bin/, lib/)")
    return home


def _free_port() -> int:
    """A free TCP port on 127.0.0.1 (bound, then released) for the JobManager's RPC."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_in_use(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _write_config(
    workdir: Path,
    home: Path,
    *,
    port: int,
    slots: int,
    taskmanagers: int,
    java_opts: tuple[str, ...] | list[str],
    extra_config: dict[str, Any] | None,
) -> None:
    conf = workdir / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    for name in ("log4j.properties", "log4j-console.properties", "log4j-cli.properties"):
        src = home / "conf" / name
        if src.is_file():
            shutil.copyfile(src, conf / name)
    values: dict[str, Any] = {
        "jobmanager.rpc.address": "localhost",
        "jobmanager.rpc.port": _free_port(),
        "jobmanager.bind-host": "localhost",
        "jobmanager.memory.process.size": "1024m",
        "taskmanager.bind-host": "localhost",
        "taskmanager.host": "localhost",
        "taskmanager.numberOfTaskSlots": slots,
        "taskmanager.memory.process.size": "2048m",
        "parallelism.default": 1,
        "rest.address": "localhost",
        "rest.bind-address": "localhost",
        "rest.port": port,
        "python.executable": sys.executable,
        "python.client.executable": sys.executable,
        "python.pythonpath": os.pathsep.join(worker_python_path()),
    }
    if java_opts:
        values["env.java.opts.all"] = " ".join(java_opts)
    values.update(extra_config or {})
    lines = ["# Written by flink_agents.ops.cluster.start_cluster"]
    lines += [f"{key}: {json.dumps(value)}" for key, value in values.items()]
    (conf / "config.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (conf / "masters").write_text(f"localhost:{port}\n", encoding="utf-8")
    (conf / "workers").write_text("localhost\n" * taskmanagers, encoding="utf-8")


def _link_lib(workdir: Path, home: Path) -> None:
    lib = workdir / "lib"
    if lib.exists():
        shutil.rmtree(lib)
    lib.mkdir(parents=True)
    jars = sorted((home / "lib").glob("*.jar")) + sorted((home / "opt").glob("flink-python*.jar"))
    for jar in jars:
        (lib / jar.name).symlink_to(jar)


def _env(workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        FLINK_CONF_DIR=str(workdir / "conf"),
        FLINK_LOG_DIR=str(workdir / "log"),
        FLINK_LIB_DIR=str(workdir / "lib"),
        FLINK_PID_DIR=str(workdir / "pid"),
        PYFLINK_CLIENT_EXECUTABLE=sys.executable,
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    )
    return env


def _read_state(workdir: Path) -> dict[str, Any]:
    path = workdir / _STATE_FILE
    if not path.is_file():
        raise ClusterError(f"no cluster was started in {workdir} (no {_STATE_FILE})")
    state: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return state


def _rest(port: int, path: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(f"http://localhost:{port}{path}", timeout=timeout) as resp:
        return json.loads(resp.read().decode("utf-8"))


def _status(workdir: Path, port: int) -> ClusterStatus:
    status = ClusterStatus(
        workdir=str(workdir),
        running=False,
        rest_url=f"http://localhost:{port}",
        log_dir=str(workdir / "log"),
    )
    try:
        overview = _rest(port, "/overview")
    except (urllib.error.URLError, OSError, ValueError):
        return status
    status.running = True
    status.taskmanagers = int(overview.get("taskmanagers", 0))
    status.slots_total = int(overview.get("slots-total", 0))
    status.slots_available = int(overview.get("slots-available", 0))
    status.jobs_running = int(overview.get("jobs-running", 0))
    status.flink_version = overview.get("flink-version")
    return status


def _run_script(home: Path, workdir: Path, script: str, timeout: float) -> str:
    """Run one of Flink's ``bin/`` scripts and return its output.

    The script runs in a session of its own: when it does not finish in time, it is killed
    together with everything it started so far (the JVMs of ``flink-daemon.sh`` stay in its
    process group), so a start that timed out leaves no half-started cluster behind.
    """
    proc = subprocess.Popen(
        ["bash", str(home / "bin" / script)],
        env=_env(workdir),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
        raise ClusterError(
            f"{script} did not finish within {timeout:.0f}s and was stopped with what it had "
            f"started (a busy machine? pass a longer timeout): {out.strip()[-2000:]}"
        ) from None
    out = out.strip()
    if proc.returncode != 0:
        raise ClusterError(f"{script} failed ({proc.returncode}): {out[-2000:]}")
    return out


def _log_tail(workdir: Path, lines: int = 30) -> str:
    logs = sorted((workdir / "log").glob("*.log"), key=lambda p: p.stat().st_mtime)
    tails = []
    for log in logs[-2:]:
        text = log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
        tails.append(f"--- {log.name}\n" + "\n".join(text))
    return "\n".join(tails)


def start_cluster(
    workdir: str | os.PathLike[str],
    *,
    port: int = 8081,
    slots: int = 2,
    taskmanagers: int = 1,
    java_opts: tuple[str, ...] | list[str] = JAVA_OPTS,
    extra_config: dict[str, Any] | None = None,
    timeout: float = 120.0,
) -> ClusterStatus:
    """Start a local standalone cluster and wait until its TaskManagers registered.

    Args:
        workdir: a writable directory for configuration, logs, pid files and lib links.
        port: the REST (and web UI) port.
        slots: task slots per TaskManager.
        taskmanagers: TaskManager processes.
        java_opts: JVM flags of every Flink process (``env.java.opts.all``).
        extra_config: more Flink configuration (``key: value``), e.g.
            ``{"python.execution-mode": "thread"}``.
        timeout: seconds for ``start-cluster.sh`` to finish, and again for the TaskManagers
            to register.

    Returns:
        The running cluster's status.

    Raises:
        ClusterError: the port is taken, a script failed or hung, or the cluster did not come
            up (the message has the tail of the logs). What was started is stopped again.
    """
    workdir = Path(workdir).resolve()
    home = pyflink_home()
    if _port_in_use(port):
        raise ClusterError(
            f"port {port} is in use (another cluster?): stop it or pass another port"
        )
    for sub in ("log", "pid"):
        (workdir / sub).mkdir(parents=True, exist_ok=True)
    _write_config(
        workdir,
        home,
        port=port,
        slots=slots,
        taskmanagers=taskmanagers,
        java_opts=java_opts,
        extra_config=extra_config,
    )
    _link_lib(workdir, home)
    state = {"port": port, "slots": slots, "taskmanagers": taskmanagers, "pyflink": str(home)}
    (workdir / _STATE_FILE).write_text(json.dumps(state), encoding="utf-8")
    try:
        _run_script(home, workdir, "start-cluster.sh", timeout=timeout)
    except ClusterError:
        _stop_quietly(workdir)  # what the script started before it failed
        raise
    deadline = time.monotonic() + timeout
    status = _status(workdir, port)
    while time.monotonic() < deadline:
        status = _status(workdir, port)
        if status.running and status.slots_total >= slots * taskmanagers:
            return status
        time.sleep(0.5)
    tail = _log_tail(workdir)
    _stop_quietly(workdir)
    raise ClusterError(
        f"the cluster in {workdir} did not come up within {timeout:.0f}s "
        f"(running={status.running}, taskmanagers={status.taskmanagers}):\n{tail}"
    )


def _stop_quietly(workdir: Path) -> None:
    """Stop what a failed start left running; its own failure would hide the start's."""
    try:
        stop_cluster(workdir)
    except ClusterError:
        pass


def _pids(workdir: Path) -> list[int]:
    pids = []
    for pid_file in (workdir / "pid").glob("*.pid"):
        for line in pid_file.read_text(encoding="utf-8").split():
            if line.strip().isdigit():
                pids.append(int(line))
    return pids


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_cluster(workdir: str | os.PathLike[str], *, timeout: float = 60.0) -> ClusterStatus:
    """Stop the cluster started in ``workdir`` (its JobManager and TaskManagers).

    Raises:
        ClusterError: no cluster was started there, or its processes did not stop.
    """
    workdir = Path(workdir).resolve()
    state = _read_state(workdir)
    home = Path(state.get("pyflink") or pyflink_home())
    pids = _pids(workdir)
    try:
        _run_script(home, workdir, "stop-cluster.sh", timeout=timeout)
    finally:  # also when the script failed: the processes must not outlive the cluster
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.3)
        for pid in [p for p in pids if _alive(p)]:  # only those this cluster's pid files name
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    status = _status(workdir, int(state["port"]))
    if status.running:
        raise ClusterError(f"the cluster in {workdir} still answers on {status.rest_url}")
    return status


def cluster_status(workdir: str | os.PathLike[str]) -> ClusterStatus:
    """The status of the cluster started in ``workdir`` (``running=False`` if it is down).

    Raises:
        ClusterError: no cluster was ever started there.
    """
    workdir = Path(workdir).resolve()
    state = _read_state(workdir)
    return _status(workdir, int(state["port"]))


def client_workdir() -> Path:
    """A work directory with only a client configuration (JVM flags, this interpreter), for
    ``flink run`` against a remote JobManager when no local cluster was started:
    ``$FLINK_AGENTS_CLIENT_DIR`` or ``~/.flink-agents/client``."""
    workdir = Path(
        os.environ.get("FLINK_AGENTS_CLIENT_DIR") or Path.home() / ".flink-agents" / "client"
    )
    home = pyflink_home()
    _write_config(
        workdir,
        home,
        port=8081,
        slots=1,
        taskmanagers=1,
        java_opts=JAVA_OPTS,
        extra_config=None,
    )
    _link_lib(workdir, home)
    return workdir


def submit(
    job_file: str | os.PathLike[str],
    *,
    workdir: str | os.PathLike[str] | None = None,
    args: list[str] | None = None,
    detached: bool = False,
    flink_args: list[str] | None = None,
    timeout: float = 600.0,
    jobmanager: str | None = None,
    from_savepoint: str | None = None,
    parallelism: int | None = None,
) -> SubmitResult:
    """Submit a PyFlink job file with ``flink run -py``: to the local cluster of
    ``workdir``, or to the JobManager at ``jobmanager``.

    Args:
        job_file: the Python job (a script that builds the pipeline and calls execute()).
        workdir: the local cluster's work directory; with ``jobmanager`` only its client
            configuration is used (without either: :func:`client_workdir`).
        args: arguments for the job script.
        detached: return after submission instead of waiting for the job to end.
        flink_args: more options for ``flink run`` (e.g. ``["-Dkey=value"]``).
        timeout: seconds to wait for ``flink run``.
        jobmanager: ``host:port`` of a JobManager's REST endpoint (``flink run -m``).
        from_savepoint: a savepoint (or retained checkpoint) to start from (``-s``).
        parallelism: the job's default parallelism (``-p``).

    Returns:
        The job id, exit status and output.

    Raises:
        ClusterError: the cluster is down, or ``flink run`` failed (the message has its output).
    """
    extra = list(flink_args or [])
    if jobmanager is not None:
        from flink_agents.ops.jobs import rest_url

        rest_url(jobmanager)  # checks the form
        extra += ["-m", jobmanager]
        workdir = Path(workdir).resolve() if workdir is not None else client_workdir()
        home = pyflink_home()
    else:
        if workdir is None:
            raise ClusterError("submit needs a cluster work directory or a JobManager address")
        workdir = Path(workdir).resolve()
        state = _read_state(workdir)
        status = _status(workdir, int(state["port"]))
        if not status.running:
            raise ClusterError(f"the cluster in {workdir} is not running; start it first")
        home = Path(state.get("pyflink") or pyflink_home())
    if from_savepoint is not None:
        extra += ["-s", str(from_savepoint)]
    if parallelism is not None:
        extra += ["-p", str(parallelism)]
    job = Path(job_file).resolve()
    command = ["bash", str(home / "bin" / "flink"), "run"]
    if detached:
        command.append("-d")
    command += [*extra, "-py", str(job), *(args or [])]
    started = time.perf_counter()
    proc = subprocess.run(
        command,
        env=_env(workdir),
        cwd=str(job.parent),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = (proc.stdout + proc.stderr).strip()
    match = _JOB_ID.search(output)
    result = SubmitResult(
        job_id=match.group(1) if match else None,
        returncode=proc.returncode,
        output=output,
        seconds=time.perf_counter() - started,
        command=command,
    )
    if proc.returncode != 0:
        raise ClusterError(f"flink run failed ({proc.returncode}):\n{output[-4000:]}")
    return result
