"""Single-search wall time of the default by how its dense candidates are found, against
BM25 fields and bm25s, on the 6,417 pooled tools, idle and busy.

The pooled catalogue and queries as ``bench_hybrid_fused`` takes them (the first
``--queries`` raw test texts, one-step and multi-step). Each variant below is timed in its
own pass, interleaved query by query (rotating order) with BM25 fields and bm25s only, and
reported against that pass's BM25 fields: timed all in one rotation, a hybrid variant that
always follows a BM25 system meets the process's shared static token table and WordPiece
vocabulary cold while the next one meets them warm, which biased an earlier version of this
benchmark by up to 15% between variants. All one thread, k = 10, ``ToolIndex.search``:

* ``bm25 fields``: ``preset_config("bm25")``;
* ``default (IVF 1/8)``: ``preset_config("hybrid")`` as it ships: the description field's
  candidates from an IVF probe of an eighth of its lists (docs/dense.md, "IVF from a
  thousand documents");
* ``IVF 1/4``: twice the probes (``ivf_nprobe`` = a quarter of the lists);
* ``depth 30``: the default with 30 dense candidates per field (the default before
  2026-11-28; 10 since);
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

from .conftest import emit, module_args, run_header

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
               "depth 30": ToolIndex.build(cat, config=replace(hybrid, dense_candidates=30)),
               "exact scan": ToolIndex.build(cat, config=replace(hybrid, ivf_min_docs=10**12)),
               "no dense candidates": ToolIndex.build(cat, config=replace(hybrid, dense_candidates_from=("parameters",),
                                                                            ivf_min_docs=10**12))}
    calls = {name: (lambda q, ix=ix: ix.search(q, k=K)) for name, ix in indexes.items()}
    clears = [ix.config.analyzer._memo.cache_clear for ix in indexes.values()]
    return len(cat), lists, [x.text for x in queries], calls, bm25s_searcher(cat, K), lambda: [c() for c in clears]


def main(argv: list[str] | None = None) -> None:
    import os

    from .busy import busy
    from .conftest import interleaved

    args = module_args(__doc__, argv, queries=500, rounds=3)
    n_tools, lists, texts, calls, bm25s, forget = _systems()
    texts = texts[:args.queries]
    variants = [n for n in calls if n != "bm25 fields"]
    rows, loads = [], {}
    for cond, n_busy in (("idle", 0), ("busy", 2)):
        loads[cond] = os.getloadavg()[0]
        with busy(n_busy):
            for name in variants:
                trio = {"bm25 fields": calls["bm25 fields"], name: calls[name], "bm25s": bm25s}
                for fn in trio.values():
                    for t in texts[:50]:
                        fn(t)
                lat = interleaved(trio, texts, forget, args.rounds)
                base, b = np.percentile(lat["bm25 fields"], 50), np.percentile(lat["bm25s"], 50)
                p50, p99 = np.percentile(lat[name], 50), np.percentile(lat[name], 99)
                rows.append(f"| {cond} | {name} | {p50 * 1e3:.3f} | {p99 * 1e3:.3f} | {base * 1e3:.3f} | "
                            f"{p50 / base:.2f} | {p50 / b:.2f} |")
    lines = [*run_header(n_tools, len(texts), K, args.rounds, loads),
             f"The description field's IVF: {lists} lists. Each row: its own pass with BM25 fields and bm25s.", "",
             "| condition | system | p50 ms | p99 ms | BM25 fields p50 ms (same pass) | p50 / bm25 fields | "
             "p50 / bm25s |", "|---|---|---|---|---|---|---|", *rows]
    emit(lines, args.out)


if __name__ == "__main__":
    main()
