"""The exact dense candidate scan of a one-step hybrid search, with and without its 4-bit
prefilter (``_core.int8_coarse``, toolsift/int8_coarse.h), on the 6,417 pooled tools,
idle and busy. Numbers are reported, never asserted::

    python -m benchmarks.bench_dense_scan --out docs/results/dense-scan-2026-11-28.md

Two measurements, each interleaving the two variants query by query:

* **in the search**: ``ToolIndex.search`` of the hybrid preset (one thread, k = 10) on the
  pooled raw test queries, ``DenseField.PREFILTER`` on / off; the time of the scan call
  (``kernels.int8.top_trusted``, the dense candidates' top-n) inside each search, and of
  the whole search; BM25 fields and bm25s in the same rounds, for the ratios;
* **the kernel alone**: ``_core.int8_top`` on the index's 6,417 x 384 description matrix
  and the same queries' codes, with 4 MB of other memory touched before each call (as a
  search's other work does: the matrix no longer in L2) and without.
"""

from __future__ import annotations

import os
import platform
import subprocess
import time

import numpy as np

from .busy import busy
from .conftest import emit, interleaved, module_args

K = 10


def _systems():
    """(n_tools, texts, {name: search}, forget, the hybrid index) on the pooled catalogue,
    as bench_hybrid_fused builds them."""

    from toolsift import ToolIndex
    from toolsift.presets import preset_config

    from .conftest import bm25s_searcher, pooled

    cat, queries = pooled()
    texts = [x.text for x in queries]
    bm25 = ToolIndex.build(cat, config=preset_config("bm25", threads=1))
    hybrid = ToolIndex.build(cat, config=preset_config("hybrid", threads=1))
    bm25s_search = bm25s_searcher(cat, K)

    calls = {"bm25 fields": lambda q: bm25.search(q, k=K), "hybrid (prefilter)": lambda q: hybrid.search(q, k=K),
             "hybrid (full scan)": lambda q: hybrid.search(q, k=K), "bm25s": bm25s_search}
    clears = [ix.config.analyzer._memo.cache_clear for ix in (bm25, hybrid)]
    return len(cat), texts, calls, lambda: [c() for c in clears], hybrid


def _search_rounds(calls, texts, forget, rounds, kernel_log, flag_of):
    """Interleaved searches; kernel_log collects the scan times of the running variant."""
    from toolsift.index import dense_field

    def before(name):
        dense_field.PREFILTER = flag_of.get(name, True)
        kernel_log.current = name

    try:
        return interleaved(calls, texts, forget, rounds, before)
    finally:
        dense_field.PREFILTER = True


class _KernelLog:
    """Wraps kernels.int8.top_trusted: the time of each call, by the variant running."""

    def __init__(self):
        from toolsift.kernels import int8 as k8

        self.k8, self.real, self.current, self.times = k8, k8.top_trusted, None, {}

        def timed(*a, **kw):
            t0 = time.perf_counter()
            got = self.real(*a, **kw)
            self.times.setdefault(self.current, []).append(time.perf_counter() - t0)
            return got

        k8.top_trusted = timed

    def take(self):
        got, self.times = {k: np.asarray(v) for k, v in self.times.items()}, {}
        return got


def _kernel_alone(hybrid, texts, n, rounds, rows=None):
    """p50 / p99 µs of int8_top with and without the prefilter on the index's own matrix
    (its first ``rows`` rows if given: evicted only)."""
    import importlib

    from toolsift import Query, _core
    from toolsift.index.dense import freeze
    from toolsift.search.plan import plan_queries

    retrievers = importlib.import_module("toolsift.search.retrievers")
    st, cfg = hybrid._state, hybrid.config
    field = st.dense["description"]
    live, m = field.live_rows()
    coarse = field.coarse()
    codes, scales = m.codes, m.scales
    if rows is not None:
        codes, scales, live = (freeze(np.ascontiguousarray(a[:rows])) for a in (codes, scales, live))
        coarse = _core.int8_coarse(codes, scales)
    q = [retrievers._codes(plan_queries(st, cfg, [Query.from_text(t)]).fields["description"]) for t in texts]
    junk = np.ones(4 << 20, np.uint8)
    out = {}
    for evict in (True,) if rows is not None else (True, False):
        times = {"full scan": [], "prefilter": []}
        for r in range(rounds):
            for i, (qc, qs) in enumerate(q):
                order = ("full scan", "prefilter") if (i + r) % 2 else ("prefilter", "full scan")
                for name in order:
                    if evict:
                        junk += 1
                    t0 = time.perf_counter()
                    _core.int8_top(qc, qs, codes, scales, live, n, coarse=coarse if name == "prefilter" else None)
                    times[name].append(time.perf_counter() - t0)
        out["evicted" if evict else "hot"] = {k: np.asarray(v) for k, v in times.items()}
    return out, coarse


