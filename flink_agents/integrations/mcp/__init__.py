"""MCP (Model Context Protocol) servers as tool and prompt providers."""
