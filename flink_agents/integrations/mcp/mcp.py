"""Tools and prompts from an MCP server (Model Context Protocol), over stdio or streamable
HTTP, with the official ``mcp`` client.

Example::

    @mcp_server
    @staticmethod
    def calculator() -> MCPServer:
        return MCPServer(command="python", args=["-m", "my_mcp_server"])

    # or over HTTP
    agent.add_resource("search", MCPServer(url="http://127.0.0.1:8000/mcp"))

    # a chat model setup lists MCP tools by name, like any tool
    ResourceDescriptor(clazz=OpenAIChatModelSetup, connection="openai", tools=["add"])

Nothing is contacted when the plan is compiled: the server is started (stdio) or connected
to (HTTP) on first use at run time, once per task slot, and its tools are listed then. A
tool the agent's resources do not declare is looked up on the MCP servers (see
:class:`~flink_agents.runtime.resources.ResourceCache`).

How it runs: the ``mcp`` client is asyncio code built on context managers, so each
:class:`MCPServer` keeps one background thread with its own event loop that holds the
session open; calls are submitted to that loop, which makes the sync ``call`` usable from
any thread and the async ``acall`` from any event loop. A broken session (the server
process died, the HTTP server went away) is reopened on the next call.

Errors: a tool result flagged ``isError`` and any failure to call the tool raise
:class:`~flink_agents.errors.ToolError` with the server's message; the built-in tool action
turns it into an error response the model sees.

Deadlines: every request (connecting included) ends within the server's ``timeout``
(default 30 s) as a whole, however slowly the server answers; past it the request is
cancelled and :class:`~flink_agents.errors.CallTimeoutError` (kind ``"mcp"``) is raised.

Authorization: a chat model setup offers the MCP tools it names in ``tools``, and the
built-in tool action runs only tools the model was offered, like any other tool. A tool is
marked ``side_effects`` unless the server declares it read-only (``readOnlyHint``); the
hint comes from the server, so trust it only as far as you trust the server.

Secrets: ``env`` and ``headers`` travel in the plan like other arguments. Name secrets with
``env_from`` (variables of this process passed to a stdio server) and ``headers_from_env``
(header name -> variable name) instead: they are read at run time only.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, TextIO

from pydantic import Field, PrivateAttr, model_validator

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceType, SerializableResource
from flink_agents.api.tools.tool import Tool, ToolMetadata, ToolType
from flink_agents.errors import CallTimeoutError, ResourceError, ToolError

log = logging.getLogger(__name__)


class MCPTool(Tool):
    """A tool of an MCP server, offered to chat models like any other tool.

    Attributes:
        server: the label of the server it comes from (for messages).
    """

    server: str = ""
    _mcp: MCPServer | None = PrivateAttr(default=None)

    @classmethod
    def tool_type(cls) -> ToolType:
        return ToolType.MCP

    def _server(self) -> MCPServer:
        if self._mcp is None:
            raise ToolError(f"MCP tool {self.name!r} is not attached to a server")
        return self._mcp

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Call the tool on the server (blocks until it answers or times out)."""
        if args:
            raise ToolError(f"MCP tool {self.name!r} takes keyword arguments only")
        return self._server().call_tool(self.name, kwargs)

    async def acall(self, **kwargs: Any) -> Any:
        """Call the tool without blocking the event loop."""
        return await self._server().acall_tool(self.name, kwargs)


