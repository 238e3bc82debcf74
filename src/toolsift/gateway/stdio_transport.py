"""A stdio client transport for upstream servers that caps messages while reading them.

The SDK's own ``stdio_client`` gathers a whole line before parsing it, and gathers it
by re-joining the text read so far on every chunk: a 50 MB result took 20-28 s of CPU
just to be read (then to be validated), and ended as an ``upstream_timeout`` instead
of ``result_too_large``. This transport reads the server's stdout as bytes:

* a line that grows past ``max_message_bytes`` is not kept: the rest of it is
  counted and discarded as it streams in, and the request it answers (its top-level
  ``"id"``, read from the line's start or end) gets a JSON-RPC error that
  :class:`~toolsift.gateway.upstream_runtime.Upstream` turns into ``result_too_large``
  (with the size actually sent). An oversized notification is dropped; an oversized
  line without a readable id closes the connection (the server is restarted on the
  next call);
* a result with more than ``max_items`` JSON values (array elements and object
  members, counted only for lines long enough to hold that many) is refused the same
  way, before the SDK validates it item by item.

Process handling follows the MCP shutdown sequence, as the SDK does: close stdin, wait,
SIGTERM to the server's process group, wait, SIGKILL. POSIX only; on Windows the
gateway uses the SDK's transport (without these caps).
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import anyio.abc

from . import _mcp
from .result_size import RESULT_TOO_LARGE, count_items

__all__ = ["RESULT_TOO_LARGE", "capped_stdio_client", "count_items", "top_level_id", "trailing_id"]

log = logging.getLogger("toolsift.gateway.upstream")

#: ``error.data["toolsift"]`` of the JSON-RPC error standing in for a refused result.
_ERROR_CODE = -32603  # JSON-RPC "internal error": the answer exists but is not delivered
_PREFIX_BYTES = 4096  # where a response's top-level "id" is looked for (or at its end)
_TAIL_BYTES = 256
_EXIT_WAIT_S = 2.0


def top_level_id(prefix: bytes) -> tuple[bool, Any, bool]:
    """``(found, id, has_method)`` from the start of a JSON-RPC message.

    Scans the object's top level only (a nested ``"id"`` inside a result is skipped), up
    to the first ``"id": value`` whose value is a number or a string.
    """
    text = prefix.decode("utf-8", "replace")
    depth, i, n = 0, 0, len(text)
    has_method = False
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                return False, None, has_method
            key = text[i + 1:j]
            k = j + 1
            while k < n and text[k] in " \t\r\n":
                k += 1
            if depth == 1 and k < n and text[k] == ":":
                if key == "method":
                    has_method = True
                if key == "id":
                    decoder = json.JSONDecoder()
                    k += 1
                    while k < n and text[k] in " \t\r\n":
                        k += 1
                    try:
                        value, _ = decoder.raw_decode(text, k)
                    except ValueError:
                        return False, None, has_method
                    if isinstance(value, (int, str)) and not isinstance(value, bool):
                        return True, value, has_method
                    return False, None, has_method
            i = j + 1
            continue
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
        i += 1
    return False, None, has_method


_TRAILING_ID = re.compile(rb',\s*"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*}\s*$')


def trailing_id(tail: bytes) -> tuple[bool, Any]:
    """``(found, id)`` when a message ends with its ``"id"`` member: the line's last
    ``}`` closes the top-level object, so the member just before it is top-level."""
    m = _TRAILING_ID.search(tail)
    if m is None:
        return False, None
    try:
        return True, json.loads(m.group(1))
    except ValueError:
        return False, None


def _refusal(msg_id: Any, what: str, **details: Any) -> Any:
    return _mcp.session_message({"jsonrpc": "2.0", "id": msg_id, "error": {
        "code": _ERROR_CODE, "message": f"result refused by the gateway: {what}",
        "data": {"toolsift": RESULT_TOO_LARGE, **details}}})


class _LineReader:
    """Splits stdout bytes into messages, never holding more than the cap of one line."""

    def __init__(self, max_bytes: int, max_items: int) -> None:
        self.max_bytes = max_bytes
        self.max_items = max_items
        self.buf = bytearray()
        self.skipped: int | None = None  # bytes of an oversized line seen so far
        self.prefix = b""
        self.tail = b""

    def feed(self, chunk: bytes) -> list[Any]:
        """Messages completed by ``chunk``; raises ``_Unattributable`` when an oversized
        line names no request."""
        out: list[Any] = []
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            piece = chunk[start:] if nl < 0 else chunk[start:nl]
            if self.skipped is not None:
                self.skipped += len(piece)
                self.tail = (self.tail + piece)[-_TAIL_BYTES:]
            else:
                self.buf += piece
                if len(self.buf) > self.max_bytes:
                    self.prefix = bytes(self.buf[:_PREFIX_BYTES])
                    self.tail = bytes(self.buf[-_TAIL_BYTES:])
                    self.skipped = len(self.buf)
                    self.buf = bytearray()
            if nl < 0:
                return out
            message = self._line_end()
            if message is not None:
                out.append(message)
            start = nl + 1

    def _line_end(self) -> Any:
        if self.skipped is not None:
            size, prefix, tail = self.skipped, self.prefix, self.tail
            self.skipped, self.prefix, self.tail = None, b"", b""
            found, msg_id, has_method = top_level_id(prefix)
            if not found:
                found, msg_id = trailing_id(tail)
            if found:
                log.warning("upstream message of %d bytes refused (limit %d)", size, self.max_bytes)
                return _refusal(msg_id, f"{size} bytes, over the {self.max_bytes}-byte limit", bytes=size,
                                limit_bytes=self.max_bytes)
            if has_method:
                log.warning("dropping an upstream notification of %d bytes (limit %d)", size, self.max_bytes)
                return None
            raise _Unattributable(f"an upstream message of {size} bytes (over the {self.max_bytes}-byte limit) "
                                  "names no request")
        line, self.buf = bytes(self.buf), bytearray()
        if not line.strip():
            return None
        if len(line) > self.max_items:  # shorter lines cannot hold that many values
            try:
                data = json.loads(line)
            except ValueError as exc:
                return exc
            result = data.get("result") if isinstance(data, dict) else None
            if result is not None and count_items(result, self.max_items) > self.max_items:
                log.warning("upstream result with over %d items refused", self.max_items)
                return _refusal(data.get("id"), f"more than {self.max_items} items", limit_items=self.max_items)
        try:
            return _mcp.parse_message(line)
        except ValueError as exc:
            log.warning("unparsable message from upstream: %s", exc)
            return exc


class _Unattributable(Exception):
    """An oversized line that cannot be matched to a request."""


@asynccontextmanager
async def capped_stdio_client(params: Any, *, errlog: Any, max_message_bytes: int,
                              max_items: int) -> AsyncIterator[tuple[Any, Any]]:
    """``(read, write)`` streams to a stdio MCP server, with per-message caps.

    Args:
        params: The SDK's ``StdioServerParameters`` (command, args, env, cwd).
        errlog: Where the server's stderr goes (a file with a descriptor).
        max_message_bytes: Largest message read from the server.
        max_items: Most JSON values in one result.
    """
    env = {**_mcp.default_environment(), **(params.env or {})}
    process = await anyio.open_process([params.command, *params.args], env=env, cwd=params.cwd, stderr=errlog,
                                       start_new_session=True)
    read_writer, read_stream = anyio.create_memory_object_stream[Any](0)
    write_stream, write_reader = anyio.create_memory_object_stream[Any](0)
    reader = _LineReader(max_message_bytes, max_items)

    async def stdout_reader() -> None:
        assert process.stdout is not None
        async with read_writer:
            try:
                async for chunk in process.stdout:
                    for message in reader.feed(chunk):
                        await read_writer.send(message)
            except _Unattributable as exc:
                log.warning("closing the connection: %s", exc)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
                pass

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    await process.stdin.send(_mcp.message_line(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await write_stream.aclose()
                await _stop(process)
                await read_stream.aclose()
            tg.cancel_scope.cancel()


async def _stop(process: anyio.abc.Process) -> None:
    """Close stdin, then SIGTERM and SIGKILL the process group, waiting between."""
    with suppress(Exception):
        await process.stdin.aclose()  # type: ignore[union-attr]
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
        with anyio.move_on_after(_EXIT_WAIT_S):
            await process.wait()
        if process.returncode is not None:
            break
    with suppress(Exception):
        await process.stdout.aclose()  # type: ignore[union-attr]
