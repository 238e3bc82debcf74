"""Upstream MCP servers behind the gateway: connect, list, namespace, index and proxy.

A serve config (JSON) lists the upstreams::

    {"upstreams": [
        {"name": "weather", "command": ["python", "srv.py"], "env": {}, "timeout_s": 10},
        {"name": "crm", "url": "http://127.0.0.1:8765/mcp", "headers": {"X-Api-Key": "..."}}
     ],
     "gateway": {...GatewayConfig...},
     "auth_token": "..." | null,
     "max_request_bytes": 1048576}

:class:`Upstreams` connects to each (stdio via the SDK's stdio client, URLs via its
streamable HTTP client), lists their tools, turns each into a :class:`Tool` named
``<upstream>__<tool>`` (so two servers' ``search`` tools both survive) and tagged
``server:<upstream>``, builds the :class:`ToolIndex` and provides the gateway executor.

Failure behaviour (the gateway itself always keeps serving):

* a call that outlives the upstream's ``timeout_s`` fails with ``upstream_timeout``; the
  upstream is then pinged, and one that does not answer (a frozen process) is dropped;
* a call during which the upstream dies (process exit, HTTP server gone) fails with
  ``upstream_error``;
* a dropped or dead upstream is restarted (stdio) or reconnected (HTTP) on the next call
  of one of its tools; its tools stay in the index meanwhile. A failed restart is not
  retried for a growing back-off (1 s doubling to 30 s); calls inside that window fail
  fast with ``upstream_error``;
* an upstream unreachable at start-up is retried in the background with the same
  back-off, and its tools are indexed once it answers;
* ``notifications/tools/list_changed`` from an upstream re-lists it and updates the index.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from typing_extensions import Self

from ..errors import ConfigError, SchemaError, ToolsiftError
from ..schema import Catalog, Tool
from .config import GatewayConfig
from .errors import GatewayError

__all__ = ["SEPARATOR", "ServeConfig", "UpstreamSpec", "Upstreams", "namespaced", "upstream_tool"]

log = logging.getLogger("toolsift.gateway.upstream")

#: Between upstream name and tool name in a namespaced tool name.
SEPARATOR = "__"
# Upstream names may not contain the separator, so the first "__" in a namespaced
# name always ends the upstream part.
_UPSTREAM_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*$")
_BACKOFF_FIRST = 1.0
_BACKOFF_MAX = 30.0
# How long a hung upstream gets to answer a ping before it is treated as frozen.
_PROBE_TIMEOUT = 1.0


def namespaced(upstream: str, tool: str) -> str:
    """The gateway-wide name of ``tool`` served by ``upstream``."""
    return f"{upstream}{SEPARATOR}{tool}"


def _number(value: Any, key: str, default: float) -> float:
    if value is None:
        return default
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{key} must be a number > 0, got {value!r}")
    return float(value)


def _str_map(value: Any, key: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ConfigError(f"{key} must be an object of string values")
    return dict(value)


@dataclass(frozen=True)
class UpstreamSpec:
    """One upstream MCP server.

    Attributes:
        name: Namespace of its tools; letters, digits, ``-`` and single ``_``.
        command: Command line of a stdio server (``command`` or ``url``, not both).
        url: Streamable HTTP endpoint of a remote server.
        env: Extra environment for a stdio server, over the SDK's safe default subset
            (``HOME``, ``PATH``, ...); the gateway's own environment is not inherited.
        headers: HTTP headers sent to a URL upstream (e.g. its API key).
        cwd: Working directory of a stdio server (default: the config file's folder).
        timeout_s: Seconds one tool call may take.
        connect_timeout_s: Seconds to start, initialise and list a server.
    """

    name: str
    command: tuple[str, ...] = ()
    url: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout_s: float = 30.0
    connect_timeout_s: float = 20.0

    def __post_init__(self) -> None:
        where = f"upstreams[{self.name!r}]"
        if not isinstance(self.name, str) or not _UPSTREAM_NAME.match(self.name):
            raise ConfigError(f"upstream name {self.name!r} must be letters, digits, '-' and single '_' "
                              f"(no '{SEPARATOR}': it separates upstream and tool names)")
        if bool(self.command) == bool(self.url):
            raise ConfigError(f"{where}: give exactly one of 'command' (stdio) or 'url' (streamable HTTP)")
        if self.command and not all(isinstance(c, str) and c for c in self.command):
            raise ConfigError(f"{where}.command must be a non-empty list of strings")
        if self.url is not None and not re.match(r"^https?://", self.url):
            raise ConfigError(f"{where}.url must be an http(s) URL, got {self.url!r}")

    @property
    def transport(self) -> str:
        """``"stdio"`` or ``"http"``."""
        return "stdio" if self.command else "http"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, where: str = "upstreams[?]",
                  base_dir: Path | None = None) -> UpstreamSpec:
        """Build from one ``upstreams`` entry; errors name ``where``."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"{where} must be an object, got {type(d).__name__}")
        known = {"name", "command", "url", "env", "headers", "cwd", "timeout_s", "connect_timeout_s"}
        unknown = set(d) - known
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        command = d.get("command") or ()
        if isinstance(command, str) or not isinstance(command, Sequence):
            raise ConfigError(f"{where}.command must be a list of strings, e.g. [\"python\", \"server.py\"]")
        cwd = d.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ConfigError(f"{where}.cwd must be a string")
        if base_dir is not None and command:
            cwd = str((base_dir / cwd) if cwd else base_dir)
        try:
            return cls(
                name=d.get("name"),  # type: ignore[arg-type]
                command=tuple(command),
                url=d.get("url"),
                env=_str_map(d.get("env"), f"{where}.env"),
                headers=_str_map(d.get("headers"), f"{where}.headers"),
                cwd=cwd,
                timeout_s=_number(d.get("timeout_s"), f"{where}.timeout_s", 30.0),
                connect_timeout_s=_number(d.get("connect_timeout_s"), f"{where}.connect_timeout_s", 20.0),
            )
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None


@dataclass(frozen=True)
class ServeConfig:
    """Everything ``toolsift serve --config`` reads.

    Attributes:
        upstreams: The upstream servers; names must be unique.
        gateway: Retrieval settings (format, limits, routing, risk tags).
        auth_token: Bearer token required on HTTP requests; ``None`` means no auth.
            ``"auth_token_env": "VAR"`` in the file reads it from an environment variable.
        max_request_bytes: Largest HTTP request body accepted (413 above).
    """

    upstreams: tuple[UpstreamSpec, ...] = ()
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
    auth_token: str | None = None
    max_request_bytes: int = 1_048_576

    def __post_init__(self) -> None:
        names = [u.name for u in self.upstreams]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ConfigError(f"duplicate upstream name(s): {', '.join(dup)}")
        if self.auth_token is not None and (not isinstance(self.auth_token, str) or not self.auth_token.strip()):
            raise ConfigError("auth_token must be a non-empty string or null")
        if not isinstance(self.max_request_bytes, int) or isinstance(self.max_request_bytes, bool) \
                or self.max_request_bytes < 1024:
            raise ConfigError(f"max_request_bytes must be an integer >= 1024, got {self.max_request_bytes!r}")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, base_dir: Path | None = None) -> ServeConfig:
        """Build from the parsed config file; relative stdio paths resolve from ``base_dir``."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"serve config must be a JSON object, got {type(d).__name__}")
        unknown = set(d) - {"upstreams", "gateway", "auth_token", "auth_token_env", "max_request_bytes"}
        if unknown:
            raise ConfigError(f"serve config: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        ups = d.get("upstreams") or []
        if isinstance(ups, (str, Mapping)) or not isinstance(ups, Sequence):
            raise ConfigError("upstreams must be a list of objects")
        token = d.get("auth_token")
        if d.get("auth_token_env"):
            token = os.environ.get(str(d["auth_token_env"]))
            if not token:
                raise ConfigError(f"auth_token_env: environment variable {d['auth_token_env']!r} is not set")
        return cls(
            upstreams=tuple(UpstreamSpec.from_dict(u, where=f"upstreams[{i}]", base_dir=base_dir)
                            for i, u in enumerate(ups)),
            gateway=GatewayConfig.from_dict(d.get("gateway") or {}),
            auth_token=token,
            max_request_bytes=d.get("max_request_bytes", 1_048_576),
        )

    @classmethod
    def load(cls, path: str | Path) -> ServeConfig:
        """Read a config file (JSON)."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read serve config {path}: {exc.strerror or exc}") from None
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path} is not valid JSON: {exc}") from None
        return cls.from_dict(data, base_dir=path.resolve().parent)


