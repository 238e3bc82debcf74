"""The gateway's listening sockets, bound before uvicorn runs.

uvicorn binds its own socket and, when that fails (a port in use, a host that does not
resolve), logs ``ERROR: [Errno 98] ...`` and exits with status 1 or 3: not an error
``toolsift serve`` can report. Binding here first turns both into a
:class:`~toolsift.errors.ToolsiftError` (one ``toolsift: error:`` line, status 2), for
one process and for workers alike.
"""

from __future__ import annotations

import socket

from ..errors import ToolsiftError

__all__ = ["bind"]


def bind(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A listening TCP socket on ``host:port`` (inheritable, for worker processes).

    Raises:
        ToolsiftError: ``host`` does not resolve, or the address cannot be bound (in
            use, not an address of this machine, a privileged port).
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        raise ToolsiftError(f"cannot resolve --host {host!r}: {getattr(exc, 'strerror', None) or exc}") from None
    # IPv4 first, as uvicorn binds a name such as "localhost" (clients try 127.0.0.1).
    family, kind, proto, _, addr = min(infos, key=lambda info: info[0] != socket.AF_INET)
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(addr)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ToolsiftError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock
