"""The gateway over streamable HTTP: a Starlette app with auth, size limits and health.

Routes:

* ``/mcp`` - the MCP endpoint (streamable HTTP, stateful sessions, JSON responses);
* ``GET /health`` - ``{"status": "ok"|"degraded", "tools": n, "upstreams": {...}}``;
  per-upstream details (state, restarts, last error) only for authenticated callers,
  so a load balancer can probe without a token but learns nothing internal.

Guards, outermost first: a bearer token when ``auth_token`` or ``auth_tokens`` is
configured (401, with ``WWW-Authenticate: Bearer``), then the request body limit (413),
both answered before the MCP layer parses anything.

Client identity (what the usage log records, see ``server._client_key``): the principal
of a named token, else the TCP peer address. uvicorn's proxy-header handling is off
unless ``trusted_proxies`` names the proxies, so a forged ``X-Forwarded-For``,
``X-Real-IP`` or ``Forwarded`` header changes nothing.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ToolsiftError
from ..schema import Tool
from .server import Runtime, build_mcp_server, open_runtime
from .upstream import ServeConfig

__all__ = ["BearerAuth", "BodyLimit", "build_app", "serve_http"]

log = logging.getLogger("toolsift.gateway.http")

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


async def _send_json(send: Send, status: int, body: dict[str, Any],
                     headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": data})


def _bearer(scope: Scope) -> bytes | None:
    """The bearer token a request carries, if any."""
    for key, value in scope.get("headers", ()):
        if key == b"authorization":
            scheme, _, given = value.decode("latin-1").partition(" ")
            return given.strip().encode("latin-1") if scheme.lower() == "bearer" else None
    return None


class BearerAuth:
    """Require ``Authorization: Bearer <token>`` on every HTTP request except the
    public paths.

    ``scope["toolsift.authorized"]`` tells the app whether a valid token was given, and
    ``scope["toolsift.principal"]`` names the principal of a named token (``None`` for
    the unnamed ``token`` or no auth): the identity the usage log records.

    Args:
        app: The wrapped ASGI app.
        token: The unnamed token (``ServeConfig.auth_token``), or ``None``.
        public: Paths served without a token.
        principals: Named tokens, principal -> token (``ServeConfig.auth_tokens``).
    """

    def __init__(self, app: ASGIApp, token: str | None, *, public: Sequence[str] = ("/health",),
                 principals: Mapping[str, str] | None = None) -> None:
        self.app = app
        self.tokens: list[tuple[str | None, bytes]] = [(name, t.encode()) for name, t in (principals or {}).items()]
        if token is not None:
            self.tokens.append((None, token.encode()))
        self.public = frozenset(public)

    def _check(self, scope: Scope) -> tuple[bool, str | None]:
        if not self.tokens:
            return True, None
        given = _bearer(scope)
        if given is None:
            return False, None
        found: tuple[bool, str | None] = (False, None)
        # Constant-time comparisons, every token compared: timing must not leak a token
        # or which one matched.
        for name, token in self.tokens:
            if hmac.compare_digest(given, token):
                found = (True, name)
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        ok, principal = self._check(scope)
        if not ok and scope.get("path") not in self.public:
            await _send_json(send, 401, {"error": {"code": "unauthorized",
                                                   "message": "missing or wrong bearer token"}},
                             [(b"www-authenticate", b'Bearer realm="toolsift"')])
            return
        scope["toolsift.authorized"] = ok
        scope["toolsift.principal"] = principal
        await self.app(scope, receive, send)


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413, by declared length or as they
    stream in (chunked bodies have no length to check up front)."""

    def __init__(self, app: ASGIApp, max_bytes: int, *, timeout_s: float | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for key, value in scope.get("headers", ()):
            if key == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await self._reject(send, 400, "bad Content-Length")
                    return
                if declared > self.max_bytes:
                    await self._reject(send, 413, f"request body over {self.max_bytes} bytes")
                    return
        # Read the body up front (it is bounded in size and time) so an oversized or
        # trickled body is refused before the app has started answering.
        chunks: list[Message] = []
        size = 0
        with anyio.move_on_after(self.timeout_s) as timer:
            while True:
                message = await receive()
                chunks.append(message)
                if message["type"] != "http.request":
                    break
                size += len(message.get("body", b""))
                if size > self.max_bytes:
                    await self._reject(send, 413, f"request body over {self.max_bytes} bytes")
                    return
                if not message.get("more_body", False):
                    break
        if timer.cancelled_caught:
            await self._reject(send, 408, f"request body not received within {self.timeout_s:g}s")
            return

        async def replay() -> Message:
            return chunks.pop(0) if chunks else await receive()

        await self.app(scope, replay, send)

    @staticmethod
    async def _reject(send: Send, status: int, message: str) -> None:
        code = {413: "request_too_large", 408: "request_timeout"}.get(status, "bad_request")
        # A refused request's unread body must not be parsed as the next request.
        await _send_json(send, status, {"error": {"code": code, "message": message}}, [(b"connection", b"close")])


class _Holder:
    runtime: Runtime | None = None

    def __call__(self) -> Runtime:
        if self.runtime is None:
            raise RuntimeError("the gateway is not running yet")
        return self.runtime


def build_app(config: ServeConfig, *, local_tools: Sequence[Tool] = (), index_config: Any = None,
              host: str = "127.0.0.1", usage: Any = None, index: Any = None, stateless: bool = False,
              worker_pid: int | None = None) -> ASGIApp:
    """The ASGI app serving the gateway; upstreams connect in its lifespan.

    Args:
        config: Upstreams, gateway settings, ``auth_token``, ``max_request_bytes``.
        local_tools: Tools from a local catalogue (no executor).
        index_config: Index settings.
        host: The host the app is served on; on loopback, DNS-rebinding protection
            (Host and Origin checks) is on, as in the SDK's own app.
        usage: A :class:`toolsift.usage.GatewayLearning` (record usage, relearn).
        index: A loaded :class:`~toolsift.toolindex.ToolIndex` of the local tools (a
            worker's memory-mapped copy) instead of building one from ``local_tools``.
        stateless: Serve MCP without sessions (each POST stands alone), as workers
            sharing one socket must: a session made in one worker is unknown to another.
        worker_pid: Set in a worker: find_tools results carry it in ``_meta``.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    from ._mcp import streamable_http_app

    holder = _Holder()
    server = build_mcp_server(holder)
    security = None
    if host in _LOOPBACK:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    # Plain JSON answers: every gateway call is request/response, and JSON avoids an SSE
    # stream per POST.
    manager, endpoint = streamable_http_app(server, security_settings=security,
                                            max_request_body_size=config.max_request_bytes, stateless=stateless)

    async def health(request: Request) -> JSONResponse:
        detail = bool(request.scope.get("toolsift.authorized", not config.requires_auth))
        return JSONResponse(holder().health(detail=detail))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            opened = open_runtime(config, local_tools=local_tools, index_config=index_config, usage=usage,
                                  index=index)
            rt = await opened.__aenter__()
            rt.worker_pid = worker_pid
        except ToolsiftError as exc:
            # An operator error (no upstream answered, ...): serve_http reports it as one
            # line, so the lifespan must not hand uvicorn a traceback to print.
            failure.append(exc)
            raise
        async with _entered(opened, rt):
            holder.runtime = rt
            async with manager.run():
                log.info("serving %d tools over HTTP", len(rt.gateway.index.catalog))
                yield
            holder.runtime = None

    failure: list[ToolsiftError] = []
    app = Starlette(routes=[Route("/health", health, methods=["GET"]),
                            Route("/mcp", endpoint)],
                    lifespan=lifespan)
    limited = BodyLimit(app, config.max_request_bytes, timeout_s=config.body_timeout_s)
    outer = _QuietStartup(BearerAuth(limited, config.auth_token, principals=config.auth_tokens), failure)
    return outer


@asynccontextmanager
async def _entered(cm: Any, value: Any) -> AsyncIterator[Any]:
    """Exit an already entered async context manager ``cm`` when this block ends."""
    try:
        yield value
    except BaseException as exc:
        if not await cm.__aexit__(type(exc), exc, exc.__traceback__):
            raise
    else:
        await cm.__aexit__(None, None, None)


class _QuietStartup:
    """Drops the traceback Starlette attaches to a failed startup caused by a toolsift error.

    Attributes:
        failure: The :class:`ToolsiftError` that stopped startup, if any.
    """

    def __init__(self, app: ASGIApp, failure: list[ToolsiftError]) -> None:
        self.app = app
        self.failure = failure

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def quiet(message: Message) -> None:
            if message["type"] == "lifespan.startup.failed" and self.failure:
                message = {"type": "lifespan.startup.failed", "message": ""}
            await send(message)

        await self.app(scope, receive, quiet)


class _DropStartupFailed(logging.Filter):
    """Hides uvicorn's "Application startup failed" line when toolsift reports the cause."""

    def __init__(self, failure: list[ToolsiftError]) -> None:
        super().__init__()
        self.failure = failure

    def filter(self, record: logging.LogRecord) -> bool:
        return not (self.failure and "startup failed" in record.getMessage())


def _server_class() -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, reporting the URL once it listens (uvicorn's own started line
        is below the warning log level the gateway runs it at)."""

        def __init__(self, config: Any, on_ready: Callable[[str], None] | None) -> None:
            super().__init__(config)
            self._on_ready = on_ready

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and self._on_ready is not None and self.servers:
                host, port = self.servers[0].sockets[0].getsockname()[:2]
                host = f"[{host}]" if ":" in host else host
                self._on_ready(f"http://{host}:{port}/mcp")

    return Server


def serve_http(config: ServeConfig, *, host: str = "127.0.0.1", port: int = 8000,
               local_tools: Sequence[Tool] = (), index_config: Any = None, usage: Any = None,
               on_ready: Callable[[str], None] | None = None, sock: Any = None, index: Any = None,
               worker: bool = False) -> None:
    """Serve the gateway over HTTP with uvicorn until interrupted.

    Args:
        config: Upstreams, gateway settings, auth token, request size limit.
        host: Interface to listen on.
        port: Port to listen on (0 picks a free one).
        local_tools: Tools from a local catalogue (no executor).
        index_config: Index settings.
        usage: A :class:`toolsift.usage.GatewayLearning` (record usage, relearn).
        on_ready: Called once with the MCP endpoint URL (``http://host:port/mcp``, the
            real port) when the upstreams are connected and the socket listens.
        sock: An already bound, listening socket to serve on (a worker's inherited
            one); ``host`` and ``port`` are then only used in messages.
        index: A loaded index of the local tools (see :func:`build_app`).
        worker: Serve as one of several worker processes: stateless MCP, and the
            process id in find_tools results (``_meta["toolsift/worker_pid"]``).

    Raises:
        ToolsiftError: Startup failed, e.g. no upstream answered and there are no local
            tools (``toolsift serve`` prints it as one line and exits with status 2).
    """
    import uvicorn

    owned = None
    if sock is None:
        # Bound here, not by uvicorn: a port in use or a host that does not resolve is a
        # ToolsiftError (one line, status 2), not uvicorn's log line and exit status 3.
        from .listen import bind

        sock = owned = bind(host, port)
    try:
        if host not in _LOOPBACK and not config.requires_auth:
            log.warning("serving on %s without auth_token: anyone who can reach the port can call the tools", host)
        from .http_limits import proxy_settings, uvicorn_settings

        app = build_app(config, local_tools=local_tools, index_config=index_config, host=host, usage=usage,
                        index=index, stateless=worker, worker_pid=os.getpid() if worker else None)
        uv = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on",
                            timeout_graceful_shutdown=3, **uvicorn_settings(config), **proxy_settings(config))
        server = _server_class()(uv, on_ready)
        failure = app.failure if isinstance(app, _QuietStartup) else []
        quiet = _DropStartupFailed(failure)
        uv_log = logging.getLogger("uvicorn.error")
        uv_log.addFilter(quiet)
        try:
            server.run(sockets=[sock])
        except SystemExit:
            if not failure:
                raise
        finally:
            uv_log.removeFilter(quiet)
        if failure:
            raise failure[0]
        if not server.started:
            raise ToolsiftError(f"the HTTP gateway did not start on {host}:{port} (see the log above)")
    finally:
        if owned is not None:
            owned.close()
