"""A real MCP server for the tests, written with the ``mcp`` package.

Run: ``python -m tests.integrations.mcp_server stdio`` or ``... http PORT``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("flink-agents-test-tools")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def multiply(a: int, b: int) -> int:
    """Multiply two integers.

    Args:
        a: first factor.
        b: second factor.
    """
    return a * b


@server.tool()
def explode(reason: str) -> str:
    """Always fails, with the given reason."""
    raise ToolError(f"exploded on purpose: {reason}")


@server.tool()
def env_value(name: str) -> str:
    """The value of an environment variable of the server process."""
    return os.environ.get(name, "<unset>")


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
async def nap(seconds: float) -> str:
    """Answer after ``seconds`` (a slow tool)."""
    await asyncio.sleep(seconds)
    return "rested"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def write_file(path: str, text: str) -> str:
    """Write ``text`` to the file ``path`` (a tool that changes the world)."""
    Path(path).write_text(text)
    return "written"


@server.prompt()
def review_code(language: str, focus: str = "bugs") -> str:
    """Ask for a code review."""
    return f"Review this {language} code, focusing on {focus}."


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
