"""``toolsift serve --workers N``: N processes serving one socket and one saved index.

One gateway process runs its event loop, MCP stack and searches on one core. The
supervisor (:func:`serve_workers`) builds the index of the local catalogue once, saves
it to a private temporary folder, binds the listening socket, and starts N worker
processes (``python -m toolsift.gateway.workers``) that each inherit a listening
socket on the one port (``SO_REUSEPORT``: the kernel spreads connections evenly) and
memory-map the saved index: its pages are shared, not copied. The config reaches each worker over a pipe, so
the bearer token is never written to disk or put on a command line.

Workers serve MCP statelessly: a session id issued by one worker would be unknown to
the next, so every POST stands alone (and the per-session schema cache is off). With
upstreams, each worker opens its own connections to them (their tools are listed per
worker; only the local catalogue's index is shared). A worker that dies is restarted.

Stopping: SIGINT or SIGTERM reaching the supervisor is forwarded to every worker, which
then has ``_STOP_GRACE_S`` to finish before SIGKILL; the temporary folder is removed.
Workers also die with their supervisor however it ends (even ``kill -9``): each keeps the
pipe its settings came on open as a lifeline, and its end of file (the kernel closes the
supervisor's end when it dies) makes the worker remove the temporary folder, stop, and
exit within ``_ORPHAN_EXIT_S`` at the latest.
"""

from __future__ import annotations

import argparse
import logging
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ToolsiftError
from ..schema import Tool
from .listen import bind as _bind
from .upstream import ServeConfig

__all__ = ["MAX_WORKERS", "serve_workers"]

log = logging.getLogger("toolsift.gateway.workers")

_READY = "toolsift-worker-ready"
_START_TIMEOUT_S = 120.0
#: Seconds workers get to stop after a forwarded SIGINT/SIGTERM before SIGKILL.
_STOP_GRACE_S = 2.5
#: Seconds an orphaned worker (supervisor gone) gets to stop before it exits hard.
_ORPHAN_EXIT_S = 1.5
#: Most worker processes ``--workers`` starts (each is a whole gateway process).
MAX_WORKERS = 64
# A worker dying more often than this is not restarted again (a crash loop).
_MIN_UPTIME_S = 5.0


class _Worker:
    """One worker process and the thread relaying its ready line."""

    def __init__(self, number: int, argv: list[str], payload: bytes, fd: int) -> None:
        self.number = number
        self.ready = threading.Event()
        self.started = time.monotonic()
        self.url: str | None = None
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=(fd,),
                                     # The terminal's Ctrl-C reaches the supervisor, which
                                     # forwards it and stops the workers in order.
                                     start_new_session=True)
        assert self.proc.stdin is not None
        # The settings, then the pipe stays open: the worker's lifeline (its end of
        # file means the supervisor is gone, however it ended).
        try:
            self.proc.stdin.write(payload)
            self.proc.stdin.flush()
        except OSError:
            pass  # the worker died at once: its exit status is reported by the caller
        threading.Thread(target=self._relay, daemon=True, name=f"toolsift-worker-{number}").start()

    def _relay(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.startswith(_READY):
                self.url = line[len(_READY):].strip()
                self.ready.set()
            else:  # a worker's stdout is not the MCP channel here: pass it on
                print(line, file=sys.stderr, flush=True)

    def signal(self, signum: int) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signum)
            except ProcessLookupError:
                pass

    def cut_lifeline(self) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except OSError:
            pass


