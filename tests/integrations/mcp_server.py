"""A real MCP server for the tests, written with the ``mcp`` package.

Run: ``python -m tests.integrations.mcp_server stdio`` or ``... http PORT``.
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("flink-agents-test-tools")


@server.tool()
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


@server.prompt()
def review_code(language: str, focus: str = "bugs") -> str:
    """Ask for a code review."""
    return f"Review this {language} code, focusing on {focus}."


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
