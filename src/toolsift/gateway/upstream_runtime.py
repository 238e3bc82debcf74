"""Runtime state of one upstream MCP server: start, watch, call, restart with back-off.

:class:`Upstream` owns one upstream's live SDK session (in a task of its own), its
listed tools and its health counters; :class:`~toolsift.gateway.upstream.Upstreams`
holds one per configured server and routes calls to it.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from typing_extensions import Self

from ..schema import Tool
from .errors import GatewayError
from .upstream_config import UpstreamSpec

if TYPE_CHECKING:
    from .upstream import Upstreams

__all__ = ["Upstream", "describe_error"]

log = logging.getLogger("toolsift.gateway.upstream")

_BACKOFF_FIRST = 1.0
_BACKOFF_MAX = 30.0
# How long a hung upstream gets to answer a ping before it is treated as frozen.
_PROBE_TIMEOUT = 1.0


class _WatchedStream:
    """A read stream that sets ``dead`` when the transport closes it.

    The SDK session gives no signal when its server goes away while idle; watching the
    stream it reads lets the next call restart the server instead of failing on a
    corpse.
    """

    def __init__(self, inner: Any, dead: anyio.Event) -> None:
        self._inner = inner
        self._dead = dead

    def __getattr__(self, name: str) -> Any:  # last_context and friends
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._dead.set()
            raise

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@dataclass(eq=False)
class _Connection:
    session: ClientSession
    dead: anyio.Event = field(default_factory=anyio.Event)  # transport closed
    stop: anyio.Event = field(default_factory=anyio.Event)  # we asked it to close

    @property
    def usable(self) -> bool:
        return not (self.dead.is_set() or self.stop.is_set())


class Upstream:
    """Runtime state of one upstream: its connection, tools and health."""

    def __init__(self, spec: UpstreamSpec, owner: Upstreams) -> None:
        self.spec = spec
        self.owner = owner
        self.tools: list[Tool] = []
        self.originals: dict[str, str] = {}  # namespaced name -> upstream's name
        self.listed = False
        self.conn: _Connection | None = None
        self.state = "starting"
        self.last_error: str | None = None
        self.restarts = 0
        self.calls = 0
        self.failures = 0
        self._lock = anyio.Lock()
        self._connects = 0
        self._retry_at = 0.0
        self._backoff = _BACKOFF_FIRST
        self._refreshing = False
        self._refresh_again = False

    # ------------------------------------------------------------- connection
    def _transport(self):
        spec = self.spec
        if spec.command:
            params = StdioServerParameters(command=spec.command[0], args=list(spec.command[1:]),
                                           env=dict(spec.env) or None, cwd=spec.cwd)
            return stdio_client(params, errlog=_errlog())
        import httpx2
        from mcp.shared._httpx_utils import create_mcp_http_client

        client = create_mcp_http_client(headers=dict(spec.headers) or None,
                                        timeout=httpx2.Timeout(spec.connect_timeout_s, read=None))
        return _http_transport(spec.url, client)

    async def _run(self, ready: anyio.Event, box: dict[str, Any]) -> None:
        """Own one connection from start to close; runs as a task of the upstreams group.

        SDK transports are async context managers that must be entered and left in the
        same task, so each connection lives in a task of its own and calls reach its
        session from other tasks.
        """
        conn: _Connection | None = None
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                dead = anyio.Event()
                holder: dict[str, _Connection] = {}
                session = await stack.enter_async_context(ClientSession(
                    _WatchedStream(read, dead), write,
                    message_handler=lambda m: self._on_message(holder.get("conn"), m)))
                with anyio.fail_after(self.spec.connect_timeout_s):
                    await session.initialize()
                    entries = await _list_tools(session)
                conn = holder["conn"] = _Connection(session, dead=dead)
                box.update(conn=conn, entries=entries)
                ready.set()
                await _wait_any(conn.dead, conn.stop)
        except Exception as exc:  # noqa: BLE001 - every failure becomes health state
            if not ready.is_set():
                box["error"] = exc
            elif conn is not None and not conn.stop.is_set():
                log.warning("upstream %s: connection failed: %s", self.spec.name, describe_error(exc))
                self.last_error = describe_error(exc)
        finally:
            if conn is not None:
                conn.dead.set()
                if self.conn is conn:
                    self.conn = None
                    self.state = "down"
            ready.set()

    async def connection(self) -> _Connection:
        """The live connection, (re)starting the server first if there is none.

        Raises:
            GatewayError: ``upstream_error`` if the server cannot be started.
        """
        conn = self.conn
        if conn is not None and conn.usable:
            return conn
        async with self._lock:
            conn = self.conn
            if conn is not None and conn.usable:
                return conn
            wait = self._retry_at - time.monotonic()
            if wait > 0:
                raise GatewayError("upstream_error", f"upstream {self.spec.name!r} is unavailable "
                                   f"({self.last_error}); next restart attempt in {wait:.1f}s",
                                   upstream=self.spec.name)
            return await self._connect()

    async def _connect(self) -> _Connection:
        self.state = "starting"
        ready, box = anyio.Event(), {}
        self.owner._spawn(self._run, ready, box)
        # Shielded: a caller cancelled mid-start must not orphan a connection that then
        # starts anyway. The wait is bounded by the connect timeout inside _run.
        with anyio.CancelScope(shield=True):
            await ready.wait()
        if "error" in box or "conn" not in box:
            exc = box.get("error")
            self.last_error = describe_error(exc) if exc is not None else "closed during start-up"
            self.state = "down"
            self._retry_at = time.monotonic() + self._backoff
            self._backoff = min(self._backoff * 2, _BACKOFF_MAX)
            log.warning("upstream %s: cannot start: %s", self.spec.name, self.last_error)
            raise GatewayError("upstream_error", f"upstream {self.spec.name!r} is unavailable: {self.last_error}",
                               upstream=self.spec.name)
        self._connects += 1
        if self._connects > 1:
            self.restarts += 1
        self._backoff = _BACKOFF_FIRST
        self._retry_at = 0.0
        self.conn = box["conn"]
        self.state = "ready"
        self.last_error = None
        await self.owner._set_tools(self, box["entries"])
        return self.conn

    def drop(self, conn: _Connection, reason: str) -> None:
        """Close ``conn`` (kills a stdio server); the next call starts a new one."""
        self.last_error = reason
        conn.stop.set()
        if self.conn is conn:
            self.conn = None
            self.state = "down"

    # ------------------------------------------------------------------ calls
    async def call(self, tool: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Call ``tool`` (the upstream's own name) and return the MCP result as JSON."""
        conn = await self.connection()
        name = self.spec.name
        self.calls += 1
        try:
            with anyio.fail_after(self.spec.timeout_s):
                result = await conn.session.call_tool(tool, dict(arguments or {}))
        except TimeoutError:
            self.failures += 1
            await self._probe(conn)
            raise GatewayError("upstream_timeout", f"upstream {name!r} did not answer {tool!r} within "
                               f"{self.spec.timeout_s:g}s", upstream=name, timeout_s=self.spec.timeout_s) from None
        except MCPError as exc:
            self.failures += 1
            if exc.code == types.CONNECTION_CLOSED or conn.dead.is_set():
                self.drop(conn, "connection closed during a call")
                again = "restarted" if self.spec.command else "reconnected"
                raise GatewayError("upstream_error", f"the connection to upstream {name!r} closed during "
                                   f"{tool!r} (server exited or unreachable); it is {again} on the next call",
                                   upstream=name) from None
            raise GatewayError("upstream_error", f"upstream {name!r} refused {tool!r}: {exc.message}",
                               upstream=name, upstream_code=exc.code) from None
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self.failures += 1
            self.drop(conn, describe_error(exc))
            raise GatewayError("upstream_error", f"upstream {name!r} connection failed: {describe_error(exc)}",
                               upstream=name) from None
        except Exception as exc:  # noqa: BLE001 - e.g. a result that violates its output schema
            self.failures += 1
            raise GatewayError("upstream_error", f"upstream {name!r} returned an unusable result for "
                               f"{tool!r}: {describe_error(exc)}", upstream=name) from None
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def _probe(self, conn: _Connection) -> None:
        """After a timeout: a server that cannot even answer a ping is frozen; drop it."""
        if not conn.usable:
            return
        try:
            with anyio.fail_after(min(_PROBE_TIMEOUT, self.spec.timeout_s)):
                await conn.session.send_ping()
        except Exception:  # noqa: BLE001
            log.warning("upstream %s: no answer to ping after a timeout; restarting it on the next call",
                        self.spec.name)
            self.drop(conn, "hung: no answer to ping after a call timed out")

    # ------------------------------------------------------------ list_changed
    async def _on_message(self, conn: _Connection | None, message: Any) -> None:
        message = getattr(message, "root", message)
        if isinstance(message, types.ToolListChangedNotification) and conn is not None:
            # Re-listing from inside the session's receive path would wait on itself.
            self.owner._spawn(self.refresh, conn)

    async def refresh(self, conn: _Connection) -> None:
        """Re-list the tools over ``conn`` and update the index; coalesces bursts."""
        if self._refreshing:
            self._refresh_again = True
            return
        self._refreshing = True
        try:
            while True:
                self._refresh_again = False
                try:
                    with anyio.fail_after(self.spec.connect_timeout_s):
                        entries = await _list_tools(conn.session)
                except Exception as exc:  # noqa: BLE001
                    log.warning("upstream %s: re-listing tools failed: %s", self.spec.name, describe_error(exc))
                    return
                await self.owner._set_tools(self, entries)
                if not self._refresh_again:
                    return
        finally:
            self._refreshing = False

    def status(self) -> dict[str, Any]:
        """Health of this upstream for ``/health``."""
        return {"name": self.spec.name, "transport": self.spec.transport, "state": self.state,
                "tools": len(self.tools), "restarts": self.restarts, "calls": self.calls,
                "failures": self.failures, "last_error": self.last_error}


