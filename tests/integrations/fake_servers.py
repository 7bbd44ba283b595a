"""Real local HTTP servers that speak a provider's wire format from a script.

A :class:`ScriptedServer` listens on 127.0.0.1 (port 0), records every request (path, headers,
JSON body) and answers each with the next scripted :class:`Reply`, or with what a ``respond``
function returns. It is a real ``ThreadingHTTPServer``: our connections reach it through the
real SDK / httpx clients.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted HTTP reply.

    ``body`` is JSON-encoded unless it is ``str``/``bytes`` (sent raw: malformed JSON).
    ``delay`` seconds pass before the reply is sent (a slow server).
    """

    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Request:
    """A request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    #: the body's bytes as received (for signatures over the payload)
    raw: bytes = b""


class ScriptedServer:
    """A scripted HTTP server; use as a context manager.

    Args:
        replies: replies in order; the last one repeats when the script runs out.
        respond: alternatively, ``request -> Reply`` (called for each request).
        port: the port to listen on (default: any free one). A fixed port is for a
            configuration that must stay unchanged; hold it with ``tests.ports.held_port``.
    """

    def __init__(
        self,
        replies: list[Reply] | None = None,
        respond: Callable[[Request], Reply] | None = None,
        *,
        port: int = 0,
    ) -> None:
        self.replies = list(replies or [])
        self.respond = respond
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self.active = 0
        self.max_active = 0
        server = self

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
                with server._lock:
                    server.requests.append(request)
                    server.active += 1
                    server.max_active = max(server.max_active, server.active)
                    index = len(server.requests) - 1
                ended = False

                def end() -> None:
                    # Before the reply is written: once the client has it, it may send the
                    # next request before this thread runs again (a false max_active).
                    nonlocal ended
                    if not ended:
                        ended = True
                        with server._lock:
                            server.active -= 1

                try:
                    reply = server._reply_for(request, index)
                    if reply.delay:
                        time.sleep(reply.delay)
                    if isinstance(reply.body, bytes):
                        data = reply.body
                    elif isinstance(reply.body, str):
                        data = reply.body.encode()
                    else:
                        data = json.dumps(reply.body).encode()
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    end()
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)
                finally:
                    end()

            do_POST = _handle
            do_GET = _handle

        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def _reply_for(self, request: Request, index: int) -> Reply:
        if self.respond is not None:
            return self.respond(request)
        if not self.replies:
            return Reply({"error": "no scripted reply"}, status=500)
        return self.replies[min(index, len(self.replies) - 1)]

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


# --- provider reply builders -------------------------------------------------------------


def openai_reply(
    content: str | None = "",
    tool_calls: list[tuple[str, str, dict[str, Any]]] | None = None,
    *,
    model: str = "test-model",
    prompt_tokens: int = 11,
    completion_tokens: int = 7,
    **message_extra: Any,
) -> dict[str, Any]:
    """A Chat Completions reply; ``tool_calls`` are ``(id, name, arguments)``."""
    message: dict[str, Any] = {"role": "assistant", "content": content, **message_extra}
    if tool_calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, n, a in tool_calls
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def ollama_reply(
    content: str = "",
    tool_calls: list[tuple[str, dict[str, Any]]] | None = None,
    *,
    thinking: str | None = None,
    model: str = "qwen3",
) -> dict[str, Any]:
    """An Ollama ``/api/chat`` reply; ``tool_calls`` are ``(name, arguments)`` (no ids)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking is not None:
        message["thinking"] = thinking
    if tool_calls:
        message["tool_calls"] = [{"function": {"name": n, "arguments": a}} for n, a in tool_calls]
    return {
        "model": model,
        "created_at": "2025-01-01T00:00:00Z",
        "message": message,
        "done": True,
        "done_reason": "stop",
        "total_duration": 1000,
        "prompt_eval_count": 20,
        "eval_count": 5,
    }


def anthropic_reply(
    text: str | None = None,
    tool_uses: list[tuple[str, str, dict[str, Any]]] | None = None,
    *,
    model: str = "claude-test",
    thinking: str | None = None,
) -> dict[str, Any]:
    """A Messages API reply; ``tool_uses`` are ``(id, name, input)``."""
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking, "signature": "sig"})
    if text is not None:
        content.append({"type": "text", "text": text})
    for i, n, a in tool_uses or []:
        content.append({"type": "tool_use", "id": i, "name": n, "input": a})
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if tool_uses else "end_turn",
        "usage": {"input_tokens": 30, "output_tokens": 9},
    }
