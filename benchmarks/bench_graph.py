"""The tool graph on the ~6,400-tool catalogue (the four mftr-* sets pooled): build time,
and what ``search(..., complete=True)`` adds to a single query's latency.

Run: ``python -m pytest benchmarks/bench_graph.py -s`` (reported, never asserted).
"""

from __future__ import annotations

import time

import numpy as np

from toolsift import ToolIndex
from toolsift.index.graph import ToolGraph

from .conftest import report


def test_graph_build(benchmark, combined):
    tools, _ = combined
    index = ToolIndex.build(tools)
    analyzer = index.config.analyzer
    graph = benchmark.pedantic(lambda: ToolGraph.build(tools, analyzer), rounds=3, iterations=1)
    report(f"tool graph of {len(tools)} tools: {len(graph)} edges, {int((graph.family >= 0).sum())} tools in "
           f"CRUD families, built in {benchmark.stats['median']:.2f} s (median of 3)")


def _p50(fn, queries) -> float:
    times = np.empty(len(queries))
    for i, q in enumerate(queries):
        t0 = time.perf_counter()
        fn(q)
        times[i] = time.perf_counter() - t0
    return float(np.median(times))


def test_complete_latency(combined):
    tools, queries = combined
    index = ToolIndex.build(tools)
    texts = [q.text for q in queries][:1000]
    for t in texts[:50]:  # warm both paths (kernels, lazily derived signatures)
        index.search(t, k=10)
        index.search(t, k=10, complete=True)
    # Interleaved rounds so that load changes hit both paths alike.
    plain, complete = [], []
    for _ in range(3):
        plain.append(_p50(lambda q: index.search(q, k=10), texts))
        complete.append(_p50(lambda q: index.search(q, k=10, complete=True), texts))
    p, c = min(plain), min(complete)
    report(f"search k=10 over {len(tools)} tools, {len(texts)} queries: p50 {p * 1e3:.3f} ms plain, "
           f"{c * 1e3:.3f} ms complete=True (+{(c - p) * 1e3:.3f} ms; best of 3 interleaved rounds)")
