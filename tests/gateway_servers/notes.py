"""Test upstream "notes", written the way users write servers: with the SDK's high-level
decorator API, ``FastMCP`` (``mcp.server.fastmcp``, mcp 1.x) or its 2.x successor
``MCPServer`` (``mcp.server.mcpserver``), whichever the installed SDK has.

With ``--v1-only`` it imports ``mcp.server.fastmcp`` unconditionally, as v1 code does:
under mcp 2.x that import fails at start-up, which the gateway must report with its cause.

Run: ``python tests/gateway_servers/notes.py [--v1-only]`` (stdio).
"""

from __future__ import annotations

import sys

if "--v1-only" in sys.argv:
    from mcp.server.fastmcp import FastMCP as HighLevelServer
else:
    try:
        from mcp.server.fastmcp import FastMCP as HighLevelServer  # mcp 1.x
    except ModuleNotFoundError:
        from mcp.server.mcpserver import MCPServer as HighLevelServer  # mcp 2.x

NOTES = {"groceries": "milk, eggs, coffee beans", "standup": "demo the gateway on Friday"}

server = HighLevelServer("notes")


@server.tool()
def search_notes(query: str) -> str:
    """Search the user's personal notes by keyword and return the matching note titles."""
    return ", ".join(title for title, text in NOTES.items() if query.lower() in f"{title} {text}".lower())


@server.tool()
def read_note(title: str) -> str:
    """Read the full text of one personal note by its title."""
    return NOTES.get(title, "")


if __name__ == "__main__":
    server.run()