def main(argv: list[str] | None = None) -> None:
    args = module_args(__doc__, argv, queries=500, rounds=2)
    n_tools, texts, calls, forget, hybrid = _systems()
    texts = texts[:args.queries]
    flag_of = {"hybrid (full scan)": False}
    dense_n = max(hybrid.config.dense_candidates, K)
    log = _KernelLog()
    rows, krows, loads = [], [], {}
    for cond, k in (("idle", 0), ("busy", 2)):
        loads[cond] = os.getloadavg()[0]
        with busy(k):
            for fn in calls.values():
                for t in texts[:50]:
                    fn(t)
            log.take()
            lat = _search_rounds(calls, texts, forget, args.rounds, log, flag_of)
            scan = log.take()
            alone, coarse = _kernel_alone(hybrid, texts, dense_n, args.rounds)
        base = np.percentile(lat["bm25 fields"], 50)
        for name, s in lat.items():
            p50, p99 = np.percentile(s, 50) * 1e3, np.percentile(s, 99) * 1e3
            rows.append(f"| {cond} | {name} | {p50:.3f} | {p99:.3f} | {p50 / base / 1e3:.2f} |")
        b = np.percentile(lat["bm25s"], 50)
        for name in ("hybrid (prefilter)", "hybrid (full scan)"):
            rows.append(f"| {cond} | {name} / bm25s (p50) | | | {np.percentile(lat[name], 50) / b:.2f} |")
        full, pre = scan["hybrid (full scan)"], scan["hybrid (prefilter)"]
        krows.append(f"| {cond} | in the search | {np.percentile(full, 50) * 1e6:.1f} | "
                     f"{np.percentile(full, 99) * 1e6:.1f} | {np.percentile(pre, 50) * 1e6:.1f} | "
                     f"{np.percentile(pre, 99) * 1e6:.1f} | {np.percentile(full, 50) / np.percentile(pre, 50):.2f} |")
        for where, t in alone.items():
            f, p = t["full scan"], t["prefilter"]
            krows.append(f"| {cond} | alone, {where} | {np.percentile(f, 50) * 1e6:.1f} | "
                         f"{np.percentile(f, 99) * 1e6:.1f} | {np.percentile(p, 50) * 1e6:.1f} | "
                         f"{np.percentile(p, 99) * 1e6:.1f} | {np.percentile(f, 50) / np.percentile(p, 50):.2f} |")
    sweep = []
    for n_rows in (1000, 2000, 4096):  # where the prefilter starts to pay (DenseField's COARSE_MIN_ROWS)
        t = _kernel_alone(hybrid, texts[:300], dense_n, 1, n_rows)[0]["evicted"]
        f, p = np.percentile(t["full scan"], 50) * 1e6, np.percentile(t["prefilter"], 50) * 1e6
        sweep.append(f"| {n_rows} | {f:.1f} | {p:.1f} | {f / p:.2f} |")
    from toolsift import _core

    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    lines = [f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, int8 path {_core.int8_dot_isa()}, prefilter "
             f"{'on' if _core.int8_coarse_supported() else 'unsupported'}, Python {platform.python_version()}; "
             f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; `uptime` after: {uptime}; "
             f"1-min load before idle / busy: {loads['idle']:.2f} / {loads['busy']:.2f}.",
             f"{n_tools} pooled tools, the first {len(texts)} pooled raw test queries, k = {K}, top-{dense_n} dense "
             f"candidates, {args.rounds} rounds, one thread, interleaved. Prefilter: "
             f"{coarse.nbytes / 1e6:.2f} MB (codebook {coarse.levels}).", "",
             "The scan (µs):", "",
             "| condition | where | full scan p50 | full scan p99 | prefilter p50 | prefilter p99 | full / prefilter |",
             "|---|---|---|---|---|---|---|", *krows, "",
             "The kernel alone on the first rows of the matrix (evicted, idle, 300 queries, µs):", "",
             "| rows | full scan p50 | prefilter p50 | full / prefilter |", "|---|---|---|---|", *sweep, "",
             "Whole searches (ms):", "",
             "| condition | system | p50 ms | p99 ms | p50 / bm25 fields |", "|---|---|---|---|---|", *rows]
    emit(lines, args.out)


if __name__ == "__main__":
    main()