def _errlog() -> Any:
    """Where stdio upstreams' stderr goes: ours, or the real one when ours is a
    stand-in without a file descriptor (e.g. captured by a test runner)."""
    try:
        sys.stderr.fileno()
        return sys.stderr
    except (AttributeError, OSError, ValueError):
        return sys.__stderr__


def _http_transport(url: str, client: Any):
    """The streamable HTTP client transport, closing ``client`` with it."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def cm():
        async with client, streamable_http_client(url, http_client=client) as streams:
            yield streams

    return cm()


async def _list_tools(session: ClientSession) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(1000):  # a paging server that never ends is a bug, not a catalogue
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        entries.extend(t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return entries


async def _wait_any(*events: anyio.Event) -> None:
    async with anyio.create_task_group() as tg:
        async def waiter(ev: anyio.Event) -> None:
            await ev.wait()
            tg.cancel_scope.cancel()

        for ev in events:
            tg.start_soon(waiter, ev)


def describe_error(exc: BaseException | None) -> str:
    """One line for an exception, looking inside exception groups (anyio wraps errors)."""
    while getattr(exc, "exceptions", None):  # exception groups (duck-typed for 3.10)
        exc = exc.exceptions[0]  # type: ignore[union-attr]
    if exc is None:
        return "unknown error"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
