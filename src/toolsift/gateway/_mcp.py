"""The one seam between toolsift and the official MCP SDK, for ``mcp`` 1.x and 2.x.

The two majors speak the same protocol but differ in Python API: 2.x moved the wire
types to ``mcp_types`` (still mirrored as ``mcp.types``) with snake_case attribute names,
renamed ``McpError`` to ``MCPError``, switched its HTTP client to ``httpx2`` and takes
request handlers as constructor arguments; 1.x has camelCase attributes, ``httpx`` and
decorator-registered handlers (whose ``call_tool`` decorator logs a warning on every call
of a tool it did not list - every proxied call). Everything version-specific the gateway
needs lives here, so the rest of the package reads one API:

* wire objects are built from and read as their JSON (camelCase) form, which both
  majors accept and produce;
* servers are built by :func:`make_server` with plain async callbacks;
* clients use :func:`http_client` / :func:`http_transport` and :func:`error_code`
  (the client half lives one layer down, in :mod:`toolsift.mcp_client`, shared with the
  adapters; it is re-exported here, and :func:`http_client` adds result caps to it).

Users keep whichever major their own servers need (``FastMCP`` lives in
``mcp.server.fastmcp`` only in 1.x; 2.x renamed it ``mcp.server.mcpserver.MCPServer``).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp.types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.stdio import get_default_environment
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.shared import _httpx_utils
from mcp.shared.message import SessionMessage

# The client half shared with the adapters lives one layer down; re-exported here.
from ..mcp_client import _httpx, dump, http_transport, list_tools_page

try:  # mcp >= 2
    from mcp.shared.exceptions import MCPError as McpError
except ImportError:  # mcp 1.x
    from mcp.shared.exceptions import McpError  # type: ignore[no-redef,attr-defined]

__all__ = [
    "MCP_MAJOR", "MCP_VERSION", "ClientSession", "McpError", "NotificationOptions", "StdioServerParameters",
    "default_environment", "dump", "error_code", "error_data", "error_message", "message_line", "parse_message",
    "session_message", "http_client", "http_transport", "is_tool_list_changed",
    "list_tools_page", "make_server", "stdio_client", "streamable_http_app", "text_result", "tool_result", "types",
]

#: The installed SDK's version and major version.
MCP_VERSION: str = importlib.metadata.version("mcp")
MCP_MAJOR: int = int(MCP_VERSION.split(".")[0])


#: ``tools/call`` handler: ``(name, arguments, meta, http_request) -> CallToolResult``;
#: ``meta`` is the request's ``_meta`` as JSON, ``http_request`` the Starlette request
#: over HTTP and ``None`` over stdio.
CallHandler = Callable[[str, dict[str, Any], dict[str, Any], Any], Awaitable[Any]]


def tool_result(data: Mapping[str, Any]) -> Any:
    """A ``CallToolResult`` from its JSON form.

    Raises:
        ValueError: ``data`` is not a valid result (pydantic's ``ValidationError``).
    """
    return types.CallToolResult.model_validate(dict(data))


def text_result(payload: dict[str, Any], text: str, *, is_error: bool = False,
                meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``CallToolResult`` in its JSON form, carrying ``payload`` as structured content
    and ``text`` (and ``meta`` as its ``_meta``).

    Left as JSON on purpose: a handler of :func:`make_server` may return it as is. The
    2.x SDK validates and dumps every ``tools/call`` result against the protocol
    version's schema anyway, so building a pydantic model here first only added a
    validation and a ``model_dump`` of the whole payload (0.2 ms for five schemas,
    as much as the search).
    """
    data: dict[str, Any] = {"content": [{"type": "text", "text": text}], "structuredContent": payload,
                            "isError": is_error}
    if meta:
        data["_meta"] = meta
    return data


def parse_message(line: bytes | str) -> Any:
    """A ``SessionMessage`` from one JSON-RPC message's JSON text.

    Raises:
        ValueError: Not a valid JSON-RPC message.
    """
    adapter = getattr(types, "jsonrpc_message_adapter", None)
    if adapter is not None:  # mcp >= 2
        message = adapter.validate_json(line, by_name=False)
    else:
        message = types.JSONRPCMessage.model_validate_json(line)  # type: ignore[attr-defined]  # mcp 1.x
    return SessionMessage(message)


def session_message(data: Mapping[str, Any]) -> Any:
    """A ``SessionMessage`` from a JSON-RPC message's JSON form."""
    adapter = getattr(types, "jsonrpc_message_adapter", None)
    if adapter is not None:
        return SessionMessage(adapter.validate_python(dict(data), by_name=False))
    return SessionMessage(types.JSONRPCMessage.model_validate(dict(data)))  # type: ignore[attr-defined]  # mcp 1.x


def message_line(message: Any) -> bytes:
    """A ``SessionMessage`` as one line of the stdio transport."""
    return (message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode()


def default_environment() -> dict[str, str]:
    """The SDK's safe subset of the environment, handed to stdio servers."""
    return get_default_environment()


def error_data(exc: BaseException) -> Any:
    """The ``data`` of an SDK error (``McpError``/``MCPError``)."""
    error = getattr(exc, "error", None)
    return getattr(error, "data", None)


def error_code(exc: BaseException) -> int | None:
    """The JSON-RPC error code of an SDK error (``McpError``/``MCPError``)."""
    error = getattr(exc, "error", None)
    return getattr(error, "code", None)


def error_message(exc: BaseException) -> str:
    """The message of an SDK error."""
    error = getattr(exc, "error", None)
    return str(getattr(error, "message", None) or exc)


def is_tool_list_changed(message: Any) -> bool:
    """Whether a message from a server is ``notifications/tools/list_changed``."""
    return isinstance(getattr(message, "root", message), types.ToolListChangedNotification)


def http_client(*, headers: Mapping[str, str] | None = None, timeout_s: float = 30.0,
                read_timeout_s: float | None = None, max_result_bytes: int | None = None,
                max_result_items: int | None = None) -> Any:
    """An HTTP client for :func:`http_transport`, from the SDK's own HTTP library.

    Args:
        headers: Sent with every request.
        timeout_s: Connect, write and pool timeout.
        read_timeout_s: Read timeout; ``None`` (default) never times out reads, since a
            server may hold a stream open.
        max_result_bytes: Cap ``tools/call`` answers while reading them
            (:class:`~toolsift.gateway.http_caps.CappedTransport`); needs
            ``max_result_items`` too.
        max_result_items: Most JSON values in one result.
    """
    timeout = _httpx.Timeout(timeout_s, read=read_timeout_s)
    if max_result_bytes is None or max_result_items is None:
        return _httpx_utils.create_mcp_http_client(headers=dict(headers or {}) or None, timeout=timeout)
    from .http_caps import CappedTransport

    transport = CappedTransport(_httpx.AsyncHTTPTransport(), _httpx, max_bytes=max_result_bytes,
                                max_items=max_result_items)
    # The SDK's own factory, plus the transport: 1.x follows redirects, 2.x follows
    # them itself within the endpoint's origin.
    kwargs: dict[str, Any] = {"timeout": timeout, "transport": transport}
    if headers:
        kwargs["headers"] = dict(headers)
    if MCP_MAJOR < 2:
        kwargs["follow_redirects"] = True
    return _httpx.AsyncClient(**kwargs)


def _meta_dict(meta: Any) -> dict[str, Any]:
    if meta is None:
        return {}
    if isinstance(meta, Mapping):
        return dict(meta)
    # 1.x: a pydantic model whose unknown keys ("toolsift/confirm") are extras.
    return meta.model_dump(by_alias=True, mode="json", exclude_none=True)


def make_server(name: str, *, version: str, title: str, instructions: str,
                list_tools: Callable[[], list[dict[str, Any]]], call_tool: CallHandler) -> Server:
    """A low-level MCP server answering ``tools/list`` and ``tools/call``.

    Args:
        name: Server name given in the handshake.
        version: Server version.
        title: Human title (2.x only; 1.x has no such field).
        instructions: Instructions for the client's model.
        list_tools: The listed tools as JSON (``name``, ``inputSchema``, ...).
        call_tool: See :data:`CallHandler`; it returns a ``CallToolResult`` or its JSON
            form (:func:`text_result`).

    Both majors' handlers run without SDK-side argument validation: the gateway
    validates arguments itself, against the schema of the tool actually called.
    """

    def listed() -> Any:
        return types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in list_tools()])

    if MCP_MAJOR >= 2:
        async def on_list(ctx: Any, params: Any) -> Any:
            return listed()

        async def on_call(ctx: Any, params: Any) -> Any:
            return await call_tool(params.name, dict(params.arguments or {}), _meta_dict(params.meta),
                                   getattr(ctx, "request", None))

        return Server(name, version=version, title=title, instructions=instructions,  # type: ignore[call-arg]
                      on_list_tools=on_list, on_call_tool=on_call)

    server = Server(name, version=version, instructions=instructions)

    async def list_handler(req: Any) -> Any:
        return types.ServerResult(listed())  # type: ignore[operator]  # mcp 1.x: a model, 2.x: a union

    async def call_handler(req: Any) -> Any:
        ctx = server.request_context  # type: ignore[attr-defined]  # mcp 1.x
        params = req.params
        result = await call_tool(params.name, dict(params.arguments or {}), _meta_dict(params.meta),
                                 getattr(ctx, "request", None))
        if isinstance(result, Mapping):  # 1.x serialises models only
            result = tool_result(result)
        return types.ServerResult(result)  # type: ignore[operator]  # mcp 1.x

    # Registered directly rather than with the @call_tool() decorator: the decorator
    # validates against (and warns on every call about) tools it has not listed, which
    # is every proxied tool here.
    server.request_handlers[types.ListToolsRequest] = list_handler  # type: ignore[attr-defined]  # mcp 1.x
    server.request_handlers[types.CallToolRequest] = call_handler  # type: ignore[attr-defined]
    return server


def streamable_http_app(server: Server, *, security_settings: Any = None,
                        max_request_body_size: int | None = None, stateless: bool = False) -> tuple[Any, Any]:
    """The session manager and ASGI endpoint serving ``server`` over streamable HTTP
    (stateful sessions unless ``stateless``, plain JSON responses).

    Returns:
        ``(manager, app)``; run ``manager.run()`` in the application's lifespan.
    """
    import inspect

    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    kwargs: dict[str, Any] = {"app": server, "json_response": True, "security_settings": security_settings,
                              "stateless": stateless}
    # Older 1.x releases have no body limit of their own; the gateway's BodyLimit
    # middleware enforces the same limit in front of them.
    if max_request_body_size is not None and \
            "max_request_body_size" in inspect.signature(StreamableHTTPSessionManager).parameters:
        kwargs["max_request_body_size"] = max_request_body_size
    manager = StreamableHTTPSessionManager(**kwargs)
    return manager, _Endpoint(manager)


class _Endpoint:
    """The ASGI endpoint of a session manager (an instance, so Starlette routes raw ASGI
    to it instead of wrapping it as a request handler)."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.manager.handle_request(scope, receive, send)