def serve_workers(config: ServeConfig, *, workers: int, host: str = "127.0.0.1", port: int = 8000,
                  local_tools: Sequence[Tool] = (), index_config: Any = None,
                  on_ready: Callable[[str], None] | None = None, log_level: str = "warning") -> None:
    """Serve the gateway over HTTP from ``workers`` processes until interrupted.

    Args:
        config: Upstreams, gateway settings, auth token, HTTP limits.
        workers: Number of worker processes (>= 1).
        host: Interface to listen on.
        port: Port to listen on (0 picks a free one).
        local_tools: Tools of a local catalogue: indexed once, saved, and memory-mapped
            by every worker.
        index_config: Index settings (``None``: ``preset_config(config.preset)``).
        on_ready: Called once with the MCP endpoint URL when every worker serves.
        log_level: Workers' log level on stderr.

    Raises:
        ToolsiftError: A worker failed to start (its error is on stderr above), or the
            socket cannot be bound.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise ToolsiftError(f"--workers must be from 1 to {MAX_WORKERS}, got {workers!r}")
    if not config.upstreams and not local_tools:
        raise ToolsiftError("nothing to serve: the config lists no upstreams and no catalogue was given")
    if config.save_index is not None and config.upstreams:
        # Every worker builds its own combined index from the upstreams it connects to.
        raise ToolsiftError("serve: save_index / --save-index with upstreams needs one process (drop --workers)")
    save_index = config.save_index
    config = config.model_copy(update={"save_index": None})  # saved once, here, not by every worker
    if index_config is None:
        from ..presets import preset_config

        index_config = preset_config(config.preset)
    # From here on, SIGTERM and SIGINT unwind through the cleanup below (SIGTERM's default
    # action would end this process at once and leave the workers running).
    previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    stop_signal: int = signal.SIGTERM
    tmp = tempfile.mkdtemp(prefix="toolsift-serve-")
    socks: list[socket.socket] = []
    pool: list[_Worker] = []
    try:
        index_dir = None
        if local_tools:
            from ..toolindex import ToolIndex

            index_dir = os.path.join(tmp, "index")
            built = ToolIndex.build(list(local_tools), config=index_config)
            built.save(index_dir)
            if save_index is not None:
                from .upstream import save_gateway_index

                save_gateway_index(built, save_index)
        socks = _listen(host, port, workers)
        payload = pickle.dumps({"config": config, "index_config": index_config, "index_dir": index_dir,
                                "host": host, "log_level": log_level, "tmp": tmp})
        pool = [_Worker(i, _argv(s), payload, s.fileno()) for i, s in enumerate(socks)]
        deadline = time.monotonic() + _START_TIMEOUT_S
        for w in pool:
            while not w.ready.wait(0.05):
                if w.proc.poll() is not None:
                    raise ToolsiftError(f"gateway worker {w.number} exited during start-up (exit status "
                                        f"{w.proc.returncode}; its error is above)")
                if time.monotonic() > deadline:
                    raise ToolsiftError(f"gateway worker {w.number} did not start within {_START_TIMEOUT_S:g}s")
        log.info("%d gateway workers serving (pids %s)", workers, ", ".join(str(w.proc.pid) for w in pool))
        if on_ready is not None and pool[0].url:
            on_ready(pool[0].url)
        _supervise(pool, socks, payload)
    except _Stop as stop:
        stop_signal = stop.signum
        log.info("stopping %d gateway workers", len(pool))
    except KeyboardInterrupt:
        stop_signal = signal.SIGINT
        log.info("stopping %d gateway workers", len(pool))
    finally:
        # Cleanup must not be cut short by a second Ctrl-C; it is bounded in time.
        for sig in previous:
            signal.signal(sig, signal.SIG_IGN)
        try:
            _stop_all(pool, stop_signal)
            for sock in set(socks):
                sock.close()
            shutil.rmtree(tmp, ignore_errors=True)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _stop_all(pool: list[_Worker], signum: int) -> None:
    """Forward ``signum`` to every worker and cut their lifelines; SIGKILL those still
    running after ``_STOP_GRACE_S``."""
    for w in pool:
        w.signal(signum)
        w.cut_lifeline()
    deadline = time.monotonic() + _STOP_GRACE_S
    for w in pool:
        try:
            w.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            w.proc.kill()
            w.proc.wait()


class _Stop(Exception):
    """SIGTERM or SIGINT reached the supervisor."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stop(signum: int, frame: Any) -> None:
    raise _Stop(signum)


