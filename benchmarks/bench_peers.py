"""Single-search latency against the peers, at every catalogue size and on long requests.

One run prints, for each workload, toolsift's BM25 fields (the ``bm25`` preset), the
default preset when it is another one, bm25s and ratel-ai, p50 / p99 per call, idle and
busy (two CPU-spinning background processes, :func:`benchmarks.busy.busy`). The systems
are interleaved query by query (the order rotates), so all of them meet the same machine.

Workloads (the shared sets' real texts, k = 10, one thread):

* ``apibank``: APIBank's 101 tools and its queries;
* ``gorilla``: Gorilla HuggingFace's 907 tools (~1,000) and its queries;
* ``pooled``: the four mftr sets' 6,417 tools with their queries;
* ``ultratool-long``: UltraTool's questions of 40-80 words over the 6,417 pooled tools;
* ``multistep-long``: the seeded multi-step requests of ``toolsift eval stress`` (3-4
  pooled queries joined, :mod:`toolsift.evaluate.stress`) of 40-80 words, same tools.

On the two long workloads the default index is also timed with its multi-step requests
on the Python path (``toolsift default, Python steps``: :func:`toolsift.search.needs.run_steps`
instead of the one engine call; the same hits), the before of that change.

Each peer gets the catalogue the way its docs tell a user to: bm25s one flat document
per tool (:func:`benchmarks.synthetic.flat_document`), tokenised per call as
``bench_latency`` does; ratel-ai a ``ToolRegistry(method="bm25")`` fed OpenAI function
schemas, as :mod:`toolsift.evaluate.peers` drives it. Every call is one search of one
raw text, tokenisation and result objects included.

Run (numbers are reported, never asserted)::

    TOOLSIFT_BENCH_OUT=/tmp/bench python -m pytest benchmarks/bench_peers.py -q -s

``TOOLSIFT_BENCH_QUERIES`` (default 500) caps the queries per workload; each is timed
``ROUNDS`` times.
"""

from __future__ import annotations

import asyncio
import os
import time

import numpy as np
import pytest

from toolsift import Catalog, ToolIndex
from toolsift.presets import default_preset, preset_config

from .busy import busy
from .conftest import DATA, interleaved, report
from .paths import PythonSteps
from .results import Figure, write_json
from .synthetic import flat_document

PIN_THREADS = True
CONDITIONS = ("idle", "busy")
BUSY_PROCESSES = 2
K = 10
ROUNDS = 3
N_QUERIES = int(os.environ.get("TOOLSIFT_BENCH_QUERIES", "500"))
WORKLOADS = ("apibank", "gorilla", "pooled", "ultratool-long", "multistep-long")
#: On the long workloads, the default index with multi-step requests on the Python path.
PYTHON_STEPS = "toolsift default, Python steps"

_FIGURES: list[Figure] = []
_META: dict = {}


def _spread(items: list, n: int) -> list:
    """``n`` items spread evenly over ``items``."""
    if len(items) <= n:
        return items
    return [items[i] for i in np.linspace(0, len(items) - 1, n).astype(int)]


def _long(texts: list[str]) -> list[str]:
    return [t for t in texts if 40 <= len(t.split()) <= 80]


@pytest.fixture(scope="module", autouse=True)
def _summary():
    yield
    if _FIGURES:
        for line in _table(_FIGURES):
            report(line)
        path = write_json("bench_peers", _FIGURES, **_META)
        if path is not None:
            report(f"written: {path}")


@pytest.fixture(scope="module")
def sets():
    from toolsift.evaluate import MftrDataset, UltraToolDataset
    from toolsift.evaluate.pooled import load_pseudo

    apibank = MftrDataset.load(DATA / "mftr-apibank")
    gorilla = MftrDataset.load(DATA / "mftr-gorilla-huggingface")
    pooled = load_pseudo("pooled", DATA)
    stress = load_pseudo("stress", DATA)
    ultra = UltraToolDataset.load(DATA / "ultratool")
    out = {
        "apibank": (apibank.raw_tools, [q.text for q in apibank.queries]),
        "gorilla": (gorilla.raw_tools, [q.text for q in gorilla.queries]),
        "pooled": (pooled.tools, [q.text for q in pooled.queries]),
        "ultratool-long": (pooled.tools, _long([q.question for q in ultra.queries])),
        "multistep-long": (pooled.tools, _long([q.text for q in stress.queries])),
    }
    out = {name: (tools, _spread(texts, N_QUERIES)) for name, (tools, texts) in out.items()}
    _META.update(k=K, rounds=ROUNDS, busy_processes=BUSY_PROCESSES,
                 date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                 workloads={n: {"tools": len(t), "queries": len(q),
                                "words_p50": float(np.median([len(x.split()) for x in q]))}
                            for n, (t, q) in out.items()})
    return out


class _Systems:
    """Every system's single-search function over one catalogue, built once."""

    def __init__(self, tools: Catalog) -> None:
        import bm25s
        import ratel_ai

        from toolsift.evaluate.cold import openai_tool

        self.calls = {}
        self.default: ToolIndex | None = None
        bm25 = ToolIndex.build(tools, config=preset_config("bm25", threads=1))
        indexes = [bm25]
        self.calls["toolsift bm25"] = lambda q: bm25.search(q, k=K)
        if default_preset() != "bm25":  # the default preset, when it is not the same index
            default = self.default = ToolIndex.build(tools, config=preset_config(None, threads=1))
            indexes.append(default)
            self.calls[f"toolsift default ({default_preset()})"] = lambda q: default.search(q, k=K)
        # The analyzers' per-text memos (toolsift.analyze), emptied before each round.
        clears = [ix.config.analyzer._memo.cache_clear for ix in indexes]
        self.forget = lambda: [c() for c in clears]
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize([flat_document(t) for t in tools], stopwords="en", show_progress=False),
                        show_progress=False)

        def bm25s_search(text):
            tokens = bm25s.tokenize([text], stopwords="en", show_progress=False, return_ids=False)
            return retriever.retrieve(tokens, k=K, show_progress=False, n_threads=1)

        self.calls["bm25s"] = bm25s_search
        registry = ratel_ai.ToolRegistry(method="bm25")
        schemas = [openai_tool(t) for t in tools]
        pending = registry.register([ratel_ai.Tool(t.id, s["function"]["name"], s["function"].get("description", ""),
                                                   dict(s["function"]["parameters"]), {})
                                     for t, s in zip(tools, schemas)])
        asyncio.run(_await(pending))
        self.calls["ratel-ai"] = lambda q: registry.search(q, K)


async def _await(pending) -> None:
    await pending


_BUILT: dict[int, _Systems] = {}


def _systems(tools: Catalog) -> _Systems:
    got = _BUILT.get(id(tools))
    if got is None:
        got = _BUILT[id(tools)] = _Systems(tools)
    return got


@pytest.mark.parametrize("condition", CONDITIONS)
@pytest.mark.parametrize("workload", WORKLOADS)
def test_peers(benchmark, sets, workload, condition):
    tools, texts = sets[workload]
    systems = _systems(tools)
    calls = dict(systems.calls)
    if workload.endswith("-long") and systems.default is not None:
        # The before of the one-call multi-step path, timed in the same run (same hits).
        calls[PYTHON_STEPS] = lambda q, ix=PythonSteps(systems.default): ix.search(q, k=K)
    load = os.getloadavg()[0]
    with busy(BUSY_PROCESSES if condition == "busy" else 0):
        for fn in calls.values():  # warm: first calls, caches, the thread pool
            for t in texts[:20]:
                fn(t)
        lat = benchmark.pedantic(lambda: interleaved(calls, texts, systems.forget, ROUNDS), rounds=1, iterations=1)
    for name, seconds in lat.items():
        _FIGURES.append(Figure.latency(f"{workload}: {name}", condition, seconds,
                                       extra={"load_avg_1m": load, "tools": len(tools), "queries": len(texts)}))


def _table(figures: list[Figure]) -> list[str]:
    """p50 / p99 per system and condition, and toolsift's p50 over each peer's."""
    rows = [f"{'workload: system':<44}" + "".join(f"| {c + ' p50 / p99 ms':<22}" for c in CONDITIONS)]
    rows.append("-" * len(rows[0]))
    for name in dict.fromkeys(f.name for f in figures):
        cells = []
        for c in CONDITIONS:
            f = next((x for x in figures if x.name == name and x.condition == c), None)
            cells.append(f"| {f.cell() if f else '-':<22}")
        rows.append(f"{name:<44}" + "".join(cells))
    for c in CONDITIONS:
        for w in WORKLOADS:
            own = next((f for f in figures if f.name == f"{w}: toolsift bm25" and f.condition == c), None)
            if own is None:
                continue
            parts = []
            for peer in ("bm25s", "ratel-ai"):
                p = next((f for f in figures if f.name == f"{w}: {peer}" and f.condition == c), None)
                if p is not None:
                    parts.append(f"p50 {own.p50 / p.p50:.2f}x {peer}, p99 {own.p99 / p.p99:.2f}x")
            rows.append(f"{c} {w}: toolsift bm25 = " + "; ".join(parts))
    rows.append("(Nx: toolsift's time over the peer's; below 1 means toolsift is faster)")
    return rows
