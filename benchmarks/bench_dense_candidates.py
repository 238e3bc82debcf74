"""Single-search wall time of the default by how its dense candidates are found, against
BM25 fields and bm25s, on the 6,417 pooled tools, idle and busy.

The pooled catalogue and queries as ``bench_hybrid_fused`` takes them (the first
``--queries`` raw test texts, one-step and multi-step). Systems, all one thread, k = 10,
``ToolIndex.search``, interleaved query by query with a rotating order:

* ``bm25 fields``: ``preset_config("bm25")``;
* ``default (IVF 1/8)``: ``preset_config("hybrid")`` as it ships: the description field's
  candidates from an IVF probe of an eighth of its lists (docs/dense.md, "IVF from a
  thousand documents");
* ``IVF 1/4``: twice the probes (``ivf_nprobe`` = a quarter of the lists);
* ``exact scan``: no IVF (the default before 2026-11-28): every description row's 4-bit
  code read, the prefilter's survivors in int8;
* ``no dense candidates``: ``dense_candidates_from=("parameters",)``: BM25's candidates
  only, each hybrid field still scoring them with its cosine (the floor of what finding
  dense candidates can cost);
* ``bm25s``: one flat document per tool, as ``bench_peers`` drives it.

Busy: two CPU-spinning processes (:func:`benchmarks.busy.busy`). Numbers are reported,
never asserted::

    python -m benchmarks.bench_dense_candidates --out docs/results/ivf-default-speed.md
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .conftest import emit, idle_and_busy, module_args, run_header

K = 10


def _systems():
    from toolsift import ToolIndex
    from toolsift.presets import preset_config

    from .conftest import bm25s_searcher, pooled

    cat, queries = pooled()
    hybrid = preset_config("hybrid", threads=1)
    default = ToolIndex.build(cat, config=hybrid)
    lists = default._state.dense["description"].ivf.n_lists
    indexes = {"bm25 fields": ToolIndex.build(cat, config=preset_config("bm25", threads=1)),
               "default (IVF 1/8)": default,
               "IVF 1/4": ToolIndex.build(cat, config=replace(hybrid, ivf_nprobe=-(-lists // 4))),
               "exact scan": ToolIndex.build(cat, config=replace(hybrid, ivf_min_docs=10**12)),
               "no dense candidates": ToolIndex.build(cat, config=replace(hybrid, dense_candidates_from=("parameters",),
                                                                            ivf_min_docs=10**12))}
    calls = {name: (lambda q, ix=ix: ix.search(q, k=K)) for name, ix in indexes.items()}
    calls["bm25s"] = bm25s_searcher(cat, K)
    clears = [ix.config.analyzer._memo.cache_clear for ix in indexes.values()]
    return len(cat), lists, [x.text for x in queries], calls, lambda: [c() for c in clears]


def main(argv: list[str] | None = None) -> None:
    args = module_args(__doc__, argv, queries=500, rounds=3)
    n_tools, lists, texts, calls, forget = _systems()
    texts = texts[:args.queries]
    lat, loads = idle_and_busy(calls, texts, forget, args.rounds)
    rows = []
    for cond, by_name in lat.items():
        base = np.percentile(by_name["bm25 fields"], 50)
        b = np.percentile(by_name["bm25s"], 50)
        for name, s in by_name.items():
            p50, p99 = np.percentile(s, 50), np.percentile(s, 99)
            rows.append(f"| {cond} | {name} | {p50 * 1e3:.3f} | {p99 * 1e3:.3f} | {p50 / base:.2f} | {p50 / b:.2f} |")
    lines = [*run_header(n_tools, len(texts), K, args.rounds, loads),
             f"The description field's IVF: {lists} lists.", "",
             "| condition | system | p50 ms | p99 ms | p50 / bm25 fields | p50 / bm25s |",
             "|---|---|---|---|---|---|", *rows]
    emit(lines, args.out)


if __name__ == "__main__":
    main()