def _listen(host: str, port: int, workers: int) -> list[socket.socket]:
    """One listening socket per worker on one port (``SO_REUSEPORT``: the kernel spreads
    connections evenly over them), or one shared socket where that option is missing.

    The supervisor keeps every socket open, so connections queued for a worker that
    died are accepted by its replacement.
    """
    if not hasattr(socket, "SO_REUSEPORT"):
        one = _bind(host, port)
        return [one] * workers
    # A plain bind first: SO_REUSEPORT would let these sockets join another process's
    # listeners on the port (another gateway of this user) instead of failing "in use".
    probe = _bind(host, port)
    port = probe.getsockname()[1]
    probe.close()
    first = _bind(host, port, reuse_port=True)
    socks = [first]
    try:
        for _ in range(workers - 1):  # port 0 picked a port: the others join it
            socks.append(_bind(host, first.getsockname()[1], reuse_port=True))
    except BaseException:
        for sock in socks:
            sock.close()
        raise
    return socks


def _argv(sock: socket.socket) -> list[str]:
    return [sys.executable, "-m", "toolsift.gateway.workers", "--fd", str(sock.fileno())]


def _supervise(pool: list[_Worker], socks: list[socket.socket], payload: bytes) -> None:
    """Wait until SIGTERM/SIGINT (raised as exceptions); restart a worker that dies
    (unless it crash-loops)."""
    while True:
        time.sleep(0.2)
        for i, w in enumerate(pool):
            if w.proc.poll() is None:
                continue
            if time.monotonic() - w.started < _MIN_UPTIME_S:
                raise ToolsiftError(f"gateway worker {w.number} exited with status {w.proc.returncode} "
                                    f"within {_MIN_UPTIME_S:g}s of starting; stopping")
            log.warning("gateway worker %d (pid %d) exited with status %s; restarting it",
                        w.number, w.proc.pid, w.proc.returncode)
            w.cut_lifeline()
            pool[i] = _Worker(w.number, _argv(socks[i]), payload, socks[i].fileno())


def _worker_main(argv: Sequence[str] | None = None) -> int:
    """A worker: read the settings from stdin, map the index, serve the inherited socket."""
    p = argparse.ArgumentParser(prog="python -m toolsift.gateway.workers")
    p.add_argument("--fd", type=int, required=True)
    args = p.parse_args(argv)
    settings = pickle.load(sys.stdin.buffer)  # trusted: written by our supervisor over a pipe
    # The pipe stays open while the supervisor lives: its end of file is our cue to go.
    threading.Thread(target=_watch_lifeline, args=(sys.stdin.buffer, settings["tmp"]), daemon=True,
                     name="toolsift-lifeline").start()
    logging.basicConfig(stream=sys.stderr, level=settings["log_level"].upper(),
                        format=f"%(asctime)s %(levelname)s %(name)s[{os.getpid()}]: %(message)s")
    try:
        return _serve_worker(args.fd, settings)
    except KeyboardInterrupt:  # a forwarded SIGINT before uvicorn took over the signals
        return 130


def _serve_worker(fd: int, settings: dict[str, Any]) -> int:
    index = None
    if settings["index_dir"]:
        from ..toolindex import ToolIndex

        index = ToolIndex.load(settings["index_dir"], mmap=True)
    sock = socket.socket(fileno=fd)
    from .http import serve_http

    def ready(url: str) -> None:
        print(f"{_READY} {url}", flush=True)

    try:
        serve_http(settings["config"], host=settings["host"], port=sock.getsockname()[1], sock=sock,
                   index=index, index_config=settings["index_config"], on_ready=ready, worker=True)
    except ToolsiftError as exc:
        print(f"toolsift: error: {exc}", file=sys.stderr, flush=True)
        return 2
    return 0


def _watch_lifeline(pipe: Any, tmp: str) -> None:
    """Wait for the end of the supervisor's pipe, then remove the temporary folder (a
    supervisor killed outright cannot), stop gracefully, and exit hard if that lingers."""
    try:
        while pipe.read(65536):
            pass
    except (OSError, ValueError):
        pass
    shutil.rmtree(tmp, ignore_errors=True)  # harmless when the supervisor also does: mapped files stay valid
    os.kill(os.getpid(), signal.SIGTERM)  # uvicorn's graceful shutdown
    time.sleep(_ORPHAN_EXIT_S)
    os._exit(0)


if __name__ == "__main__":
    sys.exit(_worker_main())
