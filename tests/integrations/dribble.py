"""A real HTTP server on 127.0.0.1 that answers slowly in the worst way: one byte at a time.

It sends a complete, valid reply (status line, headers, body) one byte every ``interval``
seconds, so a client timeout that applies per read (httpx's, the openai SDK's) is never
tripped: only a deadline on the whole call ends it. Each request is recorded. On exit the
server stops writing, so abandoned client threads end too.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class DribblingServer:
    """Answers every POST with ``body`` (JSON-encoded unless bytes), byte by byte.

    Args:
        body: the reply body.
        interval: seconds between two bytes.
        status: the HTTP status of the reply.
    """

    def __init__(self, body: Any, *, interval: float = 0.25, status: int = 200) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        head = (
            f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n"
            f"content-length: {len(data)}\r\n\r\n"
        ).encode()
        self.reply = head + data
        self.interval = interval
        self.requests: list[dict[str, Any]] = []
        self.bytes_sent = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                with server._lock:
                    server.requests.append(
                        {"path": self.path, "body": json.loads(raw) if raw else None}
                    )
                try:
                    for i in range(len(server.reply)):
                        if server._stop.wait(server.interval):
                            break
                        self.wfile.write(server.reply[i : i + 1])
                        with server._lock:
                            server.bytes_sent += 1
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up: what a deadline does
                self.close_connection = True

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def full_reply_seconds(self) -> float:
        """How long sending the whole reply takes."""
        return len(self.reply) * self.interval

    def __enter__(self) -> DribblingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        time.sleep(self.interval)  # let handler threads see the stop
