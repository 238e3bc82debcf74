"""Candidate generation + per-candidate scoring in the C++ core against the dense path.

One query (two texts, as a two-need query sends to a field), top-100 per text, bounded
scale, one thread, on synthetic Zipf-Mandelbrot catalogues of 6.4k, 100k and 1M
documents of ~12 tokens. ``sparse`` = ``candidates`` + ``gather`` (what search needs per
field); ``dense`` = ``score_dense`` + ``argpartition`` + column gather (the previous
path). Numbers are reported, never asserted.

The query-term statistics are calibrated against the real 6.4k-tool catalogue (shared
benchmark data, description field: median query-term document frequency 0.2% of the
tools, 90th percentile 3%; summed postings per query 0.1 x n_docs at the median):
``shift=30`` gives 0.4% / 5% / 0.23 x n_docs, i.e. somewhat heavier than the real queries.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from toolsift import _core

from .conftest import report

N_TERMS = {6_417: 20_000, 100_000: 100_000, 1_000_000: 200_000}
SHIFT = 30  # Zipf-Mandelbrot offset: flattens the head like stopword removal does
TOP = 100


def _ranks(rng: np.random.Generator, n_terms: int, size: int) -> np.ndarray:
    p = (np.arange(1, n_terms + 1, dtype=np.float64) + SHIFT) ** -1.2
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    perm = np.random.default_rng(0).permutation(n_terms).astype(np.int32)
    return perm[np.minimum(np.searchsorted(cdf, rng.random(size)), n_terms - 1)]


@pytest.fixture(scope="module", params=sorted(N_TERMS))
def synthetic(request):
    n_docs = request.param
    n_terms = N_TERMS[n_docs]
    rng = np.random.default_rng(n_docs)
    offsets = np.concatenate([[0], np.cumsum(rng.poisson(12, n_docs))]).astype(np.int64)
    tokens = _ranks(rng, n_terms, int(offsets[-1]))
    t0 = time.perf_counter()
    core = _core.InvertedIndex.build(tokens, offsets, n_terms)
    report(f"build {n_docs:>9,} docs x ~12 tokens: {time.perf_counter() - t0:.2f} s, nnz {core.nnz:,}")
    q_off = np.arange(0, 2 * 16 * 25 + 1, 16, dtype=np.int64)  # 25 queries x 2 texts x 16 terms
    q_terms = _ranks(np.random.default_rng(1), n_terms, int(q_off[-1]))
    return n_docs, core, q_terms, q_off


def _per_query(core, q_terms, q_off, fn) -> float:
    """Median over the queries of the best of 3 runs, in milliseconds of this thread's CPU
    time (single-threaded calls; robust to other processes on a shared machine)."""
    times = []
    tq = np.zeros(2, np.int64)
    for q in range(len(q_off) // 2):
        a, b = q_off[2 * q], q_off[2 * q + 2]
        terms = q_terms[a:b]
        offs = q_off[2 * q:2 * q + 3] - a
        best = float("inf")
        for _ in range(3):
            t0 = time.thread_time()
            fn(terms, offs, tq)
            best = min(best, time.thread_time() - t0)
        times.append(best)
    return float(np.median(times)) * 1e3


def _sparse(core):
    def run(terms, offs, tq):
        ptr, ids = core.candidates(terms, offs, tq, 1, TOP, scale="bounded", group=True)
        return core.gather(terms, offs, tq, ptr, ids, scale="bounded", group=True)
    return run


def _dense(core):
    def run(terms, offs, tq):
        rows = core.score_dense(terms, offs, scale="bounded", group=True)
        picks = [np.argpartition(-r, TOP - 1)[:TOP] for r in rows]
        ids = np.unique(np.concatenate([p[rows[i, p] > 0] for i, p in enumerate(picks)]))
        return rows[:, ids]
    return run


def test_sparse_candidates_and_gather(benchmark, synthetic):
    n_docs, core, q_terms, q_off = synthetic
    sparse = _per_query(core, q_terms, q_off, _sparse(core))
    dense = _per_query(core, q_terms, q_off, _dense(core))
    benchmark.extra_info.update({"n_docs": n_docs, "sparse_ms": sparse, "dense_ms": dense})
    report(f"candidates+gather {n_docs:>9,} docs, 1 query x 2 texts, top-{TOP}, 1 thread: "
           f"sparse {sparse:.3f} ms, dense {dense:.3f} ms -> {dense / sparse:.1f}x")
    run = _sparse(core)
    tq = np.zeros(2, np.int64)
    benchmark(run, q_terms[:q_off[2]], q_off[:3], tq)


def test_dense_baseline(benchmark, synthetic):
    n_docs, core, q_terms, q_off = synthetic
    run = _dense(core)
    tq = np.zeros(2, np.int64)
    benchmark.extra_info["n_docs"] = n_docs
    benchmark(run, q_terms[:q_off[2]], q_off[:3], tq)
