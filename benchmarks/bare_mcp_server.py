"""A bare official-SDK MCP server with one trivial tool, over streamable HTTP (JSON answers).

The baseline of ``benchmarks/bench_gateway_cpu.py``: what one ``tools/call`` costs in the
SDK and its HTTP stack alone, so the gateway's own per-request work can be compared
with it in the same run. Run: ``python benchmarks/bare_mcp_server.py PORT [--stateless]``.
"""

from __future__ import annotations

import argparse


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("--stateless", action="store_true")
    args = p.parse_args()
    import uvicorn

    try:  # mcp 2.x
        from mcp.server.mcpserver import MCPServer as Server
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]

    server = Server("bare")
    app_kwargs = {"json_response": True, "stateless_http": args.stateless}

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    try:
        app = server.streamable_http_app(**app_kwargs)
    except TypeError:  # mcp 1.x: the settings live on the server
        server.settings.json_response = True
        server.settings.stateless_http = args.stateless
        app = server.streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
