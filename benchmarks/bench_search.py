"""Single-query search latency (p50 / p99) and index build time on real catalogues."""

from __future__ import annotations

import time

import numpy as np
import pytest

from toolsift import IndexConfig, ToolIndex

from .conftest import report


def _latencies(index: ToolIndex, queries, *, k: int = 10) -> np.ndarray:
    out = np.empty(len(queries))
    for i, q in enumerate(queries):
        t0 = time.perf_counter()
        index.search(q, k=k)
        out[i] = time.perf_counter() - t0
    return out


@pytest.mark.parametrize("form", ["raw", "structured"])
@pytest.mark.parametrize("corpus", ["apigen", "combined"])
def test_search_latency(benchmark, request, corpus, form):
    tools, bqs = request.getfixturevalue(corpus)
    index = ToolIndex.build(tools, config=IndexConfig(threads=1))
    queries = [q.text if form == "raw" else q.rewritten for q in bqs]
    queries = [q for q in queries if q is not None]
    for q in queries[:20]:  # warm caches and the kernels
        index.search(q)
    lat = _latencies(index, queries)
    p50, p99 = np.percentile(lat, 50) * 1e3, np.percentile(lat, 99) * 1e3
    benchmark.extra_info.update({"tools": len(tools), "queries": len(queries), "p50_ms": p50, "p99_ms": p99})
    report(f"search {form:<10} {corpus:<8} {len(tools):>5} tools: p50 {p50:.3f} ms, p99 {p99:.3f} ms "
           f"over {len(queries)} queries (1 thread)")
    it = iter(queries * 1000)
    benchmark(lambda: index.search(next(it), k=10))


@pytest.mark.parametrize("corpus", ["apigen", "combined"])
def test_index_build(benchmark, request, corpus):
    tools, _ = request.getfixturevalue(corpus)
    index = benchmark.pedantic(ToolIndex.build, args=(tools,), rounds=3, iterations=1)
    report(f"build {corpus:<8} {len(tools):>5} tools, {len(index.vocabulary)} terms: "
           f"{benchmark.stats['median'] * 1e3:.1f} ms (median of 3)")


def test_batch_search_throughput(benchmark, combined):
    tools, bqs = combined
    index = ToolIndex.build(tools, config=IndexConfig(threads=0))
    queries = [q.rewritten for q in bqs if q.rewritten is not None]
    benchmark.pedantic(index.search_batch, args=(queries,), kwargs={"k": 10}, rounds=3, iterations=1)
    qps = len(queries) / benchmark.stats["median"]
    report(f"search_batch structured combined: {qps:,.0f} queries/s ({len(queries)} queries, all cores)")
