"""Server CPU per ``tools/call`` without sockets: the ASGI apps called in-process.

Run: ``python -m benchmarks.bench_gateway_asgi [--requests 2000]``.

The HTTP benchmark (``bench_gateway_cpu``) includes the kernel's socket work and is
swayed by whatever else runs on the machine. Here each app (the gateway's, and the SDK's
own server with one trivial ``echo`` tool) is called directly with ASGI messages for
the same MCP exchange (initialize, then ``tools/call`` in one stateful session), and
this thread's CPU time is measured: what the Python stack itself costs per request.
In the session, a repeated find_tools returns tools it already sent as
``{"name", "etag", "unchanged": true}`` (the search and ranking still run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from benchmarks.http_load import queries

QS = queries()


def _gateway_app() -> tuple[Any, str, Any, list]:
    from toolsift.adapters import demo_catalog_path, load_catalog
    from toolsift.gateway.http import build_app
    from toolsift.gateway.upstream import ServeConfig

    app = build_app(ServeConfig.from_dict({"auth_token": "t"}), local_tools=list(load_catalog(demo_catalog_path())))
    return app, "find_tools", lambda i: {"query": QS[i % len(QS)], "limit": 5}, [(b"authorization", b"Bearer t")]


def _bare_app() -> tuple[Any, str, Any, list]:
    try:
        from mcp.server.mcpserver import MCPServer as Server
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]
    server = Server("bare")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    try:
        app = server.streamable_http_app(json_response=True)
    except TypeError:  # mcp 1.x
        server.settings.json_response = True
        app = server.streamable_http_app()
    return app, "echo", lambda i: {"text": QS[i % len(QS)]}, []


async def _request(app: Any, body: bytes, headers: list) -> tuple[dict, bytes]:
    pending = [{"type": "http.request", "body": body, "more_body": False}]
    out: list[dict] = []

    async def receive() -> dict:
        if pending:
            return pending.pop(0)
        await asyncio.sleep(3600)  # the client never disconnects mid-request
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        out.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/mcp", "raw_path": b"/mcp", "query_string": b"", "root_path": "",
             "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 50000),
             "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                         (b"accept", b"application/json, text/event-stream"),
                         (b"content-length", str(len(body)).encode()), *headers]}
    await app(scope, receive, send)
    start = next(m for m in out if m["type"] == "http.response.start")
    return start, b"".join(m.get("body", b"") for m in out if m["type"] == "http.response.body")


async def _measure(make: Any, requests: int) -> tuple[float, int]:
    app, tool, arguments, auth = make()
    inbox: asyncio.Queue = asyncio.Queue()
    outbox: asyncio.Queue = asyncio.Queue()
    await inbox.put({"type": "lifespan.startup"})
    life = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, inbox.get,
                                   outbox.put))
    started = await outbox.get()
    assert started["type"] == "lifespan.startup.complete", started
    start, _ = await _request(app, json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}).encode(),
        auth)
    headers = list(auth) + [(b"mcp-protocol-version", b"2025-06-18")]
    sid = dict(start["headers"]).get(b"mcp-session-id")
    if sid:
        headers.append((b"mcp-session-id", sid))
    await _request(app, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers)

    def call(i: int) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                           "params": {"name": tool, "arguments": arguments(i)}}).encode()

    for i in range(50):  # warm-up
        await _request(app, call(i), headers)
    size = 0
    t0 = time.thread_time()
    for i in range(requests):
        status, body = await _request(app, call(i), headers)
        assert status["status"] == 200, body[:200]
        size = len(body)
    cpu = time.thread_time() - t0
    await inbox.put({"type": "lifespan.shutdown"})
    await life
    return 1e3 * cpu / requests, size


def _search_ms(requests: int) -> float:
    """Thread CPU of one BM25 search of the demo catalogue, the core of find_tools."""
    from toolsift.adapters import demo_catalog_path, load_catalog
    from toolsift.toolindex import ToolIndex

    index = ToolIndex.build(load_catalog(demo_catalog_path()))
    for q in QS:
        index.search(q, k=5, explain="why")
    t0 = time.thread_time()
    for i in range(requests):
        index.search(QS[i % len(QS)], k=5, explain="why")
    return 1e3 * (time.thread_time() - t0) / requests


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    import logging

    logging.disable(logging.INFO)  # the SDK logs every session at INFO
    got: dict[str, list[float]] = {"bare SDK echo": [], "gateway find_tools": []}
    sizes: dict[str, int] = {}
    for _ in range(args.rounds):
        for label, make in (("bare SDK echo", _bare_app), ("gateway find_tools", _gateway_app)):
            ms, sizes[label] = asyncio.run(_measure(make, args.requests))
            got[label].append(ms)
    for label, values in got.items():
        print(f"{label:22s} {min(values):.3f} ms CPU/request (best of {args.rounds}; response {sizes[label]} bytes)")
    print(f"ratio {min(got['gateway find_tools']) / min(got['bare SDK echo']):.2f}x")
    print(f"of which ToolIndex.search alone: {_search_ms(args.requests):.3f} ms CPU/query (same queries, k=5, explain='why')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
