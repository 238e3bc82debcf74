"""The client half of toolsift's seam to the official MCP SDK (``mcp`` 1.x and 2.x):
listing tools and opening streamable-HTTP connections.

A low layer on purpose: the adapters (reading a live server's tools) and the gateway
(proxying upstream servers) both use it, so neither reaches into the other. The server
half and the rest of the version-specific code live in :mod:`toolsift.gateway._mcp`,
which re-exports these names. Needs the ``gateway`` extra (the ``mcp`` package).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import mcp.types as types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared import _httpx_utils

__all__ = ["dump", "http_client", "http_transport", "list_tools_page"]

# The HTTP library the SDK's own transports are built on (httpx2 in 2.x, httpx in 1.x):
# a client handed to streamable_http_client must come from it.
_httpx: Any = getattr(_httpx_utils, "httpx2", None) or _httpx_utils.httpx  # type: ignore[attr-defined]  # 1.x


def dump(model: Any) -> dict[str, Any]:
    """A wire object as its JSON form (camelCase keys, no nulls), the same in both majors."""
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def list_tools_page(session: Any, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
    """One page of ``tools/list``: the tools as JSON and the next cursor."""
    params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
    page = dump(await session.list_tools(params=params))
    return list(page.get("tools", [])), page.get("nextCursor")


def http_client(*, headers: Mapping[str, str] | None = None, timeout_s: float = 30.0,
                read_timeout_s: float | None = None) -> Any:
    """An HTTP client for :func:`http_transport`, from the SDK's own HTTP library.

    Args:
        headers: Sent with every request.
        timeout_s: Connect, write and pool timeout.
        read_timeout_s: Read timeout; ``None`` (default) never times out reads, since a
            server may hold a stream open.
    """
    return _httpx_utils.create_mcp_http_client(headers=dict(headers or {}) or None,
                                               timeout=_httpx.Timeout(timeout_s, read=read_timeout_s))


@asynccontextmanager
async def http_transport(url: str, client: Any) -> AsyncIterator[tuple[Any, Any]]:
    """The streamable HTTP client transport's ``(read, write)`` streams; closes ``client``
    with it."""
    async with client, streamable_http_client(url, http_client=client) as streams:
        yield streams[0], streams[1]
