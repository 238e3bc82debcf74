"""Shared runner for the test upstream MCP servers: stdio by default, ``--http --port N``
for streamable HTTP on loopback.

The servers are deliberately tiny and deterministic; they exist so the gateway tests
talk to real MCP processes over real transports.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

Handler = Callable[[Any, dict[str, Any]], Awaitable[Any]]


def tool(name: str, description: str, properties: Mapping[str, Any], required: list[str] | None = None,
         **extra: Any) -> types.Tool:
    """An MCP tool definition with an object input schema."""
    schema = {"type": "object", "properties": dict(properties), "required": list(required or [])}
    return types.Tool(name=name, description=description, input_schema=schema, **extra)


def result(payload: Any) -> types.CallToolResult:
    """A tool result carrying ``payload`` as JSON text and as structured content."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(payload, sort_keys=True))],
        structured_content=payload if isinstance(payload, dict) else {"value": payload},
    )


def make_server(name: str, tools: Callable[[], list[types.Tool]], handlers: Mapping[str, Handler]) -> Server:
    """A low-level server whose tool list is read from ``tools()`` on every listing, so a
    handler can change it at run time."""

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools())

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        handler = handlers.get(params.name)
        if handler is None or params.name not in {t.name for t in tools()}:
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"unknown tool {params.name}")],
                                        is_error=True)
        return result(await handler(ctx, dict(params.arguments or {})))

    return Server(name, version="0.0.1", on_list_tools=list_tools, on_call_tool=call_tool)


def run(server: Server) -> None:
    """Serve over stdio, or over streamable HTTP with ``--http --port N``."""
    p = argparse.ArgumentParser()
    p.add_argument("--http", action="store_true")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    if args.http:
        import uvicorn

        app = server.streamable_http_app(host=args.host)
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
        return

    async def main() -> None:
        async with stdio_server() as (read, write):
            # tools_changed: the servers may add tools at run time and say so.
            options = server.create_initialization_options(NotificationOptions(tools_changed=True))
            await server.run(read, write, options)

    anyio.run(main)
