"""Shared runner for the test upstream MCP servers: stdio by default, ``--http --port N``
for streamable HTTP on loopback.

The servers are deliberately tiny and deterministic; they exist so the gateway tests
talk to real MCP processes over real transports.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

# The servers run on whichever MCP SDK major is installed (1.x or 2.x), like a user's.
MCP_MAJOR = int(version("mcp").split(".")[0])

Handler = Callable[[Any, dict[str, Any]], Awaitable[Any]]


def tool(name: str, description: str, properties: Mapping[str, Any], required: list[str] | None = None,
         **extra: Any) -> dict[str, Any]:
    """An MCP tool definition (JSON form) with an object input schema; ``extra`` holds
    further JSON keys (``outputSchema``, ``annotations``, ``_meta``)."""
    schema = {"type": "object", "properties": dict(properties), "required": list(required or [])}
    return {"name": name, "description": description, "inputSchema": schema, **extra}


def result(payload: Any, *, is_error: bool = False) -> types.CallToolResult:
    """A tool result carrying ``payload`` as JSON text and as structured content."""
    text = payload if isinstance(payload, str) else json.dumps(payload, sort_keys=True)
    data: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if not isinstance(payload, str):
        data["structuredContent"] = payload if isinstance(payload, dict) else {"value": payload}
    return types.CallToolResult.model_validate(data)


def make_server(name: str, tools: Callable[[], list[dict[str, Any]]], handlers: Mapping[str, Handler]) -> Server:
    """A low-level server whose tool list is read from ``tools()`` on every listing, so a
    handler can change it at run time. Handlers get ``(ctx, arguments)``; ``ctx.session``
    sends notifications."""

    def listing() -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in tools()])

    async def dispatch(ctx: Any, tool_name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        handler = handlers.get(tool_name)
        if handler is None or tool_name not in {t["name"] for t in tools()}:
            return result(f"unknown tool {tool_name}", is_error=True)
        return result(await handler(ctx, arguments))

    if MCP_MAJOR >= 2:
        async def list_tools(ctx, params) -> types.ListToolsResult:
            return listing()

        async def call_tool(ctx, params) -> types.CallToolResult:
            return await dispatch(ctx, params.name, dict(params.arguments or {}))

        return Server(name, version="0.0.1", on_list_tools=list_tools, on_call_tool=call_tool)

    server = Server(name, version="0.0.1")

    async def list_handler(req):
        return types.ServerResult(listing())

    async def call_handler(req):
        return types.ServerResult(await dispatch(server.request_context, req.params.name,
                                                 dict(req.params.arguments or {})))

    server.request_handlers[types.ListToolsRequest] = list_handler
    server.request_handlers[types.CallToolRequest] = call_handler
    return server


def _http_app(server: Server) -> Any:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Route

    manager = StreamableHTTPSessionManager(app=server)

    class Endpoint:
        async def __call__(self, scope, receive, send) -> None:
            await manager.handle_request(scope, receive, send)

    @asynccontextmanager
    async def lifespan(app):
        async with manager.run():
            yield

    return Starlette(routes=[Route("/mcp", Endpoint())], lifespan=lifespan)


def run(server: Server) -> None:
    """Serve over stdio, or over streamable HTTP with ``--http --port N``."""
    p = argparse.ArgumentParser()
    p.add_argument("--http", action="store_true")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    if args.http:
        import uvicorn

        uvicorn.run(_http_app(server), host=args.host, port=args.port, log_level="warning")
        return

    async def main() -> None:
        async with stdio_server() as (read, write):
            # tools_changed: the servers may add tools at run time and say so.
            options = server.create_initialization_options(NotificationOptions(tools_changed=True))
            await server.run(read, write, options)

    anyio.run(main)
