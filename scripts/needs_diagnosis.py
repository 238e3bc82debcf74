"""Why the dense half loses on multi-step requests: the split, the candidate budget per
need, or the combination? Measured on a DEVELOPMENT stress set (seed 1; the reported set
is seed 0), the dense half alone (``default-densehalf``: BM25's share of the hybrid
fields 0, per-source-set LODO weights, raw requests).

Usage: python scripts/needs_diagnosis.py [--seed 1] [--n 600] [--data ../shared/data] [--only a,b]

Variants (N@10 and R@10 over the requests):
  onevector      split_steps off: one vector per request
  splitter       the splitter's steps (toolsift.decompose.split_steps), combined by the
                 per-need quota (search.needs.combine_needs)
  splitter shift the same, combined by the per-need shift alone (the rule before the quota)
  splitter x4    dense_candidates x4 per reading (candidate budget)
  oracle ...     the same three with the parts the generator joined as the steps (a
                 perfect splitter)
  parts alone rr each part searched as a query of its own (the one-step search), the
                 parts' top lists interleaved round-robin: what 10 shared places allow
  one-step       mean R@10 of the parts searched alone, each against its own labels
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _interleave(lists: list[list[str]], depth: int = 100) -> dict[str, float]:
    out: dict[str, float] = {}
    for r in range(depth):
        for lst in lists:
            if r < len(lst) and lst[r] not in out:
                out[lst[r]] = float(depth * 10 - len(out))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--data", default=None)
    ap.add_argument("--method", default="default-densehalf")
    ap.add_argument("--only", default="")
    args = ap.parse_args()

    from toolsift.evaluate import evaluate
    from toolsift.evaluate import cold
    from toolsift.evaluate.embcache import eval_encoder_cache
    from toolsift.evaluate.pooled import PooledDataset, load_pseudo, run_pooled
    from toolsift.search import needs
    from toolsift.search.hybrid_text import TextSearch
    from toolsift.search.needs_reference import per_need_shift

    # The variants patch the Python multi-step path (toolsift.search.needs): the one engine
    # call would answer the default's requests without it.
    TextSearch.steps = lambda self, readings, k: None  # type: ignore[method-assign]

    ds = load_pseudo("stress", args.data, seed=args.seed, n=args.n)
    pooled = {q.id: q for q in load_pseudo("pooled", args.data).queries}
    qrels = ds.qrels()
    oracle = {q.text: [pooled[p].text for p in q.parts] for q in ds.queries}
    real_split = needs.split_steps
    orig_cfg = cold.default_config

    def cfg_with(**kw):
        def f(d, hybrid=False):
            cfg, name = orig_cfg(d, hybrid=hybrid)
            return replace(cfg, **kw), name
        return f

    from needs_ablation import _ordered_by

    keep = needs.combine_needs
    shift = _ordered_by(per_need_shift)

    def oracle_split(t, max_steps=8):
        return oracle.get(t) or real_split(t, max_steps=max_steps)

    variants = {
        "onevector": dict(cfg=dict(split_steps=False)),
        "splitter": dict(),
        "splitter shift": dict(combine=shift),
        "splitter x4": dict(cfg=dict(dense_candidates=120)),
        "oracle": dict(split=oracle_split),
        "oracle shift": dict(split=oracle_split, combine=shift),
        "oracle x4": dict(split=oracle_split, cfg=dict(dense_candidates=120)),
    }
    if args.only:
        variants = {k: v for k, v in variants.items() if k in args.only.split(",")}
    many = {q.id for q in ds.queries if len(q.parts) >= 3}
    print(f"stress seed {args.seed}: {len(qrels)} requests ({len(many)} of 3+ parts), {len(ds.tools)} tools,"
          f" method {args.method}")
    print(f"{'variant':14} {'N@10':>7} {'R@10':>7}", flush=True)
    with eval_encoder_cache():
        for name, v in variants.items():
            needs.split_steps = v.get("split", real_split)
            needs.combine_needs = v.get("combine", keep)
            if "cfg" in v:
                cold.default_config = cfg_with(**v["cfg"])
            try:
                res = run_pooled(ds, args.method)
            finally:
                needs.split_steps, needs.combine_needs, cold.default_config = real_split, keep, orig_cfg
            r = evaluate(qrels, res.run, metrics=("ndcg@10", "recall@10"))
            print(f"{name:14} {r.mean['ndcg@10']:7.4f} {r.mean['recall@10']:7.4f}", flush=True)
        # The parts searched alone.
        part_ids = list(dict.fromkeys(p for q in ds.queries for p in q.parts))
        parts = PooledDataset("parts", ds.tools, tuple(pooled[p] for p in part_ids))
        res = run_pooled(parts, args.method)
        one = evaluate(parts.qrels(), res.run, metrics=("recall@10",))
        ranked = {qid: sorted(docs, key=lambda d: -docs[d]) for qid, docs in res.run.items()}
        inter = {q.id: _interleave([ranked.get(p, []) for p in q.parts]) for q in ds.queries}
        r = evaluate(qrels, inter, metrics=("ndcg@10", "recall@10"))
        print(f"{'parts alone rr':14} {r.mean['ndcg@10']:7.4f} {r.mean['recall@10']:7.4f}")
        print(f"{'one-step':14} {'':7} {one.mean['recall@10']:7.4f}  (the {len(part_ids)} parts, each alone)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
