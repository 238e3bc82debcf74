"""Tools read from a running MCP server through the official ``mcp`` SDK.

The server is started as a subprocess and spoken to over stdio, or reached over
streamable HTTP; ``tools/list`` is paged through (``nextCursor``) and each tool is
converted with :func:`toolsift.adapters.mcp.mcp_tool`, so a live server and a saved
``tools/list`` result give identical tools.
"""

from __future__ import annotations

import builtins
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from ..errors import CatalogFormatError, ToolsiftError
from ..schema import Tool
from .mcp import from_mcp

__all__ = ["from_mcp_server", "load_mcp_server"]

# BaseExceptionGroup is a builtin from Python 3.11; on 3.10 anyio does not group.
_GROUP: Any = getattr(builtins, "BaseExceptionGroup", ())
# A server whose cursor never ends is broken; stop rather than loop forever.
_MAX_PAGES = 1000


async def _list_tools(session: Any) -> list[dict[str, Any]]:
    from ..mcp_client import list_tools_page  # works with mcp 1.x and 2.x

    entries: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        tools, cursor = await list_tools_page(session, cursor)
        entries.extend(tools)
        if not cursor:
            return entries
    raise CatalogFormatError(f"mcp server: tools/list did not end after {_MAX_PAGES} pages")


async def _from_stdio(command: Sequence[str], env: Mapping[str, str] | None,
                      errlog: TextIO) -> list[dict[str, Any]]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command[0], args=list(command[1:]),
                                   env=dict(env) if env is not None else None)
    async with stdio_client(params, errlog=errlog) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        return await _list_tools(session)


async def _from_http(url: str, headers: Mapping[str, str] | None, timeout: float) -> list[dict[str, Any]]:
    from mcp import ClientSession

    from ..mcp_client import http_client, http_transport  # works with mcp 1.x and 2.x

    client = http_client(headers=headers, timeout_s=timeout, read_timeout_s=timeout)
    async with http_transport(url, client) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        return await _list_tools(session)


def _describe(command: Sequence[str] | None, url: str | None) -> str:
    return f"mcp server {url!r}" if url else f"mcp server {shlex.join(command or [])[:200]!r}"


async def from_mcp_server(
    command: str | Sequence[str] | None = None,
    *,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 20,
    errlog: TextIO | None = None,
) -> list[Tool]:
    """Tools listed by a live MCP server.

    Args:
        command: Server command for stdio, as an argument list or a shell-style string
            (split with :func:`shlex.split`, never run through a shell).
        url: Streamable-HTTP endpoint (e.g. ``"http://127.0.0.1:8000/mcp"``); give
            either ``command`` or ``url``.
        env: Environment for the subprocess, added to the SDK's safe default set.
        headers: HTTP headers (e.g. ``Authorization``) for ``url``.
        timeout: Seconds allowed for connecting and listing all pages.
        errlog: Where the subprocess's stderr goes; defaults to ``sys.stderr``.

    Returns:
        One tool per listed tool, in server order.

    Raises:
        CatalogFormatError: If the server cannot be started or reached, fails, or does
            not answer within ``timeout``; the message names the server.
        SchemaError: If a listed tool is malformed (``"tools[3] (name='x')..."``).
    """
    import anyio

    if (command is None) == (url is None):
        raise CatalogFormatError("mcp server: give exactly one of command= or url=")
    argv = shlex.split(command) if isinstance(command, str) else list(command or [])
    if command is not None and not argv:
        raise CatalogFormatError("mcp server: empty command")
    label = _describe(argv, url)
    try:
        with anyio.fail_after(timeout):
            if url is not None:
                entries = await _from_http(url, headers, timeout)
            else:
                entries = await _from_stdio(argv, env, errlog or sys.stderr)
    except TimeoutError:
        raise CatalogFormatError(f"{label}: no complete tools/list within {timeout:g} s") from None
    except ToolsiftError:
        raise
    except Exception as exc:  # noqa: BLE001 - transport, process and protocol failures alike
        raise CatalogFormatError(f"{label}: {_reason(exc)}") from None
    return from_mcp({"tools": entries})


def _reason(exc: BaseException) -> str:
    # anyio task groups wrap the real failure in an ExceptionGroup.
    while isinstance(exc, _GROUP) and exc.exceptions:  # type: ignore[attr-defined]
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"[:300]


def load_mcp_server(
    command: str | Sequence[str] | None = None,
    *,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 20,
    errlog: TextIO | None = None,
) -> list[Tool]:
    """Synchronous :func:`from_mcp_server`, for scripts and the CLI.

    Must not be called from inside a running event loop; ``await from_mcp_server``
    there instead.

    Raises:
        CatalogFormatError: See :func:`from_mcp_server`, or when called inside an event
            loop.
        SchemaError: See :func:`from_mcp_server`.
    """
    import asyncio

    import anyio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise CatalogFormatError("load_mcp_server: called inside an event loop; await from_mcp_server")
    return anyio.run(lambda: from_mcp_server(command, url=url, env=env, headers=headers,
                                             timeout=timeout, errlog=errlog))
