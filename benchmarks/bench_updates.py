"""Incremental updates against a full rebuild, on the ~6,400-tool catalogue."""

from __future__ import annotations

import time

from toolsift import Catalog, ToolIndex

from .conftest import report


def test_add_ten_tools_vs_rebuild(benchmark, combined):
    tools, _ = combined
    base, extra = list(tools)[:-10], list(tools)[-10:]

    def rebuild():
        return ToolIndex.build(Catalog(base + extra))

    t0 = time.perf_counter()
    rebuild()
    t_full = time.perf_counter() - t0

    def setup():
        index = ToolIndex.build(Catalog(base))
        return (index,), {}

    def add(index):
        index.add_tools(extra)

    benchmark.pedantic(add, setup=setup, rounds=3, iterations=1)
    t_add = benchmark.stats["median"]
    report(f"add 10 tools to {len(base)}: {t_add * 1e3:.1f} ms vs full rebuild {t_full * 1e3:.1f} ms "
           f"({t_full / t_add:.1f}x)")
