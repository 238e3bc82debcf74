"""The gateway as an MCP server (official ``mcp`` SDK, low-level :class:`Server`).

``tools/list`` returns only the meta-tools ``find_tools`` and ``use_tool``; the catalogue
stays behind them. ``tools/call`` handles:

* ``find_tools {query, limit?, tags?, format?, token_budget?, complete?}`` - the matching schemas
  (:meth:`Gateway.find_tools`; ``format`` overrides the configured host format);
* ``use_tool {query, params, confirm?}`` - find the best tool and run it;
* any tool name ``find_tools`` returned (e.g. ``weather__get_forecast``) - validated
  against its JSON Schema and run through :meth:`Gateway.call_tool`. A high-risk tool is
  confirmed with ``_meta: {"toolsift/confirm": true}`` on the call, since its arguments
  belong to the tool.

Every :class:`GatewayError` comes back as a tool result with ``isError: true``, the
error object ``{"error": {"code", "message", ...}}`` as ``structuredContent`` and as
JSON text, so an LLM can read it and a program can branch on ``code``.

A proxied call returns the upstream's own result (content, structured content, its
``isError``) unchanged.
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import pydantic_core

from .._version import __version__
from ..schema import Tool
from .config import FORMATS
from .core import Gateway
from . import _mcp
from ._mcp import Server, types
from .errors import GatewayError
from .upstream import ServeConfig, Upstreams
from ..usage.recorder import client_scope

__all__ = ["CONFIRM_META_KEY", "WORKER_META_KEY", "Runtime", "build_mcp_server", "error_result", "open_runtime", "serve_stdio"]

log = logging.getLogger("toolsift.gateway.server")

#: ``_meta`` key of a ``tools/call`` request confirming a high-risk direct call.
CONFIRM_META_KEY = "toolsift/confirm"
#: ``_meta`` key of a find_tools result naming the worker process that served it
#: (``serve --workers N``).
WORKER_META_KEY = "toolsift/worker_pid"

_FIND_KEYS = frozenset({"query", "limit", "tags", "format", "token_budget", "complete"})
_USE_KEYS = frozenset({"query", "params", "confirm"})


@dataclass
class Runtime:
    """A running gateway: the :class:`Gateway`, its upstreams (if any) and uptime."""

    gateway: Gateway
    upstreams: Upstreams | None = None
    started: float = field(default_factory=time.monotonic)
    worker_pid: int | None = None  # set in a worker process: find_tools results carry it

    def health(self, *, detail: bool = True) -> dict[str, Any]:
        """The ``/health`` body: status, tool count, upstream states.

        Args:
            detail: Include per-upstream details (names, errors); off for callers that
                did not authenticate.
        """
        ups = self.upstreams.status() if self.upstreams is not None else []
        down = [u for u in ups if u["state"] != "ready"]
        body: dict[str, Any] = {
            "status": "degraded" if down else "ok",
            "tools": len(self.gateway.index.catalog),
            "uptime_s": round(time.monotonic() - self.started, 1),
            "upstreams": {"total": len(ups), "ready": len(ups) - len(down), "down": len(down)},
        }
        if self.worker_pid is not None:
            body["worker_pid"] = self.worker_pid
        if detail:
            body["upstream_status"] = ups
            body["version"] = __version__
        return body


@asynccontextmanager
async def open_runtime(config: ServeConfig, *, local_tools: Sequence[Tool] = (),
                       index_config: Any = None, usage: Any = None, index: Any = None,
                       save_index: str | os.PathLike | None = None) -> AsyncIterator[Runtime]:
    """Connect the upstreams, build the index and the gateway; close everything on exit.

    Args:
        config: The serve config (upstreams, gateway settings).
        local_tools: Tools from a local catalogue, served without an executor.
        index_config: :class:`~toolsift.config.IndexConfig` for the index (``None``: that
            of ``index`` when given, else ``preset_config(config.preset)``, the default
            preset unless the config names one).
        save_index: Save the combined index here after every (re)build (default
            ``config.save_index``); the ``INDEX`` of ``toolsift learn``.
        usage: A :class:`toolsift.usage.GatewayLearning`: record usage and relearn.
        index: An already built (or memory-mapped) index of ``local_tools``, used as is
            when there are no upstreams; with upstreams its tools join theirs.

    Raises:
        ToolsiftError: Nothing to serve (no upstream answered, no local tools).
    """
    if index_config is None and index is not None:
        index_config = index.config  # upstream rebuilds keep the given index's configuration
    if index_config is None:
        from ..presets import preset_config

        index_config = preset_config(config.preset)
    save_index = save_index if save_index is not None else config.save_index
    if index is not None and not local_tools:
        local_tools = list(index.catalog)
    if config.upstreams:
        async with Upstreams(config.upstreams, local_tools=local_tools, index_config=index_config,
                             max_result_bytes=config.gateway.max_result_bytes,
                             max_result_items=config.gateway.max_result_items, save_index=save_index) as ups:
            gateway = Gateway(ups.index, config=config.gateway, executor=ups.execute,
                              recorder=usage.recorder if usage is not None else None)
            ups.attach(gateway)
            async with _learning(usage, gateway):
                yield Runtime(gateway, ups)
        return
    from ..errors import ToolsiftError
    from ..toolindex import ToolIndex

    if not local_tools:
        raise ToolsiftError("nothing to serve: the config lists no upstreams and no catalogue was given")
    if index is None:
        index = ToolIndex.build(list(local_tools), config=index_config)
    if save_index is not None:
        from .upstream import save_gateway_index

        await anyio.to_thread.run_sync(save_gateway_index, index, save_index)
    gateway = Gateway(index, config=config.gateway, recorder=usage.recorder if usage is not None else None)
    async with _learning(usage, gateway):
        yield Runtime(gateway)


@asynccontextmanager
async def _learning(usage: Any, gateway: Gateway) -> AsyncIterator[None]:
    """Relearning from usage while the runtime is open (nothing without ``usage``)."""
    if usage is None:
        yield
        return
    usage.attach(gateway)
    try:
        yield
    finally:
        usage.close()


def _text_result(payload: dict[str, Any], *, is_error: bool = False,
                 meta: dict[str, Any] | None = None) -> dict[str, Any]:
    # pydantic-core's serializer (a dependency of the SDK): compact UTF-8 JSON, several
    # times faster than json.dumps on a find_tools result.
    text = pydantic_core.to_json(payload, fallback=str).decode()
    return _mcp.text_result(payload, text, is_error=is_error, meta=meta)


def error_result(err: GatewayError) -> dict[str, Any]:
    """A :class:`GatewayError` as an MCP tool result (``isError: true``), in JSON form."""
    return _text_result(err.to_dict(), is_error=True)


def _upstream_result(result: Any) -> types.CallToolResult | None:
    """The upstream's own ``CallToolResult`` if ``result`` is one (proxied calls)."""
    if isinstance(result, Mapping) and isinstance(result.get("content"), list):
        try:
            return _mcp.tool_result(result)
        except ValueError:
            return None
    return None


