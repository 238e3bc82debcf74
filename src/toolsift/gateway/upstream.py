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

import logging
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import anyio.abc
from typing_extensions import Self

from ..errors import SchemaError, ToolsiftError
from ..schema import Catalog, Tool
from .errors import GatewayError
from .upstream_config import SEPARATOR, ServeConfig, UpstreamSpec, namespaced, upstream_tool
from .upstream_runtime import Upstream, describe_error

__all__ = ["SEPARATOR", "ServeConfig", "UpstreamSpec", "Upstreams", "namespaced", "upstream_tool"]

log = logging.getLogger("toolsift.gateway.upstream")


class Upstreams:
    """All upstream servers of one gateway, as an async context manager.

    Args:
        specs: The upstreams to connect to.
        local_tools: Extra tools with no upstream (e.g. a local catalogue); they are
            indexed but calling them fails with ``upstream_error``.
        index_config: Index settings for every (re)build (``None``: the default preset).
        save_index: Save the index to this directory after every (re)build (the
            ``INDEX`` of ``toolsift learn``); a failed save is logged, never fatal.
        max_result_bytes: An upstream result larger than this (plus 64 KiB for
            the envelope) is refused with ``result_too_large`` while it is read.
        max_result_items: An upstream result with more JSON values than this is
            refused the same way, before it is validated.

    Example:
        >>> async with Upstreams(config.upstreams) as ups:         # doctest: +SKIP
        ...     gateway = Gateway(ups.index, executor=ups.execute)
        ...     ups.attach(gateway)   # list_changed now updates gateway.index
    """

    def __init__(self, specs: Sequence[UpstreamSpec], *, local_tools: Sequence[Tool] = (),
                 index_config: Any = None, max_result_bytes: int = 4 * 1024 * 1024,
                 max_result_items: int = 100_000, save_index: str | os.PathLike | None = None) -> None:
        self._ups = {s.name: Upstream(s, self) for s in specs}
        self._save_index = save_index
        self._local = list(local_tools)
        self._index_config = index_config
        self._index: Any = None
        self._gateway: Any = None
        self._routes: dict[str, tuple[Upstream, str]] = {}
        self._index_lock = anyio.Lock()
        self._tg: anyio.abc.TaskGroup | None = None
        self._started = False
        self.version = 0  # bumped on every index swap
        # Limits the stdio transport enforces while reading a result; a line also holds
        # the JSON-RPC envelope, so it may be a little longer than the result itself.
        self.max_message_bytes = max_result_bytes + 64 * 1024
        self.max_result_items = max_result_items

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

    async def _first_connect(self, up: Upstream) -> None:
        try:
            async with up._lock:
                await up._connect()
        except GatewayError:
            self._spawn(self._retry_until_listed, up)

    async def _retry_until_listed(self, up: Upstream) -> None:
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
            errors = "; ".join(str(u.last_error) for u in self._ups.values())
            raise ToolsiftError(f"no tools to serve: no upstream answered ({errors or 'none configured'})")
        return self._index

    @property
    def tools(self) -> list[Tool]:
        """Every served tool, upstream ones first, in config order."""
        return [t for up in self._ups.values() for t in up.tools] + self._local

    async def _set_tools(self, up: Upstream, entries: list[dict[str, Any]]) -> None:
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
                    log.warning("incremental index update failed (%s); rebuilding", describe_error(exc))
                    index = None
            if index is None:
                try:
                    index = await anyio.to_thread.run_sync(
                        lambda: ToolIndex.build(catalog, config=self._index_config))
                except Exception as exc:  # noqa: BLE001 - runs in background tasks: never crash them
                    log.error("cannot index the upstreams' tools (%s); keeping the previous index", describe_error(exc))
                    return
            self._index = index
            self.version += 1
            if self._gateway is not None:
                # Also for the same, updated index object: the gateway re-derives its
                # name map, ETags and validators from it.
                self._gateway.index = index
            log.info("indexed %d tools (index version %d)", len(tools), self.version)
            if self._save_index is not None:
                await anyio.to_thread.run_sync(save_gateway_index, index, self._save_index)

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


def save_gateway_index(index: Any, path: str | os.PathLike) -> None:
    """Save the gateway's combined index to ``path`` (atomically); log, never raise: a
    full disk must not stop the gateway serving."""
    try:
        index.save(path)
        log.info("saved the index to %s", path)
    except Exception as exc:  # noqa: BLE001 - serving matters more than the copy
        log.error("cannot save the index to %s: %s", path, describe_error(exc))


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
