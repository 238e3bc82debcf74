"""A pytest plugin that records each test's CPU time, for finding what makes a test tier slow
on a shared machine (wall time there mostly measures the other jobs).

    PYTHONPATH=scripts CPUTIME_OUT=cpu.jsonl python -m pytest -m "not slow" -p pytest_cputime ...

Appends one JSON line per test to ``$CPUTIME_OUT`` (default ``cputime.jsonl``): its node id,
wall seconds, and CPU seconds (user + system) of the test process (``self``: setup, call
and teardown, every thread) and of the child processes it waited for (``child``: the CLI
and server processes it started). A last line, id ``__process__``, holds the process's
totals, start-up and collection included. A child reaped later (an orphan a subreaper
adopted) counts for the test that reaps it, so per-test ``child`` is approximate; sums
over a file or a run are not. Sum the lines with any JSON tool.
"""

from __future__ import annotations

import json
import os
import resource
import time

import pytest

_rows: list[dict] = []


def _cpu() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    wall, (me, kids) = time.perf_counter(), _cpu()
    yield
    me2, kids2 = _cpu()
    _rows.append({"id": item.nodeid, "wall": time.perf_counter() - wall, "self": me2 - me, "child": kids2 - kids})


def pytest_sessionfinish(session: pytest.Session) -> None:
    me, kids = _cpu()
    with open(os.environ.get("CPUTIME_OUT", "cputime.jsonl"), "a", encoding="utf-8") as f:
        for row in _rows:
            f.write(json.dumps(row) + "\n")
        f.write(json.dumps({"id": "__process__", "self": me, "child": kids, "pid": os.getpid()}) + "\n")
