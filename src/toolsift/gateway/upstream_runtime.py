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
from typing import TYPE_CHECKING, Any, cast

import anyio
from typing_extensions import Self

from ..schema import Tool
from . import _mcp
from ._mcp import ClientSession, McpError, StdioServerParameters, types
from .errors import GatewayError, UpstreamStartError
from .stderr_tail import StderrTail, errlog as default_errlog
from .stdio_transport import RESULT_TOO_LARGE, capped_stdio_client
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
        self._start_error: UpstreamStartError | None = None

    # ------------------------------------------------------------- connection
    def _transport(self, stderr: StderrTail | None):
        spec = self.spec
        if spec.command:
            params = StdioServerParameters(command=spec.command[0], args=list(spec.command[1:]),
                                           env=dict(spec.env) or None, cwd=spec.cwd)
            errlog = stderr.writer if stderr else default_errlog()
            if sys.platform == "win32":
                return _mcp.stdio_client(params, errlog=errlog)
            # Caps the result while it is read (the SDK's transport reads it whole first).
            return capped_stdio_client(params, errlog=errlog, max_message_bytes=self.owner.max_message_bytes,
                                       max_items=self.owner.max_result_items)
        client = _mcp.http_client(headers=spec.headers, timeout_s=spec.connect_timeout_s,
                                  max_result_bytes=self.owner.max_message_bytes,
                                  max_result_items=self.owner.max_result_items)
        assert spec.url is not None  # a spec has a command or a url (GatewayConfig checks)
        return _mcp.http_transport(spec.url, client)

    async def _run(self, ready: anyio.Event, box: dict[str, Any]) -> None:
        """Own one connection from start to close; runs as a task of the upstreams group.

        SDK transports are async context managers that must be entered and left in the
        same task, so each connection lives in a task of its own and calls reach its
        session from other tasks.
        """
        conn: _Connection | None = None
        stderr = StderrTail(default_errlog()) if self.spec.command else None
        try:
            async with AsyncExitStack() as stack:
                try:
                    read, write = await stack.enter_async_context(self._transport(stderr))
                finally:
                    # The child holds its own copy now: its exit closes the pipe.
                    if stderr is not None:
                        stderr.close_writer()
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
                box["error"] = await self._start_failure(exc, stderr)
            elif conn is not None and not conn.stop.is_set():
                log.warning("upstream %s: connection failed: %s", self.spec.name, describe_error(exc))
                self.last_error = describe_error(exc)
        finally:
            if stderr is not None:
                stderr.close_writer()
            if conn is not None:
                conn.dead.set()
                if self.conn is conn:
                    self.conn = None
                    self.state = "down"
            ready.set()

    async def _start_failure(self, exc: BaseException, stderr: StderrTail | None) -> UpstreamStartError:
        """Why the upstream did not start, in one line: the server's own last words on
        stderr when it exited (a traceback's last line), not the SDK's "Connection
        closed"."""
        spec, name = self.spec, self.spec.name
        leaf = _leaf(exc)
        if spec.command and stderr is not None:
            if isinstance(leaf, OSError) and not stderr.lines():
                return UpstreamStartError(name, f"cannot start upstream {name!r} (command {list(spec.command)}): "
                                          f"{describe_error(leaf)}")
            if isinstance(leaf, TimeoutError):
                tail = stderr.lines()
                said = f"; its last stderr line: {tail[-1].strip()}" if tail else ""
                return UpstreamStartError(name, f"upstream {name!r} did not finish the MCP handshake within "
                                          f"{spec.connect_timeout_s:g}s{said}", stderr_tail=tail)
            exited = await stderr.ended(timeout=2.0)
            tail = stderr.lines()
            if exited:
                why = tail[-1].strip() if tail else \
                    "it printed nothing on stderr; check that the command runs an MCP server over stdio"
                return UpstreamStartError(name, f"upstream {name!r} exited during start-up: {why}",
                                          stderr_tail=tail)
            return UpstreamStartError(name, f"upstream {name!r} failed during start-up: {describe_error(leaf)}",
                                      stderr_tail=tail)
        if isinstance(leaf, TimeoutError):
            return UpstreamStartError(name, f"upstream {name!r} at {spec.url} did not finish the MCP handshake "
                                      f"within {spec.connect_timeout_s:g}s")
        return UpstreamStartError(name, f"cannot connect to upstream {name!r} at {spec.url}: {describe_error(leaf)}")

    async def connection(self) -> _Connection:
        """The live connection, (re)starting the server first if there is none.

        Raises:
            UpstreamStartError: The server cannot be started (or is in its restart
                back-off after failing to); the message names the cause.
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
                tail = self._start_error.stderr_tail if self._start_error is not None else ()
                raise UpstreamStartError(self.spec.name, f"upstream {self.spec.name!r} is unavailable "
                                         f"({self.last_error}); next restart attempt in {wait:.1f}s",
                                         stderr_tail=tail)
            return await self._connect()

    async def _connect(self) -> _Connection:
        self.state = "starting"
        ready, box = anyio.Event(), cast("dict[str, Any]", {})
        self.owner._spawn(self._run, ready, box)
        # Shielded: a caller cancelled mid-start must not orphan a connection that then
        # starts anyway. The wait is bounded by the connect timeout inside _run.
        with anyio.CancelScope(shield=True):
            await ready.wait()
        if "error" in box or "conn" not in box:
            err = box.get("error") or UpstreamStartError(self.spec.name, f"upstream {self.spec.name!r} "
                                                         "closed during start-up")
            self.last_error = err.message
            self._start_error = err
            self.state = "down"
            self._retry_at = time.monotonic() + self._backoff
            self._backoff = min(self._backoff * 2, _BACKOFF_MAX)
            log.warning("%s", err.message)
            if err.stderr_tail:
                log.info("upstream %s stderr (last %d lines):\n%s", self.spec.name, len(err.stderr_tail),
                         "\n".join(err.stderr_tail))
            raise err
        self._connects += 1
        if self._connects > 1:
            self.restarts += 1
        self._backoff = _BACKOFF_FIRST
        self._retry_at = 0.0
        self._start_error = None
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
                result = await _unless_dead(conn, lambda: conn.session.call_tool(tool, dict(arguments or {})))
        except _ConnectionLost:
            self.failures += 1
            self.drop(conn, "connection closed during a call")
            again = "restarted" if self.spec.command else "reconnected"
            raise GatewayError("upstream_error", f"the connection to upstream {name!r} closed during "
                               f"{tool!r} (server exited or unreachable); it is {again} on the next call",
                               upstream=name) from None
        except TimeoutError:
            self.failures += 1
            await self._probe(conn)
            raise GatewayError("upstream_timeout", f"upstream {name!r} did not answer {tool!r} within "
                               f"{self.spec.timeout_s:g}s", upstream=name, timeout_s=self.spec.timeout_s) from None
        except McpError as exc:
            data = _mcp.error_data(exc)
            if isinstance(data, dict) and data.get("toolsift") == RESULT_TOO_LARGE:
                # Refused by our transport while reading: the upstream is fine.
                details = {k: v for k, v in data.items() if k in ("bytes", "limit_bytes", "limit_items")}
                raise GatewayError("result_too_large", f"upstream {name!r} returned a result too large for "
                                   f"{tool!r} ({_mcp.error_message(exc).removeprefix('result refused by the gateway: ')}"
                                   "); ask for less", upstream=name, **details) from None
            self.failures += 1
            if _mcp.error_code(exc) == types.CONNECTION_CLOSED or conn.dead.is_set():
                self.drop(conn, "connection closed during a call")
                again = "restarted" if self.spec.command else "reconnected"
                raise GatewayError("upstream_error", f"the connection to upstream {name!r} closed during "
                                   f"{tool!r} (server exited or unreachable); it is {again} on the next call",
                                   upstream=name) from None
            raise GatewayError("upstream_error", f"upstream {name!r} refused {tool!r}: {_mcp.error_message(exc)}",
                               upstream=name, upstream_code=_mcp.error_code(exc)) from None
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self.failures += 1
            self.drop(conn, describe_error(exc))
            raise GatewayError("upstream_error", f"upstream {name!r} connection failed: {describe_error(exc)}",
                               upstream=name) from None
        except Exception as exc:  # noqa: BLE001 - e.g. a result that violates its output schema
            self.failures += 1
            raise GatewayError("upstream_error", f"upstream {name!r} returned an unusable result for "
                               f"{tool!r}: {describe_error(exc)}", upstream=name) from None
        return _mcp.dump(result)

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
        if _mcp.is_tool_list_changed(message) and conn is not None:
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


def _leaf(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (anyio wraps errors), else ``exc``."""
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


