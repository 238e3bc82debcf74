"""Connection guards for the HTTP gateway: a header deadline and a connection cap.

uvicorn arms its keep-alive timer only after a response, and any byte received
disarms it, so a client that opens a connection and trickles its request line and
headers a byte at a time is held open indefinitely (400 such connections were, in the
adversarial probe of issue 24). :func:`guarded_protocol` returns uvicorn's h11 protocol
with two additions:

* a deadline for the request head: armed when the connection opens and again when a
  response completes, disarmed once the whole request line and headers have arrived;
  a connection that misses it is closed (``header_timeout_s``);
* a connection cap: a connection beyond ``max_connections`` is answered ``503`` and
  closed at once, instead of being accepted and left waiting.

The request body is timed by :class:`toolsift.gateway.http.BodyLimit`
(``body_timeout_s``), and idle keep-alive connections by uvicorn's own
``timeout_keep_alive`` (``keep_alive_s``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

__all__ = ["guarded_protocol", "proxy_settings", "uvicorn_settings"]

log = logging.getLogger("toolsift.gateway.http")

_BUSY_BODY = b'{"error": {"code": "too_many_connections", "message": "connection limit reached"}}'
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\n"
         b"content-length: %d\r\n\r\n" % len(_BUSY_BODY)) + _BUSY_BODY


def guarded_protocol(*, header_timeout_s: float, max_connections: int) -> type:
    """uvicorn's h11 protocol class with a request-head deadline and a connection cap."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                log.warning("connection limit (%d) reached: refusing a connection", max_connections)
                transport.write(_BUSY)
                transport.close()
                return
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            # Past IDLE, h11 has parsed the request line and every header.
            if self._deadline is not None and self.conn.their_state is not h11.IDLE:
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(header_timeout_s, self._expired)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expired(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                log.info("closing a connection that sent no complete request head within %gs", header_timeout_s)
                self.transport.close()

    return GuardedH11Protocol


def uvicorn_settings(config: Any) -> dict[str, Any]:
    """``uvicorn.Config`` keyword arguments for a :class:`ServeConfig`'s HTTP limits."""
    return {
        "http": guarded_protocol(header_timeout_s=config.header_timeout_s, max_connections=config.max_connections),
        "timeout_keep_alive": config.keep_alive_s,
        # Requests (not connections) beyond the cap get uvicorn's own 503.
        "limit_concurrency": config.max_connections + 1,
    }


def proxy_settings(config: Any) -> dict[str, Any]:
    """``uvicorn.Config`` keyword arguments for client addresses behind proxies.

    uvicorn by default rewrites the client address from ``X-Forwarded-For`` when the
    peer is 127.0.0.1 (or ``$FORWARDED_ALLOW_IPS``): any local process could then pose
    as any number of clients. Forwarding headers are honoured only from the proxies
    ``config.trusted_proxies`` names; with none, never.
    """
    proxies = list(config.trusted_proxies)
    if not proxies:
        return {"proxy_headers": False, "forwarded_allow_ips": ""}
    return {"proxy_headers": True, "forwarded_allow_ips": proxies}