def _is_error(result: Any) -> bool:
    """Whether ``result`` is an upstream ``CallToolResult`` flagged ``isError``."""
    return _upstream_result(result) is not None and result.get("isError") is True


def _check_keys(name: str, args: Mapping[str, Any], allowed: frozenset[str]) -> None:
    # A misspelt argument ("querry") silently ignored would look like an empty query.
    unknown = sorted(set(args) - allowed)
    if unknown:
        raise GatewayError("bad_request", f"{name} does not take {', '.join(map(repr, unknown))}; "
                           f"its arguments are {', '.join(sorted(allowed))}", allowed=sorted(allowed))


def _session_key(request: Any) -> str | None:
    """The schema-cache session: the MCP session id over HTTP, the process over stdio
    (one client per process); ``None`` (no cache) for HTTP without a session."""
    if request is None:
        return "stdio"
    sid = request.headers.get("mcp-session-id")
    return f"http:{sid}" if sid else None


#: This process's identity over stdio: the host started it for one client (its session).
_STDIO_CLIENT = f"stdio:{secrets.token_hex(6)}"


def _client_key(request: Any) -> str | None:
    """The client identity recorded in the usage log: what the deployment authenticates.

    Over HTTP, the principal of a named bearer token (``token:NAME``, from
    ``ServeConfig.auth_tokens``), else the TCP peer address (``http:ADDR``). A request
    header never names the client: uvicorn's proxy-header handling is off unless
    ``trusted_proxies`` names the proxies (then the address a trusted proxy forwards is
    the peer). Over stdio, the gateway process (``stdio:<random id>``, one per run):
    the host started it for one client.
    """
    if request is None:
        return _STDIO_CLIENT
    scope = getattr(request, "scope", None) or {}
    principal = scope.get("toolsift.principal")
    if principal:
        return f"token:{principal}"
    client = getattr(request, "client", None)
    host = getattr(client, "host", None)
    return f"http:{host}" if host else None


