"""The suite checks itself: a test that leaves a process or a non-daemon thread running
fails at teardown, and the leftover process is killed (issue 37, item 10).

An inner pytest session (pytester, in this process) uses the suite's own autouse
fixture from tests/conftest.py; a grace period of 0.3 s keeps it short.
"""

from __future__ import annotations

import subprocess
import threading
import time

from tests import _leaks, _proctree

pytest_plugins = ["pytester"]

INNER = """
import subprocess, sys, threading, time

def test_leaves_a_process():
    subprocess.Popen(["sleep", "600"])

def test_leaves_an_orphaned_grandchild():
    # The child exits at once; its own child (the grandchild) is adopted by the test
    # process (a child subreaper), so the check still sees it.
    subprocess.run(["sh", "-c", "sleep 600 & exit 0"], check=True)

def test_leaves_a_thread():
    threading.Thread(target=time.sleep, args=(3,), name="leaky-thread").start()

def test_cleans_up():
    p = subprocess.Popen(["sleep", "600"])
    try:
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()
    t = threading.Thread(target=time.sleep, args=(0.01,))
    t.start()
    t.join()
"""


def test_a_leftover_process_or_thread_fails_its_test(pytester, monkeypatch):
    monkeypatch.setattr(_leaks, "GRACE_S", 0.3)
    assert _leaks.make_subreaper()  # what conftest does at session start (idempotent)
    pytester.makeconftest("from tests.conftest import _no_leftover_processes_or_threads  # noqa: F401\n")
    pytester.makepyfile(test_inner=INNER)
    before = _proctree.descendants()
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, errors=3)
    out = result.stdout.str()
    assert "left running:" in out and "sleep 600" in out and "leaky-thread" in out
    # The leftovers were killed: nothing new runs below this process.
    assert _proctree.descendants() - before == set()
    for t in threading.enumerate():
        if t.name == "leaky-thread":
            t.join()


def test_descendants_sees_children_and_grandchildren():
    p = subprocess.Popen(["sh", "-c", "sleep 600 & wait"])
    try:
        found: set[int] = set()
        for _ in range(200):  # until the shell's child has exec'd sleep (a fork is still 'sh')
            found = _proctree.descendants()
            if p.pid in found and any(b"sleep" in _proctree.cmdline(q).encode() for q in found - {p.pid}):
                break
            time.sleep(0.05)
        assert p.pid in found and any(b"sleep" in _proctree.cmdline(q).encode() for q in found - {p.pid})
    finally:
        for pid in _proctree.descendants():
            if pid != p.pid and "sleep 600" in _proctree.cmdline(pid):
                subprocess.run(["kill", "-9", str(pid)], check=False)
        p.kill()
        p.wait()
