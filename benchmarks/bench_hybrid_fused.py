"""Single-search wall time of the hybrid preset's fused engine call, against the general
path it replaces, BM25 fields and bm25s, on the 6,417 pooled tools, idle and busy.

The pooled catalogue is the four ``mftr-*`` sets' tools (as ``bench_query_overhead``
pools them) and the queries their raw test texts (the first ``--queries``). Systems, all
one thread, k = 10, interleaved query by query with a rotating order:

* ``bm25 fields``: ``preset_config("bm25")``, ``ToolIndex.search`` (the fused BM25 call);
* ``hybrid fused``: ``preset_config("hybrid")``, ``ToolIndex.search`` as it now runs
  (one-step raw requests in one call of ``_core.HybridText``, :mod:`toolsift.search.hybrid_text`;
  multi-step requests by :mod:`toolsift.search.needs`);
* ``hybrid glue``: the same index with the one-call text path switched off, so a one-step
  request is planned and scanned in Python around the fused engine call
  (:mod:`toolsift.search.fused_hybrid`), i.e. the path before ``HybridText``;
* ``hybrid general``: both switched off (``fused_hybrid.usable`` answering False), the
  candidates -> pack -> score path;
* ``bm25s``: one flat document per tool, as ``bench_peers`` drives it.

The analyzer's memo of whole texts is cleared before each round. Busy: two CPU-spinning
processes (:func:`benchmarks.busy.busy`). Numbers are reported, never asserted::

    python -m benchmarks.bench_hybrid_fused --out docs/results/hybrid-fused-2026-11-28.md
"""

from __future__ import annotations


import numpy as np

from .conftest import emit, idle_and_busy, module_args, run_header

K = 10


def _systems():
    from toolsift import ToolIndex
    from toolsift.presets import preset_config
    import toolsift.search as search_mod
    from toolsift.search import fused_hybrid

    from .conftest import bm25s_searcher, pooled

    cat, queries = pooled()
    texts = [x.text for x in queries]
    bm25 = ToolIndex.build(cat, config=preset_config("bm25", threads=1))
    hybrid = ToolIndex.build(cat, config=preset_config("hybrid", threads=1))
    real, real_text = fused_hybrid.usable, search_mod.text_searcher

    def glue(q):
        search_mod.text_searcher = lambda *a: None
        try:
            return hybrid.search(q, k=K)
        finally:
            search_mod.text_searcher = real_text

    def general(q):
        fused_hybrid.usable = lambda *a: False
        search_mod.text_searcher = lambda *a: None
        try:
            return hybrid.search(q, k=K)
        finally:
            fused_hybrid.usable, search_mod.text_searcher = real, real_text

    bm25s_search = bm25s_searcher(cat, K)

    calls = {"bm25 fields": lambda q: bm25.search(q, k=K), "hybrid fused": lambda q: hybrid.search(q, k=K),
             "hybrid glue": glue, "hybrid general": general, "bm25s": bm25s_search}
    clears = [ix.config.analyzer._memo.cache_clear for ix in (bm25, hybrid)]
    return len(cat), texts, calls, lambda: [c() for c in clears]


def main(argv: list[str] | None = None) -> None:
    args = module_args(__doc__, argv, queries=500, rounds=3)
    n_tools, texts, calls, forget = _systems()
    texts = texts[:args.queries]
    lat, loads = idle_and_busy(calls, texts, forget, args.rounds)
    rows = []
    for cond, by_name in lat.items():
        base = np.percentile(by_name["bm25 fields"], 50)
        for name, s in by_name.items():
            p50, p99 = np.percentile(s, 50) * 1e3, np.percentile(s, 99) * 1e3
            rows.append(f"| {cond} | {name} | {p50:.3f} | {p99:.3f} | {p50 / (base * 1e3):.2f} |")
        b = np.percentile(by_name["bm25s"], 50)
        for name in ("hybrid fused", "hybrid glue", "hybrid general"):
            rows.append(f"| {cond} | {name} / bm25s (p50) | | | {np.percentile(by_name[name], 50) / b:.2f} |")
    lines = [*run_header(n_tools, len(texts), K, args.rounds, loads),
             "| condition | system | p50 ms | p99 ms | p50 / bm25 fields |", "|---|---|---|---|---|", *rows]
    emit(lines, args.out)


if __name__ == "__main__":
    main()
