"""N@10 at k=10 of the default on the pooled 6,417 tools and the multi-step stress set by
dense candidate depth (``IndexConfig.dense_candidates``), each query scored with its
source set's leave-one-dataset-out hybrid weights (as ``toolsift eval pooled`` does, but
searching at k=10, where the depth matters, instead of the eval's k=100). Raw tools, raw
queries, static query vectors, no LLM, no labels, no feedback.

Usage: python scripts/dense_depth_pooled.py [--depths 30,10] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace

from toolsift import ToolIndex
from toolsift.evaluate.cold import default_config, tie_keys
from toolsift.evaluate.metrics import evaluate
from toolsift.evaluate.pooled import load_pseudo


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--depths", default="30,10")
    ap.add_argument("--data", default=os.environ.get("TOOLSIFT_DATA", "../shared/data"))
    args = ap.parse_args()
    sets = [load_pseudo("pooled", args.data), load_pseudo("stress", args.data)]
    keys = dict(zip((t.id for t in sets[0].tools), tie_keys([t.id for t in sets[0].tools])))
    for depth in (int(d) for d in args.depths.split(",")):
        for ds in sets:
            run = {}
            for src in dict.fromkeys(q.source for q in ds.queries):
                base, _ = default_config(src, hybrid=True)
                index = ToolIndex.build(ds.tools, config=replace(base, dense_candidates=depth, threads=0))
                group = [q for q in ds.queries if q.source == src]
                for q, hits in zip(group, index.search_batch([q.text for q in group], k=10)):
                    hits = sorted(hits, key=lambda h: (-h.score, keys[h.id]))
                    run[q.id] = {h.id: float(10 - i) for i, h in enumerate(hits)}
            qrels = {q.id: {label: 1 for label in q.labels} for q in ds.queries}
            print(f"depth {depth} {ds.name} ({len(ds.queries)} queries): {evaluate(qrels, run, ['ndcg@10'])}", flush=True)


if __name__ == "__main__":
    main()
