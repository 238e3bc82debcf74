"""The suite's own check that no test leaves a process or a thread behind.

An autouse fixture in conftest takes a :func:`snapshot` before every test and calls
:func:`leaked` after it: the processes descending from the test process and the
non-daemon threads alive after the test (and its function-scoped fixtures) must be the
ones alive before it (a process a longer-lived fixture's process starts meanwhile, such
as an upstream a module-scoped gateway restarts, belongs to that process). A leftover fails the test at teardown, naming it, and leftover
processes are killed by pid, so one leak does not spread into later tests. The same
check runs for the whole session at its end (module- and session-scoped fixtures).

On Linux the test process is made a child subreaper (``PR_SET_CHILD_SUBREAPER``):
a grandchild orphaned by its parent's death (an upstream of a killed gateway, a worker
of a killed supervisor) is re-parented to it, so it stays visible here instead of
escaping to init.

A leftover gets a grace period to finish exiting (a process stopped at the end of a
test can still be shutting down); nothing is asserted about how long anything took.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

from tests._proctree import cmdline, descendants, ppid

__all__ = ["fixture_owned", "leaked", "make_subreaper", "snapshot"]

#: How long leftovers get to finish exiting before they count as leaked.
GRACE_S = 15.0
#: Processes started during a test on behalf of a longer-lived fixture (see
#: :func:`fixture_owned`): left to that fixture, and to the session's check.
_FIXTURE_OWNED: set[int] = set()


def fixture_owned(pid: int) -> None:
    """Mark ``pid`` as owned by a module- or session-scoped fixture although a test
    started it (a test that kills and restarts a fixture's server): the fixture ends it,
    and the session's check makes sure it did."""
    _FIXTURE_OWNED.add(pid)
_PR_SET_CHILD_SUBREAPER = 36


def make_subreaper() -> bool:
    """Make this process adopt its orphaned descendants (Linux); whether it could."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if not t.daemon and t is not threading.main_thread() and t.is_alive()}


Snapshot = tuple[set[int], set[threading.Thread]]


def snapshot() -> Snapshot:
    """The running descendant processes and non-daemon threads, now."""
    return descendants(), _threads()


def _runtime_helpers() -> set[int]:
    """Helper processes Python's multiprocessing keeps for the life of this process (the
    resource tracker, the fork server), started by the first test that needs them: the
    runtime's, not the test's."""
    pids: set[int] = set()
    mods = sys.modules
    tracker = getattr(mods.get("multiprocessing.resource_tracker"), "_resource_tracker", None)
    server = getattr(mods.get("multiprocessing.forkserver"), "_forkserver", None)
    for pid in (getattr(tracker, "_pid", None), getattr(server, "_forkserver_pid", None)):
        if isinstance(pid, int):
            pids.add(pid)
    return pids


def _owned(before: set[int]) -> set[int]:
    """New processes that belong to the test: those whose line of parents up to this
    process runs through new processes only. A process started by one that was already
    running (an upstream a module-scoped gateway restarts) is that process's business;
    the session's check covers it."""
    new = descendants() - before - _FIXTURE_OWNED - _runtime_helpers()
    me = os.getpid()
    owned: set[int] = set()
    for pid in new:
        p: int | None = pid
        while p is not None and p != me and p in new:
            p = ppid(p)
        if p == me:
            owned.add(pid)
    return owned


def leaked(before: Snapshot, what: str) -> str | None:
    """What runs now that did not in ``before``, after a grace period to finish
    exiting: a report naming each (the processes are then killed by pid), or ``None``."""
    deadline = time.monotonic() + GRACE_S
    while True:
        procs = _owned(before[0])
        threads = _threads() - before[1]
        if (not procs and not threads) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if not procs and not threads:
        return None
    lines = [f"{what} left running:"]
    lines += [f"  process {pid}: {cmdline(pid)}" for pid in sorted(procs)]
    lines += [f"  non-daemon thread {t.name!r}" for t in sorted(threads, key=lambda t: t.name)]
    for pid in procs:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return "\n".join(lines)
