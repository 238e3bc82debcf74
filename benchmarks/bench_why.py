"""What a search with reasons costs (``explain="why"``, what the gateway's ``find_tools``
asks for on every call), against the same search without them, on the 6,417 pooled
tools, idle and busy.

Systems, interleaved query by query (:func:`benchmarks.conftest.interleaved`), one thread,
k = 10, on a BM25 index and on the default (hybrid) index:

* ``plain``: ``index.search(q, k=10)``;
* ``why``: ``index.search(q, k=10, explain="why")`` as it runs now: the engine call
  returns its hits' MFTR terms and the reasons are made from them (``hits.reasons_of``);
* ``why packed``: the same search with that path switched off, so the k hits are packed
  and scored again by the NumPy formula (``search.explain``), the way before it.

Requests that split into steps keep the packed path in both ``why`` systems. Numbers are
reported, never asserted::

    python -m benchmarks.bench_why [--queries 300] [--rounds 2] [--out FILE]
"""

from __future__ import annotations


import numpy as np

from .conftest import emit, idle_and_busy, module_args, run_header

K = 10


def _systems():
    from toolsift import ToolIndex
    from toolsift.presets import preset_config
    import toolsift.search as search_mod

    from .conftest import pooled

    cat, queries = pooled()
    texts = [x.text for x in queries]
    real = search_mod._why_text
    calls = {}
    clears = []
    for preset in ("bm25", "hybrid"):
        index = ToolIndex.build(cat, config=preset_config(preset, threads=1))
        clears.append(index.config.analyzer._memo.cache_clear)

        def packed(q, index=index):
            search_mod._why_text = lambda *a: None
            try:
                return index.search(q, k=K, explain="why")
            finally:
                search_mod._why_text = real

        calls[f"{preset} plain"] = lambda q, index=index: index.search(q, k=K)
        calls[f"{preset} why"] = lambda q, index=index: index.search(q, k=K, explain="why")
        calls[f"{preset} why packed"] = packed
    return len(cat), texts, calls, lambda: [c() for c in clears]


def main(argv: list[str] | None = None) -> None:
    args = module_args(__doc__, argv, queries=300, rounds=2)
    n_tools, texts, calls, forget = _systems()
    texts = texts[:args.queries]
    lat, loads = idle_and_busy(calls, texts, forget, args.rounds)
    rows = []
    for cond, by_name in lat.items():
        for preset in ("bm25", "hybrid"):
            base = np.percentile(by_name[f"{preset} plain"], 50)
            for name in (f"{preset} plain", f"{preset} why", f"{preset} why packed"):
                p50, p99 = np.percentile(by_name[name], 50), np.percentile(by_name[name], 99)
                rows.append(f"| {cond} | {name} | {p50 * 1e3:.3f} | {p99 * 1e3:.3f} | {p50 / base:.2f} |")
    lines = [*run_header(n_tools, len(texts), K, args.rounds, loads),
             "| condition | system | p50 ms | p99 ms | p50 / plain |", "|---|---|---|---|---|", *rows]
    emit(lines, args.out)


if __name__ == "__main__":
    main()