def upstream_tool(upstream: str, entry: Mapping[str, Any]) -> Tool:
    """An MCP ``tools/list`` entry of ``upstream`` as a namespaced, tagged :class:`Tool`.

    The original entry stays in ``source`` (schemas are returned as the upstream wrote
    them); only the name the LLM calls changes.
    """
    from ..adapters.mcp import mcp_tool

    tool = mcp_tool(entry)
    name = namespaced(upstream, tool.name)
    tag = f"server:{upstream}"
    tags = tool.tags if tag in tool.tags else (*tool.tags, tag)
    return replace(tool, id=name, name=name, tags=tags)


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


class _Upstream:
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
                log.warning("upstream %s: connection failed: %s", self.spec.name, _describe(exc))
                self.last_error = _describe(exc)
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
            self.last_error = _describe(exc) if exc is not None else "closed during start-up"
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
            self.drop(conn, _describe(exc))
            raise GatewayError("upstream_error", f"upstream {name!r} connection failed: {_describe(exc)}",
                               upstream=name) from None
        except Exception as exc:  # noqa: BLE001 - e.g. a result that violates its output schema
            self.failures += 1
            raise GatewayError("upstream_error", f"upstream {name!r} returned an unusable result for "
                               f"{tool!r}: {_describe(exc)}", upstream=name) from None
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
                    log.warning("upstream %s: re-listing tools failed: %s", self.spec.name, _describe(exc))
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


