"""Free TCP ports for the tests that start real servers and clusters on 127.0.0.1."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port on 127.0.0.1 that nobody listens on right now (bound, then released).

    Another process may take it before the test binds it; on a test machine that is rare
    enough, and the server or cluster then fails loudly at start-up.
    """
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
