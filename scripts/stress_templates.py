"""The stress set per joining template: how often split_steps finds the steps, and N@10
of three runs written by ``toolsift eval stress --runs RUNS``.

Usage: python scripts/stress_templates.py RUNS [--data ../shared/data] [--seed 0]
Columns: requests, requests split into exactly their number of parts, requests split into
two or more steps, N@10 of default-bm25 (BM25 fields), default (hybrid), default-onevector.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from paired_test import read_qrels


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", type=Path)
    ap.add_argument("--data", default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from toolsift.decompose import split_steps
    from toolsift.evaluate import evaluate, read_trec_run
    from toolsift.evaluate.pooled import load_pseudo
    from toolsift.search.needs import MAX_STEPS

    ds = load_pseudo("stress", args.data, seed=args.seed)
    qrels = read_qrels(args.runs / "stress.qrels")
    methods = ("default-bm25", "default", "default-onevector")
    res = {m: evaluate(qrels, read_trec_run(args.runs / f"stress.{m}.run"), metrics=("ndcg@10",)) for m in methods}
    by = collections.defaultdict(list)
    for q in ds.queries:
        by[q.template].append(q)
    print(f"{'template':16} {'n':>4} {'steps=parts':>11} {'steps>=2':>8} {'BM25':>7} {'hybrid':>7} {'1-vector':>8}")
    for t, qs in sorted(by.items()):
        ns = [len(split_steps(q.text, max_steps=MAX_STEPS)) for q in qs]
        exact = sum(n == len(q.parts) for n, q in zip(ns, qs))
        multi = sum(n >= 2 for n in ns)
        m = [np.mean([res[k].per_query[q.id]["ndcg@10"] for q in qs]) for k in methods]
        print(f"{t:16} {len(qs):4d} {exact:11d} {multi:8d} {m[0]:7.4f} {m[1]:7.4f} {m[2]:8.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