class _Session:
    """One open MCP client session, owned by a background thread running its own loop."""

    def __init__(self, server: MCPServer) -> None:
        self._server = server
        self._ready = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.session: Any = None
        self.error: BaseException | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name=f"mcp-{server.label}", daemon=True)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and self.session is not None and self.error is None

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(self._server.timeout):
            self.stop()
            raise ResourceError(
                f"MCP server {self._server.label} did not finish its handshake within "
                f"{self._server.timeout}s"
            )
        if self.error is not None:
            raise ResourceError(
                f"cannot connect to MCP server {self._server.label}: "
                f"{type(self.error).__name__}: {_describe(self.error)}"
            ) from self.error

    def _run(self) -> None:
        loop = self.loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._main())
        finally:
            # as asyncio.run does: let the transports' cleanup tasks finish, then close
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _main(self) -> None:
        from mcp import ClientSession

        self._stop = asyncio.Event()
        try:
            async with AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._server._transport())
                session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
                await session.initialize()
                self.session = session
                self._ready.set()
                await self._stop.wait()
        except Exception as exc:  # noqa: BLE001 - reported to callers; the thread then ends
            self.error = exc
        finally:
            self.session = None
            self._ready.set()

    def submit(self, make: Any) -> concurrent.futures.Future[Any]:
        """Run ``make(session)`` (a coroutine) on the session's loop."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(make(self.session), self.loop)

    def stop(self) -> None:
        loop, stop = self.loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:
                pass  # the loop closed meanwhile
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(self._server.timeout)


def _describe(exc: BaseException) -> str:
    """The message of an exception, looking inside exception groups (anyio task groups)."""
    inner = getattr(exc, "exceptions", None)  # an exception group (Python 3.11+ / anyio)
    if isinstance(inner, (list, tuple)) and inner:
        return "; ".join(f"{type(e).__name__}: {_describe(e)}" for e in inner)
    return str(exc) or type(exc).__name__


def _attr(obj: Any, snake: str, camel: str) -> Any:
    """A field of an ``mcp`` type: snake_case in mcp 2.x, camelCase in 1.x."""
    return getattr(obj, snake, getattr(obj, camel, None))


def _read_only(tool: Any) -> bool:
    """Whether the server declares the tool read-only (MCP's ``readOnlyHint``)."""
    annotations = getattr(tool, "annotations", None)
    return bool(annotations is not None and _attr(annotations, "read_only_hint", "readOnlyHint"))


def _content_text(content: Any) -> str:
    kind = getattr(content, "type", None)
    if kind == "text":
        return str(content.text)
    if kind == "resource":
        res = content.resource
        return str(getattr(res, "text", None) or f"[resource {res.uri}]")
    if kind in ("image", "audio"):
        return f"[{kind} {_attr(content, 'mime_type', 'mimeType') or ''}]"
    return str(content)


def _server_errlog() -> TextIO:
    """Where a stdio server's stderr goes: this process's stderr when it is a real file.

    The stdio transport hands the file to the server process, so it needs a file
    descriptor. A thread-mode Flink job runs Python embedded in the TaskManager, where
    ``sys.stderr`` is pemja's catcher without ``fileno()``: the server then writes to the
    process's original stderr (the TaskManager's ``.out``/``.err`` file), else to nothing.
    """
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
            continue
    global _devnull
    if _devnull is None:
        _devnull = open(os.devnull, "w")  # noqa: SIM115 - shared for the process's life
    return _devnull


_devnull: TextIO | None = None


class MCPServer(SerializableResource):
    """An MCP server whose tools (and prompts) an agent can use.

    Give either ``command`` (a stdio server process started on first use) or ``url`` (a
    streamable HTTP endpoint, e.g. ``http://127.0.0.1:8000/mcp``).

    Attributes:
        command: the executable of a stdio server.
        args: its arguments.
        env: extra environment variables for the stdio server.
        env_from: names of variables of this process to pass to the stdio server (read at
            run time, so their values stay out of the plan).
        cwd: the stdio server's working directory.
        url: the streamable HTTP endpoint (``endpoint`` is accepted as an alias).
        headers: extra HTTP headers (not secret: they travel in the plan).
        headers_from_env: header name -> environment variable holding its value.
        timeout: seconds each request may take as a whole, connecting included.
    """

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] | None = None
    env_from: list[str] = Field(default_factory=list)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    headers_from_env: dict[str, str] = Field(default_factory=dict)
    timeout: float = Field(default=30.0, gt=0)

    _session: _Session | None = PrivateAttr(default=None)
    _lock: threading.RLock = PrivateAttr(default_factory=threading.RLock)
    _tools: dict[str, MCPTool] | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _endpoint_alias(cls, data: Any) -> Any:
        if isinstance(data, dict) and "endpoint" in data and "url" not in data:
            data = {**data, "url": data["endpoint"]}
            data.pop("endpoint")
        return data

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServer:
        if (self.command is None) == (self.url is None):
            raise ValueError("MCPServer needs exactly one of command= (stdio) or url= (HTTP)")
        return self

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.MCP_SERVER

    @property
    def label(self) -> str:
        """How messages name this server."""
        if self.url:
            return self.url
        return " ".join([self.command or "", *self.args]).strip()

    # --- connection -----------------------------------------------------------------------

    def _transport(self) -> Any:
        if self.url is not None:
            headers = dict(self.headers or {})
            headers.update({h: os.environ.get(v, "") for h, v in self.headers_from_env.items()})
            return _http_transport(self.url, headers, self.timeout)
        from mcp.client.stdio import StdioServerParameters, stdio_client

        env = dict(self.env or {})
        env.update({k: os.environ[k] for k in self.env_from if k in os.environ})
        params = StdioServerParameters(
            command=self.command or "", args=list(self.args), env=env or None, cwd=self.cwd
        )
        return stdio_client(params, errlog=_server_errlog())

    def _open(self) -> _Session:
        with self._lock:
            if self._session is not None and self._session.alive:
                return self._session
            if self._session is not None:
                log.warning("MCP server %s: session lost, reconnecting", self.label)
                self._session.stop()
            session = _Session(self)
            session.start()
            self._session = session
            return session

    def _run(self, make: Any, what: str) -> Any:
        """Run ``make(session)`` on the session loop and wait (from any thread), connecting
        first if needed, all within ``timeout``."""
        deadline = time.monotonic() + self.timeout
        future = self._open().submit(make)
        try:
            return future.result(max(0.0, deadline - time.monotonic()))
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise self._timed_out(what) from None

    async def _arun(self, make: Any, what: str) -> Any:
        deadline = time.monotonic() + self.timeout
        session = await asyncio.to_thread(self._open)
        future = session.submit(make)
        try:
            return await asyncio.wait_for(
                asyncio.wrap_future(future), max(0.0, deadline - time.monotonic())
            )
        except asyncio.TimeoutError:
            future.cancel()
            raise self._timed_out(what) from None

    def _timed_out(self, what: str) -> CallTimeoutError:
        return CallTimeoutError(
            f"{what}: no complete reply from MCP server {self.label} within {self.timeout:g}s",
            kind="mcp",
            name=what,
            timeout=self.timeout,
        )

    # --- tools ----------------------------------------------------------------------------

    def _make_tools(self, listed: Any) -> dict[str, MCPTool]:
        tools = {}
        for t in listed:
            tool = MCPTool(
                metadata=ToolMetadata(
                    name=t.name,
                    description=t.description or "",
                    args_schema=dict(
                        _attr(t, "input_schema", "inputSchema")
                        or {"type": "object", "properties": {}}
                    ),
                ),
                server=self.label,
                side_effects=not _read_only(t),
            )
            tool._mcp = self
            tools[t.name] = tool
        return tools

    def list_tools(self) -> list[MCPTool]:
        """The server's tools (listed on first use, then cached).

        Raises:
            ResourceError: the server cannot be reached or listed.
        """
        with self._lock:
            if self._tools is None:
                try:
                    listed = self._run(_list_all_tools, f"listing tools of {self.label}")
                except ResourceError:
                    raise
                except Exception as exc:
                    raise ResourceError(
                        f"cannot list the tools of MCP server {self.label}: {_describe(exc)}"
                    ) from exc
                self._tools = self._make_tools(listed)
            return list(self._tools.values())

    def get_tool(self, name: str) -> MCPTool:
        """The tool ``name``.

        Raises:
            KeyError: the server has no such tool.
        """
        for tool in self.list_tools():
            if tool.name == name:
                return tool
        raise KeyError(name)

    def _tool_result(self, name: str, result: Any) -> Any:
        texts = [_content_text(c) for c in (result.content or [])]
        if _attr(result, "is_error", "isError"):
            raise ToolError(
                f"MCP tool {name!r} on {self.label} reported an error: "
                f"{' '.join(texts) or 'no details'}"
            )
        if texts:
            return texts[0] if len(texts) == 1 else "\n".join(texts)
        structured = _attr(result, "structured_content", "structuredContent")
        return json.dumps(structured) if structured is not None else ""

    def _call_failed(self, name: str, exc: Exception) -> ToolError:
        return ToolError(
            f"MCP tool {name!r} on {self.label} failed: {type(exc).__name__}: {_describe(exc)}"
        )

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call tool ``name``; its text result (joined) or structured result as JSON.

        Raises:
            ToolError: the tool reported an error, or the call failed.
            CallTimeoutError: no complete reply within ``timeout``.
        """
        try:
            result = self._run(lambda s: s.call_tool(name, arguments), f"calling MCP tool {name!r}")
        except (ToolError, CallTimeoutError):
            raise
        except Exception as exc:
            raise self._call_failed(name, exc) from exc
        return self._tool_result(name, result)

    async def acall_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Asynchronous :meth:`call_tool`."""
        try:
            result = await self._arun(
                lambda s: s.call_tool(name, arguments), f"calling MCP tool {name!r}"
            )
        except (ToolError, CallTimeoutError):
            raise
        except Exception as exc:
            raise self._call_failed(name, exc) from exc
        return self._tool_result(name, result)

    # --- prompts --------------------------------------------------------------------------

    def list_prompts(self) -> list[dict[str, Any]]:
        """The server's prompts: ``{"name", "description", "arguments": [{"name",
        "description", "required"}]}``."""
        try:
            listed = self._run(lambda s: s.list_prompts(), f"listing prompts of {self.label}")
        except ResourceError:
            raise
        except Exception as exc:
            raise ResourceError(
                f"cannot list the prompts of MCP server {self.label}: {_describe(exc)}"
            ) from exc
        return [
            {
                "name": p.name,
                "description": p.description or "",
                "arguments": [
                    {"name": a.name, "description": a.description or "", "required": a.required}
                    for a in (p.arguments or [])
                ],
            }
            for p in listed.prompts
        ]

    def get_prompt(self, name: str, **arguments: Any) -> Prompt:
        """Prompt ``name`` rendered by the server with ``arguments``, as our :class:`Prompt`
        (its messages; ``format_messages()`` returns them).

        Raises:
            ResourceError: the server does not have it or failed to render it.
        """
        args = {k: v if isinstance(v, str) else json.dumps(v) for k, v in arguments.items()}
        try:
            result = self._run(lambda s: s.get_prompt(name, args), f"getting prompt {name!r}")
        except Exception as exc:
            raise ResourceError(
                f"cannot get prompt {name!r} from MCP server {self.label}: {_describe(exc)}"
            ) from exc
        messages = [
            ChatMessage(
                role=MessageRole.ASSISTANT if m.role == "assistant" else MessageRole.USER,
                content=_content_text(m.content),
            )
            for m in result.messages
        ]
        return Prompt.from_messages(messages)

    def close(self) -> None:
        """Close the session (a stdio server process is stopped)."""
        with self._lock:
            session, self._session = self._session, None
            self._tools = None
        if session is not None:
            session.stop()


async def _list_all_tools(session: Any) -> list[Any]:
    tools: list[Any] = []
    cursor = None
    while True:
        if cursor is None:
            page = await session.list_tools()
        else:
            from mcp.types import PaginatedRequestParams

            page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
        tools.extend(page.tools)
        cursor = _attr(page, "next_cursor", "nextCursor")
        if not cursor:
            return tools


@asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str], timeout: float) -> AsyncIterator[Any]:
    """The streamable HTTP transport of the installed ``mcp`` (2.x or 1.x API)."""
    try:
        from mcp.client.streamable_http import streamable_http_client
    except ImportError:  # mcp 1.x
        from mcp.client.streamable_http import streamablehttp_client  # type: ignore[attr-defined]

        async with streamablehttp_client(url, headers=headers or None, timeout=timeout) as streams:
            yield streams
        return
    import httpx2  # the HTTP client of mcp 2.x

    client = httpx2.AsyncClient(
        headers=headers or None, timeout=httpx2.Timeout(timeout, read=max(timeout, 300.0))
    )
    async with client, streamable_http_client(url, http_client=client) as streams:
        yield streams
