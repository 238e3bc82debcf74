"""Benchmark fixtures on the real benchmark corpora, and a summary of measured ratios.

Run: ``python -m pytest benchmarks`` (numbers are reported, never asserted). Each
benchmark that compares against a baseline measures both in the same run and records
the ratio with :func:`report`, printed at the end of the session.
"""

from __future__ import annotations

import os

import pytest

from .synthetic import data_dir

DATA = data_dir()  # ../shared/data beside the repository, or $TOOLSIFT_DATA (worktrees)
SETS = {"apibank": "mftr-apibank", "apigen": "mftr-apigen",
        "gorilla-huggingface": "mftr-gorilla-huggingface", "toolink": "mftr-toolink"}
_REPORT: list[str] = []


def report(line: str) -> None:
    """Record one summary line for the end-of-session report."""
    _REPORT.append(line)


def pytest_terminal_summary(terminalreporter):
    if _REPORT:
        terminalreporter.section("toolsift benchmark summary")
        for line in _REPORT:
            terminalreporter.write_line(line)


def _load(ds: str):
    from toolsift.adapters import load_catalog
    from toolsift.adapters.benchmark import load_queries

    root = DATA / SETS[ds] / "dataset"
    assert root.is_dir(), f"benchmark data missing: {root}"
    tools = load_catalog(root / f"from_toolret/{ds}/tools.json")
    queries = [q for k in range(5) for q in load_queries(root / f"train_and_test/{ds}/fold_{k}/test_queries.json")]
    return tools, queries


@pytest.fixture(scope="session")
def apigen():
    return _load("apigen")


def pooled():
    """All four mftr-* tool sets in one ~6,400-tool catalogue, and all their queries."""
    from toolsift import Catalog

    tools, queries = [], []
    for ds in SETS:
        t, q = _load(ds)
        tools.extend(t)
        queries.extend(q)
    return Catalog(tools, name="mftr-all"), queries


def bm25s_searcher(catalog, k: int):
    """bm25s over one flat document per tool, searched one raw text per call (tokenised
    per call, one thread), as the latency benchmarks compare it."""
    import bm25s

    from .synthetic import flat_document

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([flat_document(t) for t in catalog], stopwords="en", show_progress=False),
                    show_progress=False)

    def search(text):
        tokens = bm25s.tokenize([text], stopwords="en", show_progress=False, return_ids=False)
        return retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)

    return search


def interleaved(calls: dict, texts: list[str], forget, rounds: int, before=None) -> dict:
    """Seconds per call of every system (``calls``: name -> fn(text)), query by query with
    the systems' order rotating, so all of them meet the same machine. ``forget()`` runs
    before each round (it drops toolsift's memo of whole query texts, so every round
    analyses each request afresh, as a new request would be; the memo of single words stays
    warm, as in a running service); ``before(name)``, when given, before each call. Returns
    ``{name: float64[len(texts) * rounds]}``."""
    import time

    import numpy as np

    names = list(calls)
    out: dict = {n: [] for n in names}
    clock = time.perf_counter
    for r in range(rounds):
        forget()
        for i, text in enumerate(texts):
            s = (i + r) % len(names)
            for name in names[s:] + names[:s]:
                if before is not None:
                    before(name)
                fn = calls[name]
                t0 = clock()
                fn(text)
                out[name].append(clock() - t0)
    return {n: np.asarray(v) for n, v in out.items()}


def idle_and_busy(calls: dict, texts: list[str], forget, rounds: int, warm: int = 50) -> tuple[dict, dict]:
    """:func:`interleaved` twice: ``"idle"`` (no load added) and ``"busy"`` (two spinning
    processes, :func:`benchmarks.busy.busy`), each system warmed on the first ``warm``
    texts first. Returns ``({condition: {name: seconds per call}}, {condition: 1-minute
    load average before it})``."""
    from .busy import busy

    lat, loads = {}, {}
    for cond, n_busy in (("idle", 0), ("busy", 2)):
        loads[cond] = os.getloadavg()[0]
        with busy(n_busy):
            for fn in calls.values():
                for t in texts[:warm]:
                    fn(t)
            lat[cond] = interleaved(calls, texts, forget, rounds)
    return lat, loads


def module_args(doc: str, argv: list[str] | None, *, queries: int, rounds: int, queries_help: str | None = None):
    """The command line of a module benchmark (``python -m benchmarks.X``): ``--queries``,
    ``--rounds`` and ``--out`` (a results file to write the printed lines to)."""
    import argparse
    from pathlib import Path

    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=queries, help=queries_help)
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--out", type=Path)
    return ap.parse_args(argv)


def emit(lines: list[str], out) -> None:
    """Prints a module benchmark's lines, and writes them to ``out`` when given."""
    text = "\n".join(lines)
    print(text)
    if out:
        out.write_text(text + "\n")


def run_header(n_tools: int, n_texts: int, k: int, rounds: int, loads: dict) -> list[str]:
    """The machine, date, load and workload lines a module benchmark prints above its table."""
    import platform
    import subprocess
    import time

    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    return [f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
            f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; `uptime` after: {uptime}; "
            f"1-min load before idle / busy: {loads['idle']:.2f} / {loads['busy']:.2f}.",
            f"{n_tools} pooled tools, the first {n_texts} pooled raw test queries, k = {k}, "
            f"{rounds} rounds, one thread, interleaved.", ""]


@pytest.fixture(scope="session")
def combined():
    """All four mftr-* tool sets in one ~6,400-tool catalogue, and all their queries."""
    return pooled()


@pytest.fixture(autouse=True, scope="module")
def _pin_threads(request):
    # One thread unless a benchmark says otherwise: numbers comparable across machines.
    # A module with PIN_THREADS = False measures what a user gets from the public API
    # alone (IndexConfig(threads=...)), so Numba goes back to its process default.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import numba
    from toolsift.kernels import warmup

    if getattr(request.module, "PIN_THREADS", True):
        from toolsift.kernels import set_threads

        set_threads(1)
    else:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    warmup()
