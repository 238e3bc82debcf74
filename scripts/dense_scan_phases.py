"""One-step hybrid searches on the fused path with the dense scan's 4-bit prefilter on
and off (``dense_field.PREFILTER``), stage by stage: the plan and the dense candidates
(``plan_queries`` + ``fused_hybrid._dense_candidates``: the exact int8 top-30 scan), and
the engine call (``FusedSearcher.search_hybrid``). Wall time p50 in µs over the pooled
raw test queries that do not split into steps, the two variants interleaved query by
query, another search run between any two measured ones (its work evicts the scan's rows
from L2, as in a service).

Run: ``TOOLSIFT_DATA=../shared/data python scripts/dense_scan_phases.py [N] [ROUNDS]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(n: int, rounds: int) -> None:
    from benchmarks.conftest import SETS, _load
    from toolsift import Catalog, Query, ToolIndex
    from toolsift.index import dense_field
    from toolsift.kernels.launch import using_threads
    from toolsift.presets import preset_config
    from toolsift.search import fused_hybrid as fh
    from toolsift.search import retrievers
    from toolsift.search.needs import request_steps
    from toolsift.search.plan import plan_queries

    tools, texts = [], []
    for ds in SETS:
        t, q = _load(ds)
        tools.extend(t)
        texts.extend(x.text for x in q)
    ix = ToolIndex.build(Catalog(tools, name="mftr-all"), config=preset_config("hybrid", threads=1))
    st, cfg = ix._state, ix.config
    fr = retrievers(st, cfg)
    one = [t for t in texts[:n] if request_steps(st, cfg, [Query.from_text(t)]) == [None]]
    res = {f: {"plan + dense candidates": [], "engine call": [], "both": []} for f in (False, True)}
    clock = time.perf_counter
    for t in one[:50]:
        ix.search(t, k=10)
    for r in range(rounds):
        for i, t in enumerate(one):
            for flag in ((True, False) if (i + r) % 2 else (False, True)):
                dense_field.PREFILTER = flag
                ix.search(one[(i * 7 + r) % len(one)], k=10)  # other work between
                with using_threads(1):
                    t0 = clock()
                    plan = plan_queries(st, cfg, [Query.from_text(t)])
                    dense = fh._dense_candidates(plan, fr, cfg.candidates, 10)
                    t1 = clock()
                    need = [plan.fields[f].terms for f in fh._NEED_FIELDS]
                    par = plan.fields["parameters"]
                    specs = [fh._dense_spec(plan, f, fr[f]) for f in fh._NEED_FIELDS]
                    t2 = clock()
                    fh.searcher(st).search_hybrid(
                        [x.terms for x in need], [x.offsets for x in need], plan.need_ptr, par.terms.terms,
                        par.terms.offsets, plan.arg_ptr, plan.penalize, fh._params_tuple(cfg.params),
                        cfg.candidates, 10, cfg.scale, 1, specs, dense)
                    t3 = clock()
                res[flag]["plan + dense candidates"].append(t1 - t0)
                res[flag]["engine call"].append(t3 - t2)
                res[flag]["both"].append((t1 - t0) + (t3 - t2))
    print(f"{len(one)} one-step queries x {rounds} rounds")
    print("| stage | full scan p50 µs | prefilter p50 µs |\n|---|---|---|")
    for stage in res[False]:
        print(f"| {stage} | {np.median(res[False][stage]) * 1e6:.1f} | {np.median(res[True][stage]) * 1e6:.1f} |")
    dense_field.PREFILTER = True


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 600, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
