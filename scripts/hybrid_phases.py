"""Where a one-step hybrid search's time goes on the fused hybrid path: wall time per
stage, p50 over the pooled raw test queries that do not split into steps.

Builds the ``hybrid`` preset over the 6,417 pooled mftr tools (one thread; the embedding
cache makes it seconds), warms up, then for each of the first ``N`` pooled raw queries
(two passes) times ``ToolIndex.search`` whole, the splitter (``request_steps``), and for
one-step requests ``plan_queries`` (analysis, static embedding, int8 codes), the dense
candidates (``fused_hybrid._dense_candidates``: one exact int8 scan), the engine call
(``FusedSearcher.search_hybrid``) and the hits' evidence and wrapping.

Run: ``TOOLSIFT_DATA=../shared/data python scripts/hybrid_phases.py [N]`` (default 600).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(n: int) -> None:
    from benchmarks.conftest import SETS, _load
    from toolsift import Catalog, Query, ToolIndex
    from toolsift.kernels.launch import using_threads
    from toolsift.presets import preset_config
    from toolsift.search import fused_hybrid as fh
    from toolsift.search import retrievers
    from toolsift.search.evidence import hit_evidence
    from toolsift.search.hits import _plain_hit
    from toolsift.search.needs import request_steps
    from toolsift.search.retrievers import dense_half
    from toolsift.search.plan import plan_queries

    tools, texts = [], []
    for ds in SETS:
        t, q = _load(ds)
        tools.extend(t)
        texts.extend(x.text for x in q)
    ix = ToolIndex.build(Catalog(tools, name="mftr-all"), config=preset_config("hybrid", threads=1))
    st, cfg = ix._state, ix.config
    fr = retrievers(st, cfg)
    stages: dict[str, list[float]] = {k: [] for k in ("search (all)", "request_steps", "plan_queries",
                                                      "dense candidates", "search_hybrid", "evidence + hits")}
    c = time.perf_counter
    for t in texts[:100]:
        ix.search(t, k=10)
    for _ in range(2):
        for t in texts[:n]:
            t0 = c()
            ix.search(t, k=10)
            stages["search (all)"].append(c() - t0)
            q = Query.from_text(t)
            t0 = c()
            steps = request_steps(st, cfg, [q])
            stages["request_steps"].append(c() - t0)
            if steps != [None]:
                continue
            with using_threads(1):
                t0 = c()
                plan = plan_queries(st, cfg, [q])
                stages["plan_queries"].append(c() - t0)
                t0 = c()
                extra = fh._dense_candidates(plan, fr, cfg.candidates, 10)
                stages["dense candidates"].append(c() - t0)
                need = [plan.fields[f].terms for f in fh._NEED_FIELDS]
                par = plan.fields["parameters"]
                specs = [fh._dense_spec(plan, f, fr[f]) for f in fh._NEED_FIELDS]
                t0 = c()
                ptr, tool, score, found, lexical, cos = fh.searcher(st).search_hybrid(
                    [x.terms for x in need], [x.offsets for x in need], plan.need_ptr, par.terms.terms,
                    par.terms.offsets, plan.arg_ptr, plan.penalize, fh._params_tuple(cfg.params), cfg.candidates,
                    10, cfg.scale, 1, specs, extra)
                stages["search_hybrid"].append(c() - t0)
                t0 = c()
                found = hit_evidence(found, lexical, cos, [dense_half(fr[f]) for f in fh._NEED_FIELDS])
                [_plain_hit(st.catalog[i], s, r + 1, m, None)
                 for r, (i, s, m) in enumerate(zip(tool.tolist(), score.tolist(), found))]
                stages["evidence + hits"].append(c() - t0)
    for name, v in stages.items():
        print(f"| {name} | {len(v)} | {np.median(v) * 1e6:.1f} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 600)
