"""A stdio upstream's stderr: passed through to the gateway's own and its last lines kept,
so an upstream that dies at start-up is reported with its own words."""

from __future__ import annotations

import collections
import os
import sys
import threading
from typing import Any

import anyio

__all__ = ["StderrTail", "errlog"]

# stderr lines of a stdio upstream kept for the start-up error.
_STDERR_TAIL = 20


def errlog() -> Any:
    """Where stdio upstreams' stderr goes: ours, or the real one when ours is a
    stand-in without a file descriptor (e.g. captured by a test runner)."""
    try:
        sys.stderr.fileno()
        return sys.stderr
    except (AttributeError, OSError, ValueError):
        return sys.__stderr__


class StderrTail:
    """A stdio upstream's stderr: passed through to ours line by line, last lines kept.

    A server that dies during start-up says why on stderr (a traceback); the SDK itself
    only reports "Connection closed". A thread reading the pipe keeps the server's log
    visible as before and gives the start-up error its cause.

    Attributes:
        writer: The pipe's write end, handed to the child as its stderr.
    """

    def __init__(self, sink: Any, keep: int = _STDERR_TAIL) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = os.fdopen(write_fd, "w", encoding="utf-8")
        self._reader = os.fdopen(read_fd, "rb")
        self._lines: collections.deque[str] = collections.deque(maxlen=keep)
        self._sink = sink
        self._done = threading.Event()
        threading.Thread(target=self._pump, name="toolsift-upstream-stderr", daemon=True).start()

    def _pump(self) -> None:
        try:
            for raw in self._reader:
                line = raw.decode("utf-8", "replace")
                self._lines.append(line.rstrip("\r\n"))
                try:
                    self._sink.write(line)
                    self._sink.flush()
                except (OSError, ValueError):  # our stderr closed (shutdown): keep draining
                    pass
        finally:
            self._reader.close()
            self._done.set()

    def close_writer(self) -> None:
        """Close our copy of the write end (once the child has its own)."""
        if not self.writer.closed:
            self.writer.close()

    async def ended(self, *, timeout: float) -> bool:
        """Whether the child closed its stderr (it exited) within ``timeout`` seconds."""
        self.close_writer()
        with anyio.move_on_after(timeout):
            while not self._done.is_set():
                await anyio.sleep(0.02)
        return self._done.is_set()

    def lines(self) -> list[str]:
        """The last non-blank lines read."""
        return [line for line in self._lines if line.strip()]