async def _list_tools(session: ClientSession) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(1000):  # a paging server that never ends is a bug, not a catalogue
        tools, cursor = await _mcp.list_tools_page(session, cursor)
        entries.extend(tools)
        if not cursor:
            break
    return entries


class _ConnectionLost(Exception):
    """The transport of a connection closed while a request on it was pending."""


async def _unless_dead(conn: _Connection, request: Any) -> Any:
    """Await ``request()`` (a request on ``conn``'s session), or raise
    :class:`_ConnectionLost` as soon as the connection's transport closes.

    mcp 1.x's streamable HTTP client ends its transport when a POST fails (server gone)
    but leaves the pending request waiting for an answer that never comes; without this
    the call would only end at its timeout.
    """
    box: dict[str, Any] = {}
    async with anyio.create_task_group() as tg:
        async def run() -> None:
            try:
                box["value"] = await request()
            except Exception as exc:  # noqa: BLE001 - re-raised below, unwrapped from the group
                box["error"] = exc
            tg.cancel_scope.cancel()

        async def watch() -> None:
            await conn.dead.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(run)
        tg.start_soon(watch)
    if "error" in box:
        raise box["error"]
    if "value" not in box:
        raise _ConnectionLost
    return box["value"]


async def _wait_any(*events: anyio.Event) -> None:
    async with anyio.create_task_group() as tg:
        async def waiter(ev: anyio.Event) -> None:
            await ev.wait()
            tg.cancel_scope.cancel()

        for ev in events:
            tg.start_soon(waiter, ev)


def describe_error(exc: BaseException | None) -> str:
    """One line for an exception, looking inside exception groups (anyio wraps errors)."""
    if exc is None:
        return "unknown error"
    exc = _leaf(exc)  # exception groups (duck-typed for 3.10)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
