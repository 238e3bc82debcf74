"""Background CPU load for latency benchmarks: the "busy machine" condition.

A service rarely has the machine to itself. :func:`busy` starts ``k`` separate processes
that spin on the CPU (pure Python arithmetic, no I/O, no memory growth) while the block
runs; ``busy(2)`` -- two busy background processes -- is the standard busy condition of
``bench_latency``. On a 2-core machine that leaves no idle core, which is exactly where a
scorer that wakes a thread pool for a few dozen candidates loses milliseconds.

Each spinner is bounded three ways, so none outlives the benchmark:

* it exits by itself after ``seconds``;
* it exits when its parent process disappears (it polls its parent pid);
* the context manager terminates, then kills, every spinner on exit, error or not.

Example::

    with busy(2):
        latencies = measure(index, queries)
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["SPIN", "busy"]

#: The spinner program: prints one line once running, then spins until its deadline or
#: until its parent dies (re-parenting changes ``os.getppid()``).
SPIN = """
import os, sys, time
parent, deadline = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
print("spinning", flush=True)
x = 0
while time.monotonic() < deadline and os.getppid() == parent:
    for i in range(20000):
        x = (x * 1103515245 + 12345) & 0x7fffffff
"""


@contextmanager
def busy(k: int = 2, *, seconds: float = 900.0) -> Iterator[list[subprocess.Popen]]:
    """Run ``k`` CPU-spinning processes for the duration of the ``with`` block.

    Args:
        k: Number of spinning processes; ``0`` runs the block on an idle machine.
        seconds: Longest time any spinner lives, even if the block never ends.

    Yields:
        The spinner processes (already spinning).

    Raises:
        ValueError: ``k`` is negative or ``seconds`` is not positive.
        RuntimeError: A spinner failed to start.
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise ValueError(f"busy: k must be an integer >= 0, got {k!r}")
    if not seconds > 0:
        raise ValueError(f"busy: seconds must be > 0, got {seconds!r}")

    procs: list[subprocess.Popen] = []
    try:
        for _ in range(k):
            procs.append(subprocess.Popen(
                [sys.executable, "-c", SPIN, str(os.getpid()), str(seconds)],
                stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True))
        for p in procs:  # wait until each one really spins
            if p.stdout.readline().strip() != "spinning":
                raise RuntimeError(f"busy: spinner pid {p.pid} did not start (exit code {p.poll()})")
        yield procs
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.stdout is not None:
                p.stdout.close()