class Upstreams:
    """All upstream servers of one gateway, as an async context manager.

    Args:
        specs: The upstreams to connect to.
        local_tools: Extra tools with no upstream (e.g. a local catalogue); they are
            indexed but calling them fails with ``upstream_error``.
        index_config: Index settings for every (re)build.

    Example:
        >>> async with Upstreams(config.upstreams) as ups:         # doctest: +SKIP
        ...     gateway = Gateway(ups.index, executor=ups.execute)
        ...     ups.attach(gateway)   # list_changed now updates gateway.index
    """

    def __init__(self, specs: Sequence[UpstreamSpec], *, local_tools: Sequence[Tool] = (),
                 index_config: Any = None) -> None:
        self._ups = {s.name: _Upstream(s, self) for s in specs}
        self._local = list(local_tools)
        self._index_config = index_config
        self._index: Any = None
        self._gateway: Any = None
        self._routes: dict[str, tuple[_Upstream, str]] = {}
        self._index_lock = anyio.Lock()
        self._tg: anyio.abc.TaskGroup | None = None
        self._started = False
        self.version = 0  # bumped on every index swap

    # -------------------------------------------------------------- lifecycle
    async def __aenter__(self) -> Self:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        try:
            async with anyio.create_task_group() as tg:
                for up in self._ups.values():
                    tg.start_soon(self._first_connect, up)
            self._started = True
            await self._reindex()
        except BaseException:
            await self._close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._close()

    async def _close(self) -> None:
        tg, self._tg = self._tg, None
        if tg is None:
            return
        for up in self._ups.values():
            if up.conn is not None:
                up.conn.stop.set()
        # stdio shutdown is bounded by the SDK (close stdin, SIGTERM, SIGKILL); give it
        # that long, then cancel whatever is left.
        with anyio.move_on_after(6, shield=True):
            while any(up.conn is not None for up in self._ups.values()):
                await anyio.sleep(0.02)
        tg.cancel_scope.cancel()
        await tg.__aexit__(None, None, None)

    def _spawn(self, fn: Any, *args: Any) -> None:
        if self._tg is None:
            raise GatewayError("upstream_error", "the gateway is shutting down")
        self._tg.start_soon(fn, *args)

    async def _first_connect(self, up: _Upstream) -> None:
        try:
            async with up._lock:
                await up._connect()
        except GatewayError:
            self._spawn(self._retry_until_listed, up)

    async def _retry_until_listed(self, up: _Upstream) -> None:
        """Keep trying an upstream that never answered, so its tools become findable."""
        while not up.listed:
            await anyio.sleep(max(0.05, up._retry_at - time.monotonic()))
            if up.listed or (up.conn is not None and up.conn.usable):
                return
            try:
                await up.connection()
            except GatewayError:
                pass

    def attach(self, gateway: Any) -> None:
        """Swap ``gateway.index`` whenever the upstreams' tools change."""
        self._gateway = gateway
        if self._index is not None and gateway.index is not self._index:
            gateway.index = self._index

    # ------------------------------------------------------------------ tools
    @property
    def index(self) -> Any:
        """The current :class:`ToolIndex` over every upstream's tools (and local ones).

        Raises:
            ToolsiftError: If no upstream answered and there are no local tools.
        """
        if self._index is None:
            errors = "; ".join(f"{u.spec.name}: {u.last_error}" for u in self._ups.values())
            raise ToolsiftError(f"no tools to serve: no upstream answered ({errors or 'none configured'})")
        return self._index

    @property
    def tools(self) -> list[Tool]:
        """Every served tool, upstream ones first, in config order."""
        return [t for up in self._ups.values() for t in up.tools] + self._local

    async def _set_tools(self, up: _Upstream, entries: list[dict[str, Any]]) -> None:
        tools, originals = [], {}
        for i, entry in enumerate(entries):
            try:
                tool = upstream_tool(up.spec.name, entry)
            except SchemaError as exc:
                log.warning("upstream %s: skipping tools[%d] (%r): %s", up.spec.name, i, entry.get("name"), exc)
                continue
            if tool.name in originals:
                log.warning("upstream %s: duplicate tool %r skipped", up.spec.name, entry.get("name"))
                continue
            tools.append(tool)
            originals[tool.name] = entry["name"]
        up.listed = True
        if [t.to_dict() for t in tools] == [t.to_dict() for t in up.tools]:
            return
        up.tools, up.originals = tools, originals
        if self._started:
            await self._reindex()

    async def _reindex(self) -> None:
        from ..toolindex import ToolIndex

        async with self._index_lock:
            tools = self.tools
            self._routes = {name: (up, orig) for up in self._ups.values() for name, orig in up.originals.items()}
            if not tools:
                # An index cannot be empty; keep serving the previous one (its calls fail
                # with upstream_error) rather than nothing.
                if self._index is not None:
                    log.warning("no tools left to index; keeping the previous index")
                return
            try:
                catalog = Catalog(tools, name="gateway")
            except SchemaError as exc:  # a local tool clashing with a namespaced name
                log.error("cannot index the upstreams' tools: %s", exc)
                return
            index = self._index
            if index is not None:
                try:
                    # Incremental: only the changed upstream's tools are re-analysed, and
                    # searches keep running on other threads meanwhile.
                    await anyio.to_thread.run_sync(_apply_diff, index, tools)
                except Exception as exc:  # noqa: BLE001 - a fresh build is always correct
                    log.warning("incremental index update failed (%s); rebuilding", _describe(exc))
                    index = None
            if index is None:
                try:
                    index = await anyio.to_thread.run_sync(
                        lambda: ToolIndex.build(catalog, config=self._index_config))
                except Exception as exc:  # noqa: BLE001 - runs in background tasks: never crash them
                    log.error("cannot index the upstreams' tools (%s); keeping the previous index", _describe(exc))
                    return
            self._index = index
            self.version += 1
            if self._gateway is not None:
                # Also for the same, updated index object: the gateway re-derives its
                # name map, ETags and validators from it.
                self._gateway.index = index
            log.info("indexed %d tools (index version %d)", len(tools), self.version)

    # -------------------------------------------------------------- executor
    async def execute(self, tool: Tool, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The gateway executor: run ``tool`` on its upstream.

        Returns:
            The upstream's MCP ``CallToolResult`` as JSON (``content``,
            ``structuredContent``, ``isError``).

        Raises:
            GatewayError: ``upstream_error`` / ``upstream_timeout``.
        """
        route = self._routes.get(tool.id)
        if route is None:
            raise GatewayError("upstream_error", f"tool {tool.name!r} has no upstream (it comes from the local "
                               "catalogue) and no executor is configured for it", tool=tool.name)
        up, original = route
        return await up.call(original, arguments)

    def status(self) -> list[dict[str, Any]]:
        """Per-upstream health: state, tool count, restarts, calls, last error."""
        return [up.status() for up in self._ups.values()]


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


def _apply_diff(index: Any, tools: Sequence[Tool]) -> None:
    """Bring ``index`` to exactly ``tools`` with add/replace/remove (no full rebuild)."""
    old = {t.id: t for t in index.catalog}
    new = {t.id: t for t in tools}
    replaced = [t for i, t in new.items() if i in old and old[i].to_dict() != t.to_dict()]
    added = [t for i, t in new.items() if i not in old]
    removed = [i for i in old if i not in new]
    if replaced:
        index.replace_tools(replaced)
    if added:
        index.add_tools(added)
    if removed:  # last, so the catalogue never passes through empty
        index.remove_tools(removed)


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


def _describe(exc: BaseException | None) -> str:
    """One line for an exception, looking inside exception groups (anyio wraps errors)."""
    while getattr(exc, "exceptions", None):  # exception groups (duck-typed for 3.10)
        exc = exc.exceptions[0]  # type: ignore[union-attr]
    if exc is None:
        return "unknown error"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
