"""An HTTP client transport for upstream servers that caps ``tools/call`` answers while
reading them: the HTTP counterpart of :mod:`toolsift.gateway.stdio_transport`.

It wraps the transport of the HTTP client the SDK's streamable HTTP client uses. The
answer to a ``tools/call`` POST (JSON, or an SSE stream that ends with the answer) is
read chunk by chunk; once it passes the byte cap the connection is closed and the SDK
receives, in its place, a JSON-RPC error for the same request id, which the gateway
reports as ``result_too_large``. An answer under the cap with more JSON values than the
item cap is replaced the same way, before the SDK validates it. Answers are asked for
uncompressed, so the cap counts what would be parsed.
"""

from __future__ import annotations

import json
from typing import Any

from .result_size import RESULT_TOO_LARGE, count_items

__all__ = ["CappedTransport"]

_ERROR_CODE = -32603


class CappedTransport:
    """An async HTTP transport (``handle_async_request``) capping tools/call answers.

    Args:
        inner: The transport that does the I/O.
        httpx: The HTTP library module (``httpx`` or ``httpx2``) the client comes from.
        max_bytes: Largest answer read.
        max_items: Most JSON values in one result.
    """

    def __init__(self, inner: Any, httpx: Any, *, max_bytes: int, max_items: int) -> None:
        self._inner = inner
        self._httpx = httpx
        self.max_bytes = max_bytes
        self.max_items = max_items

    async def handle_async_request(self, request: Any) -> Any:
        call_id = _tool_call_id(request)
        if call_id is not None:
            request.headers["accept-encoding"] = "identity"
        response = await self._inner.handle_async_request(request)
        if call_id is None or response.status_code != 200:
            return response
        body = bytearray()
        try:
            async for chunk in response.stream:
                body += chunk
                if len(body) > self.max_bytes:
                    return self._refusal(request, call_id, f"over the {self.max_bytes}-byte limit",
                                         bytes=len(body), limit_bytes=self.max_bytes)
        finally:
            await response.aclose()
        if len(body) > self.max_items and _too_many_items(bytes(body), self.max_items):
            return self._refusal(request, call_id, f"more than {self.max_items} items", limit_items=self.max_items)
        return self._httpx.Response(response.status_code, headers=response.headers, content=bytes(body),
                                    extensions=response.extensions, request=request)

    def _refusal(self, request: Any, call_id: Any, what: str, **details: Any) -> Any:
        message = {"jsonrpc": "2.0", "id": call_id, "error": {
            "code": _ERROR_CODE, "message": f"result refused by the gateway: {what}",
            "data": {"toolsift": RESULT_TOO_LARGE, **details}}}
        return self._httpx.Response(200, headers={"content-type": "application/json"},
                                    content=json.dumps(message).encode(), request=request)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> CappedTransport:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._inner.__aexit__(*exc)


def _tool_call_id(request: Any) -> Any:
    """The JSON-RPC id of a ``tools/call`` POST, else ``None``."""
    if request.method != "POST":
        return None
    try:
        message = json.loads(request.content)
    except (ValueError, TypeError, RuntimeError):
        return None
    if isinstance(message, dict) and message.get("method") == "tools/call":
        return message.get("id")
    return None


def _too_many_items(body: bytes, limit: int) -> bool:
    """Whether a JSON answer, or any ``data:`` message of an SSE one, holds a result
    with more than ``limit`` JSON values."""
    texts = [body]
    if not body.lstrip().startswith(b"{"):  # SSE: one JSON message per data field
        texts = [line[5:] for line in body.splitlines() if line.startswith(b"data:")]
    for text in texts:
        try:
            message = json.loads(text)
        except ValueError:
            continue
        result = message.get("result") if isinstance(message, dict) else None
        if result is not None and count_items(result, limit) > limit:
            return True
    return False
