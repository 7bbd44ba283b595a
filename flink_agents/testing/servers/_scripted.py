"""The scripted HTTP server every provider stand-in is built on (see the package docstring)."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["Reply", "Request", "ScriptedServer"]


@dataclass
class Reply:
    """One scripted HTTP reply.

    Attributes:
        body: JSON-encoded unless it is ``str`` or ``bytes`` (sent as is: malformed JSON,
            plain text).
        status: the HTTP status.
        headers: extra response headers (``retry-after``, rate-limit headers, ...).
        delay: seconds to wait before answering (a slow server; added to the server's
            ``latency``).
        disconnect: close the connection without answering (the client sees a dropped
            connection: a network error, not an HTTP status).
        content_type: the ``content-type`` header.
    """

    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    disconnect: bool = False
    content_type: str = "application/json"

    @classmethod
    def throttled(
        cls, body: Any = None, *, retry_after: float | None = 1.0, status: int = 429
    ) -> Reply:
        """A rate-limit answer: ``429`` with ``retry-after`` (seconds) and ``retry-after-ms``.

        Args:
            body: the error body (provider servers fill in their own format).
            retry_after: seconds the client is asked to wait; None sends no header.
            status: the status (429; some gateways throttle with 503).
        """
        headers: dict[str, str] = {}
        if retry_after is not None:
            headers["retry-after"] = f"{retry_after:g}"
            headers["retry-after-ms"] = f"{round(retry_after * 1000)}"
        if body is None:
            body = {"error": "rate limited"}
        return cls(body, status=status, headers=headers)

    @classmethod
    def dropped(cls, *, delay: float = 0.0) -> Reply:
        """Close the connection without an answer (after ``delay`` seconds)."""
        return cls(disconnect=True, delay=delay)

    def encoded(self) -> bytes:
        """The body as sent."""
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode()
        return json.dumps(self.body).encode()


@dataclass
class Request:
    """A request the server received.

    Attributes:
        method: ``GET``, ``POST``, ...
        path: the path with its query string, as sent.
        headers: the headers, names lower-cased.
        body: the JSON body parsed, the raw text when it is not JSON, None when empty.
        raw: the body's bytes as received (signatures are computed over them).
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = b""

    @property
    def route(self) -> str:
        """The path without its query string."""
        return urlsplit(self.path).path

    @property
    def query(self) -> dict[str, list[str]]:
        """The query string's parameters."""
        return parse_qs(urlsplit(self.path).query)


Latency = float | tuple[float, float] | Sequence[float]


class ScriptedServer:
    """A real HTTP server on 127.0.0.1 that answers from a script; a context manager.

    Every request is recorded (:attr:`requests`) and answered with the next scripted
    :class:`Reply` (the last one repeats when the script runs out), or with what
    ``respond`` returns for it. Requests are served on threads of their own, so concurrent
    clients really are concurrent (:attr:`max_active` tells how many were at once).

    Args:
        replies: replies in order.
        respond: alternatively, a function ``request -> Reply`` called for each request
            (on the server's threads).
        latency: seconds every reply waits before it is sent, or ``(low, high)`` for a
            uniformly random wait; a reply's own ``delay`` adds to it.
        port: the port to listen on (default: any free one). For a fixed port shared by
            several test runs, hold it with :func:`flink_agents.testing.ports.held_port`.
    """

    def __init__(
        self,
        replies: Sequence[Reply] | None = None,
        respond: Callable[[Request], Reply] | None = None,
        *,
        latency: Latency = 0.0,
        port: int = 0,
    ) -> None:
        self.replies = list(replies or [])
        self.respond = respond
        self.latency = latency
        self.requests: list[Request] = []
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._started = False
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            daemon=True,
            name=f"{type(self).__name__}-{self.port}",
        )

    # --- what a subclass changes -------------------------------------------------------

    def reply_for(self, request: Request, index: int) -> Reply:
        """The reply to the ``index``-th request (from 0). Override to route requests."""
        if self.respond is not None:
            return self.respond(request)
        if not self.replies:
            return Reply({"error": "no scripted reply"}, status=500)
        return self.replies[min(index, len(self.replies) - 1)]

    # --- the public surface --------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port it listens on."""
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ScriptedServer:
        """Start serving (a context manager does this)."""
        if not self._started:
            self._started = True
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._started:
            self._httpd.shutdown()
            self._started = False
        self._httpd.server_close()

    def wait_for_requests(self, count: int, *, timeout: float = 10.0) -> list[Request]:
        """Block until ``count`` requests have arrived; returns them.

        Raises:
            TimeoutError: fewer arrived within ``timeout`` seconds.
        """
        with self._arrived:
            if not self._arrived.wait_for(lambda: len(self.requests) >= count, timeout):
                raise TimeoutError(
                    f"{len(self.requests)} of {count} requests arrived within {timeout} s"
                )
            return list(self.requests)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # --- serving -------------------------------------------------------------------------

    def _delay(self, reply: Reply) -> float:
        latency = self.latency
        if isinstance(latency, (int, float)):
            base = float(latency)
        else:
            low, high = latency
            base = random.uniform(low, high)
        return base + reply.delay

    def _record(self, request: Request) -> int:
        with self._arrived:
            self.requests.append(request)
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self._arrived.notify_all()
            return len(self.requests) - 1

    def _ended(self) -> None:
        with self._lock:
            self.active -= 1


def _handler_for(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _handle(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            request = Request(
                self.command,
                self.path,
                {k.lower(): v for k, v in self.headers.items()},
                body,
                raw,
            )
            index = server._record(request)
            ended = False

            def end() -> None:
                # Before the reply is written: once the client has it, it may send its next
                # request before this thread runs again (a false max_active).
                nonlocal ended
                if not ended:
                    ended = True
                    server._ended()

            try:
                try:
                    reply = server.reply_for(request, index)
                except Exception as exc:  # noqa: BLE001 - a broken script is a 500, not a hang
                    reply = Reply(
                        {"error": f"the stand-in's script failed: {type(exc).__name__}: {exc}"},
                        status=500,
                    )
                delay = server._delay(reply)
                if delay > 0:
                    time.sleep(delay)
                if reply.disconnect:
                    end()
                    self.close_connection = True
                    return
                data = reply.encoded()
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                self.send_header("content-length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                end()
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout)
            finally:
                end()

        do_POST = _handle
        do_GET = _handle
        do_PUT = _handle
        do_DELETE = _handle
        do_PATCH = _handle

    return Handler
