"""Paired randomization test of two TREC runs on the same queries (two-sided).

Usage::

    python scripts/paired_test.py QRELS RUN_A RUN_B [--metric ndcg@10] [--permutations 10000]
        [--seed 0] [--gold-count 1|2|3+]

QRELS is ``qid 0 doc rel`` lines (``toolsift eval --runs DIR`` writes ``DIR/<set>.qrels``
beside one run file per method). Per query, the metric of each run is computed with
:func:`toolsift.evaluate.evaluate` (pytrec_eval; a query a run leaves out scores 0); the
statistic is the mean per-query difference B - A. Under the null hypothesis each
difference's sign is arbitrary, so each permutation flips every sign with probability
1/2 (seeded NumPy generator); p = (1 + #{|mean permuted| >= |mean observed|}) /
(1 + permutations). ``--gold-count`` restricts to queries with that many relevant tools.
Prints one line: n, mean A, mean B, difference, p.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for ln in path.read_text(encoding="utf-8").splitlines():
        parts = ln.split()
        if len(parts) == 4:
            out.setdefault(parts[0], {})[parts[2]] = int(parts[3])
    return out


def paired_randomization(a: np.ndarray, b: np.ndarray, *, permutations: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of mean(b - a) under random sign flips of the differences."""
    d = np.asarray(b, np.float64) - np.asarray(a, np.float64)
    observed = abs(d.mean())
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, permutations, 1000):  # blocks keep the sign matrix small
        m = min(1000, permutations - start)
        signs = rng.integers(0, 2, size=(m, d.size), dtype=np.int8) * 2 - 1
        hits += int((np.abs(signs @ d / d.size) >= observed - 1e-12).sum())
    return (1 + hits) / (1 + permutations)


def gold_bucket(rel: dict[str, int]) -> str:
    n = sum(1 for v in rel.values() if v > 0)
    return "1" if n == 1 else "2" if n == 2 else "3+"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("qrels", type=Path)
    ap.add_argument("run_a", type=Path)
    ap.add_argument("run_b", type=Path)
    ap.add_argument("--metric", default="ndcg@10")
    ap.add_argument("--permutations", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gold-count", choices=("1", "2", "3+"), default=None)
    args = ap.parse_args(argv)

    from toolsift.evaluate import evaluate, read_trec_run

    qrels = read_qrels(args.qrels)
    if args.gold_count:
        qrels = {q: r for q, r in qrels.items() if gold_bucket(r) == args.gold_count}
    if not qrels:
        print("no queries", file=sys.stderr)
        return 2
    runs = [read_trec_run(p) for p in (args.run_a, args.run_b)]
    res = [evaluate(qrels, r, metrics=(args.metric,)) for r in runs]
    qids = sorted(qrels)
    a = np.array([res[0].per_query[q][args.metric] for q in qids])
    b = np.array([res[1].per_query[q][args.metric] for q in qids])
    p = paired_randomization(a, b, permutations=args.permutations, seed=args.seed)
    print(f"n={len(qids)} {args.metric} A={a.mean():.4f} B={b.mean():.4f} B-A={b.mean() - a.mean():+.4f} "
          f"p={p:.4f} ({args.permutations} sign flips, seed {args.seed}; A={args.run_a.name} B={args.run_b.name})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