def build_mcp_server(runtime: Callable[[], Runtime], *, name: str = "toolsift") -> Server:
    """The MCP server in front of the gateway ``runtime()`` returns.

    ``runtime`` is called per request, so the gateway may be created after the server
    (the HTTP app builds it in its lifespan).
    """

    async def call_tool(name: str, args: dict[str, Any], meta: dict[str, Any], request: Any) -> Any:
        with client_scope(_client_key(request)):
            return await _call_tool(name, args, meta, request)

    async def _call_tool(name: str, args: dict[str, Any], meta: dict[str, Any], request: Any) -> Any:
        gateway = runtime().gateway
        try:
            if name == "find_tools":
                _check_keys("find_tools", args, _FIND_KEYS)
                found = await gateway.find_tools(cast(Any, args.get("query")), limit=args.get("limit"),
                                                 format=args.get("format"), tags=args.get("tags") or (),
                                                 session=_session_key(request),
                                                 token_budget=args.get("token_budget"),
                                                 complete=args.get("complete", False))
                pid = runtime().worker_pid
                return _text_result(found, meta=None if pid is None else {WORKER_META_KEY: pid})
            if name == "use_tool":
                _check_keys("use_tool", args, _USE_KEYS)
                confirm = args.get("confirm", False)
                if not isinstance(confirm, bool):
                    raise GatewayError("bad_request", f"confirm must be true or false, got {confirm!r}")
                done = await gateway.use_tool(cast(Any, args.get("query")), args.get("params"), confirm=confirm,
                                              session=_session_key(request))
                payload = {"tool": done["tool"], "result": done["result"]}
                return _text_result(payload, is_error=_is_error(done["result"]))
            confirm = meta.get(CONFIRM_META_KEY) is True
            try:
                done = await gateway.call_tool(name, args, confirm=confirm, session=_session_key(request))
            except GatewayError as err:
                if err.code == "confirmation_required":
                    raise GatewayError(err.code, err.message, **err.details,
                                       how_to_confirm={"_meta": {CONFIRM_META_KEY: True}}) from None
                raise
            return _upstream_result(done["result"]) or _text_result(done)
        except GatewayError as err:
            log.info("%s -> %s", name, err)
            return error_result(err)

    return _mcp.make_server(
        name, version=__version__, title="toolsift gateway",
        instructions="Call find_tools first to get the tools for a task, then call a returned "
                     "tool by its name (or use use_tool to find and run the best tool in one step).",
        list_tools=lambda: _meta_tools(runtime().gateway), call_tool=call_tool)


def _meta_tools(gateway: Gateway) -> list[dict[str, Any]]:
    tools = gateway.meta_tools("mcp")
    for tool in tools:
        props = tool.get("inputSchema", {}).get("properties")
        # The host format is usually fixed per client; letting the call pick it keeps
        # one gateway usable by hosts of different APIs.
        if tool.get("name") == "find_tools" and isinstance(props, dict) and "format" not in props:
            props["format"] = {"type": "string", "enum": list(FORMATS), "default": gateway.config.format,
                               "description": "Schema format of the returned tools (host API)."}
    return tools


async def serve_stdio(config: ServeConfig, *, local_tools: Sequence[Tool] = (), index_config: Any = None,
                      usage: Any = None) -> None:
    """Serve MCP over this process's stdin/stdout until the client closes stdin."""
    from mcp.server.stdio import stdio_server

    async with open_runtime(config, local_tools=local_tools, index_config=index_config, usage=usage) as rt:
        server = build_mcp_server(lambda: rt)
        log.info("serving %d tools over stdio", len(rt.gateway.index.catalog))
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options(_mcp.NotificationOptions()))
