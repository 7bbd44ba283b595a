"""Free TCP ports on 127.0.0.1 for tests that start real servers and clusters.

:func:`free_port` gives any free port; :func:`held_port` gives exclusive use of a fixed one
(a server that must listen where an unchanged configuration expects it, such as Ollama's
default ``localhost:11434``) among the test runs of one machine.
"""

from __future__ import annotations

import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["free_port", "held_port"]


def free_port() -> int:
    """A port on 127.0.0.1 that nobody listens on right now (bound, then released).

    Another process may take it before the test binds it; on a test machine that is rare
    enough, and the server or cluster then fails loudly at start-up.
    """
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def held_port(port: int, *, wait: float = 300.0) -> Iterator[None]:
    """Exclusive use of the fixed ``port`` among the test runs of this machine.

    Test runs of several checkouts take turns through a lock file in the temp directory
    instead of failing on a taken port. Unix only (``fcntl``).

    Args:
        port: the port to hold.
        wait: seconds to wait for another run to let it go.

    Raises:
        RuntimeError: another run held the port for longer than ``wait`` seconds, or a
            program that is not a test (a real Ollama?) listens on it.
    """
    import fcntl  # Unix only: imported here so that the module imports everywhere

    lock_path = Path(tempfile.gettempdir()) / f"flink-agents-test-port-{port}.lock"
    with open(lock_path, "w") as lock:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"port {port} stayed held by another test run for {wait:.0f} s "
                        f"({lock_path})"
                    ) from None
                time.sleep(0.2)
        try:
            with socket.socket() as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind(("127.0.0.1", port))
                except OSError as exc:
                    raise RuntimeError(
                        f"port {port} is taken by another program ({exc.strerror}); this "
                        "test serves there: stop that program (a real Ollama?)"
                    ) from None
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
