"""The MCP server of the FLIP draft's example (``'allowed_tools' = 'tool1,tool2'``), over
HTTP, answering only requests that carry the key of the draft's ``api-key`` connection.

Run: ``python -m tests.sql.draft_mcp_server PORT KEY``. Each refused request is counted in
the file named by ``DRAFT_MCP_REFUSED`` (one line each), so a test can tell a missing key.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer

server = MCPServer("flip-draft-tools")


@server.tool()
def tool1(city: str) -> str:
    """The humidity in a city.

    Args:
        city: the city's name.
    """
    return f"humidity in {city}: 40%"


@server.tool()
def tool2(city: str) -> str:
    """The wind in a city.

    Args:
        city: the city's name.
    """
    return f"wind in {city}: 10 km/h"


def with_key(app: Any, key: str) -> Any:
    """``app`` answering 401 to HTTP requests without ``Authorization: Bearer <key>``."""
    expected = f"Bearer {key}".encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            refused = os.environ.get("DRAFT_MCP_REFUSED")
            if refused:
                with open(refused, "a") as out:
                    out.write("refused\n")
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"missing or wrong key"})
            return
        await app(scope, receive, send)

    return guarded


if __name__ == "__main__":
    import uvicorn

    port, key = int(sys.argv[1]), sys.argv[2]
    uvicorn.run(
        with_key(server.streamable_http_app(), key),
        host="127.0.0.1",
        port=port,
        log_level="warning",
    )
