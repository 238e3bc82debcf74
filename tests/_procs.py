"""Processes the tests start: readiness by a signal, and always ended.

:class:`Proc` runs a command with its output in a log file. :meth:`Proc.wait_line`
waits for a line the process prints when it is ready (``toolsift: gateway ready at
URL``) and :meth:`Proc.wait_port` for its socket to accept a connection: both return as
soon as the signal comes, or fail as soon as the process exits, however busy the machine
is. There is no readiness deadline; ``HANG_GUARD_S`` only stops a test that would
otherwise wait forever on a process that neither gets ready nor exits.

:func:`started` is the context manager every test uses: the process is ended (SIGTERM,
then SIGKILL) when the block exits, pass or fail.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import toolsift

# The package the tests import (src/ in a dev tree, site-packages in CI) is the one the
# subprocesses must run.
PKG_ROOT = str(Path(toolsift.__file__).resolve().parent.parent)
#: Not a readiness deadline: a process that neither prints its ready line nor exits
#: within this long is hung, and the test fails instead of waiting forever.
HANG_GUARD_S = 900.0
READY = re.compile(r"toolsift: gateway ready at (http://\S+/mcp)")


def env(**extra: str) -> dict[str, str]:
    """The test environment, with the package under test first on ``PYTHONPATH``."""
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join(p for p in (PKG_ROOT, out.get("PYTHONPATH")) if p)
    out.update(extra)
    return out


class Proc:
    """A subprocess with its output (stdout and stderr) in a log file, stopped by pid."""

    def __init__(self, args: Sequence[str], log: Path, *, extra_env: dict[str, str] | None = None,
                 **popen: object) -> None:
        self.log = log
        self._out = open(log, "wb")  # noqa: SIM115 - open for the process's lifetime
        try:
            self.p = subprocess.Popen(list(args), stdin=subprocess.DEVNULL, stdout=self._out,
                                      stderr=subprocess.STDOUT, env=env(**(extra_env or {})),
                                      **popen)  # type: ignore[call-overload]
        except BaseException:
            self._out.close()
            raise

    @property
    def pid(self) -> int:
        return self.p.pid

    def tail(self, n: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-n:]

    def wait_line(self, pattern: str | re.Pattern[str] = READY) -> re.Match[str]:
        """Wait until the output has a line matching ``pattern``; fail if the process exits first."""
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        guard = time.monotonic() + HANG_GUARD_S
        while True:
            found = rx.search(self.log.read_text(errors="replace"))
            if found:
                return found
            if self.p.poll() is not None:
                found = rx.search(self.log.read_text(errors="replace"))  # printed just before exiting
                if found:
                    return found
                raise AssertionError(f"exited with status {self.p.returncode} before printing "
                                     f"{rx.pattern!r}:\n{self.tail()}")
            if time.monotonic() > guard:
                raise AssertionError(f"hung: neither {rx.pattern!r} nor an exit:\n{self.tail()}")
            time.sleep(0.05)

    def wait_port(self, host: str, port: int) -> None:
        """Wait until ``host:port`` accepts a connection; fail if the process exits first."""
        guard = time.monotonic() + HANG_GUARD_S
        while True:
            if self.p.poll() is not None:
                raise AssertionError(f"exited with status {self.p.returncode} before listening on "
                                     f"{host}:{port}:\n{self.tail()}")
            try:
                with socket.create_connection((host, port), timeout=1.0):
                    return
            except OSError:
                pass
            if time.monotonic() > guard:
                raise AssertionError(f"hung: {host}:{port} never listened:\n{self.tail()}")
            time.sleep(0.05)

    def wait_http(self, url: str) -> None:
        """Wait until ``url`` answers (any status below 500); fail if the process exits first."""
        import httpx

        guard = time.monotonic() + HANG_GUARD_S
        while True:
            if self.p.poll() is not None:
                raise AssertionError(f"{url}: process exited with {self.p.returncode}:\n{self.tail()}")
            try:
                if httpx.get(url, timeout=5.0).status_code < 500:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > guard:
                raise AssertionError(f"hung: {url} never answered:\n{self.tail()}")
            time.sleep(0.05)

    def stop(self, *, grace_s: float = 10.0) -> None:
        """End the process: SIGTERM (a gateway closes its upstreams), SIGKILL if it lingers."""
        try:
            if self.p.poll() is None:
                self.p.terminate()
                try:
                    self.p.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    self.p.kill()
                    self.p.wait()
        finally:
            self._out.close()


@contextmanager
def started(args: Sequence[str], log: Path, **popen: object) -> Iterator[Proc]:
    """Start a process for the block and end it when the block exits, pass or fail."""
    proc = Proc(args, log, **popen)
    try:
        yield proc
    finally:
        proc.stop()


@contextmanager
def serving(args: Sequence[str], log: Path, **popen: object) -> Iterator[tuple[Proc, str]]:
    """``toolsift serve ARGS --transport http --port 0``: yields the process and its base
    URL once it prints its ready line (with the port it picked); ends it on exit."""
    cmd = [sys.executable, "-m", "toolsift", "serve", *args, "--transport", "http", "--port", "0"]
    with started(cmd, log, **popen) as proc:
        url = proc.wait_line().group(1)
        yield proc, url.removesuffix("/mcp")
