"""How a multi-step request's per-step scores are combined: the variants measured on a
DEVELOPMENT stress set (seed 1; the reported set is seed 0) before one was kept.

Usage: python scripts/needs_ablation.py [--seed 1] [--n 600] [--data ../shared/data]

Variants (hybrid preset, per-source-set LODO weights, raw requests, k=100, N@10 / R@10):
  onevector    split_steps off: one query vector per request (before issue 34)
  steps        one reading per step (no whole-request reading)
  whole+steps  the whole request as reading 0, then one reading per step; ties in the
               order of reading 0 (search.needs.combine_needs)
  max          a tool's score: the plain max over readings, ordered by it
  shift        each reading's scores shifted so its best candidate scores the best of any
               reading, then the max, ordered by it (the rule until 2026-11-28b)
  ratio        as shift, but each reading's scores scaled (not shifted) to the best one's
  spread       as shift, but each reading's gaps below its best divided by its standard
               deviation over the request's candidates (times the whole request's)
  round-robin  ordered by a tool's best rank in any reading's list (within a round: the
               shifted score): the per-need quota of an interleave; scores the shifted
               ones capped to decrease (kept: search.needs.combine_needs)
  bm25 per step  whole+steps shift, but BM25 too searches and scores each reading alone
               (every reading a raw query of its own; candidates = their union)
  dense half   default-densehalf (BM25's share of the hybrid fields 0)
BM25 fields (``default-bm25``) and bm25s-fulldoc are printed for reference. Prints a table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def _ordered_by(transform):
    """The combination before the per-need quota: each reading's scores transformed, a
    tool's score the max over readings, ordered by it (ties: reading 0's order)."""
    def combine(block):
        b = block.astype(np.float64)
        t = transform(b)
        final = t.max(axis=0)
        order = np.lexsort((-b[0], -final))
        out = np.empty(final.size, np.float32)
        from toolsift.search.needs_reference import strictly_decreasing

        out[order] = strictly_decreasing(final[order].astype(np.float32))
        return out, t.argmax(axis=0)
    return combine


def _plain_max(block):
    return block


def _ratio(block):
    top = block.max(axis=1, keepdims=True)
    return block * (top.max() / np.maximum(top, 1e-9))


def _spread(block):
    # Each reading's gaps below its best in units of its own spread (standard deviation over
    # the request's candidates), mapped onto the whole request's spread (reading 0).
    top = block.max(axis=1, keepdims=True)
    sd = block.std(axis=1, keepdims=True)
    sd = np.where(sd > 0, sd, 1.0)
    return (block - top) * (sd[0] / sd) + top.max()


def _lexical_per_step(st, config, queries, steps, fr, *, k, explain, params):
    """needs.run_steps with every reading (the whole request, each step) a raw query of its
    own in BM25 as well."""
    from toolsift.csr import ranges
    from toolsift.schema import Query
    from toolsift.search.candidates import Candidates, find_candidates, pack
    from toolsift.search.hits import rank
    from toolsift.search.needs import combine_needs
    from toolsift.search.plan import plan_queries
    from toolsift.search.score import score

    plan = plan_queries(st, config, queries)
    steps = [[q.text, *s] for q, s in zip(queries, steps)]
    pplan = plan_queries(st, config, [Query.from_text(t) for s in steps for t in s])
    step_ptr = np.zeros(len(queries) + 1, np.int64)
    np.cumsum([len(s) for s in steps], out=step_ptr[1:])
    pptr, ptool, _ = find_candidates(st, pplan, fr, n=config.candidates, k=k)
    tools = [np.unique(ptool[pptr[step_ptr[q]]:pptr[step_ptr[q + 1]]]) for q in range(len(queries))]
    ptr = np.zeros(len(queries) + 1, np.int64)
    np.cumsum([t.size for t in tools], out=ptr[1:])
    tool = np.concatenate(tools)
    matched = np.ones(tool.size, bool)
    of = np.repeat(np.arange(len(queries)), np.diff(step_ptr))
    sizes = np.diff(ptr)
    exp_ptr = np.zeros(of.size + 1, np.int64)
    np.cumsum(sizes[of], out=exp_ptr[1:])
    cands = pack(st, pplan, fr, exp_ptr, tool[ranges(ptr[of], sizes[of])])
    scores, _ = score(st, cands, params)
    final = np.empty(tool.size, np.float32)
    for q in range(len(queries)):
        m, j0, n = int(sizes[q]), int(step_ptr[q]), int(step_ptr[q + 1] - step_ptr[q])
        lo = int(exp_ptr[j0])
        final[ptr[q]:ptr[q + 1]] = combine_needs(scores[lo:lo + n * m].reshape(n, m))[0]
    view = Candidates(ptr, tool, np.ones(len(queries), np.int64), cands.n_args[step_ptr[:-1]], plan.penalize,
                      cands.need_sims, cands.need_off[:tool.size], cands.ap_sims, cands.ap_off[:tool.size])
    return rank(st, plan, view, final, None, matched, k, params)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--data", default=None)
    ap.add_argument("--only", default="", help="';'-separated variant names (default: all)")
    args = ap.parse_args()

    from toolsift.evaluate import evaluate
    from toolsift.evaluate.embcache import eval_encoder_cache
    from toolsift.evaluate.pooled import load_pseudo, run_pooled
    from toolsift.search import needs
    from toolsift.search.hybrid_text import TextSearch
    from toolsift.search.needs_reference import per_need_shift

    # The variants patch the Python multi-step path (toolsift.search.needs): the one engine
    # call would answer the default's requests without it.
    TextSearch.steps = lambda self, readings, k: None  # type: ignore[method-assign]

    ds = load_pseudo("stress", args.data, seed=args.seed, n=args.n)
    qrels = ds.qrels()
    keep = needs.combine_needs
    shift = _ordered_by(per_need_shift)
    variants = {  # name: (method, combination over the readings, whole request as reading 0)
        "default (BM25 fields)": ("default-bm25", keep, True),
        "bm25s-fulldoc": ("bm25s-fulldoc", keep, True),
        "hybrid onevector": ("default-onevector", keep, True),
        "hybrid steps, max": ("default", _ordered_by(_plain_max), False),
        "hybrid steps, shift": ("default", shift, False),
        "hybrid whole+steps, max": ("default", _ordered_by(_plain_max), True),
        "hybrid whole+steps, shift": ("default", shift, True),
        "hybrid whole+steps, ratio": ("default", _ordered_by(_ratio), True),
        "hybrid whole+steps, spread": ("default", _ordered_by(_spread), True),
        "hybrid whole+steps, round-robin (kept)": ("default", keep, True),
        "hybrid whole+steps, bm25 per step": ("default", "lexical-per-step", True),
        "dense half, onevector": ("default-densehalf-onevector", keep, True),
        "dense half, whole+steps, shift": ("default-densehalf", shift, True),
        "dense half, whole+steps, spread": ("default-densehalf", _ordered_by(_spread), True),
        "dense half, whole+steps, round-robin (kept)": ("default-densehalf", keep, True),
    }
    if args.only:
        variants = {k: v for k, v in variants.items() if k in args.only.split(";")}
    print(f"stress seed {args.seed}: {len(qrels)} requests, {len(ds.tools)} tools")
    print(f"{'variant':44} {'N@10':>7} {'R@10':>7}")
    with eval_encoder_cache():
        for name, (method, combine, whole) in variants.items():
            kept_run = needs.run_steps  # toolsift.search imports it per call
            if combine == "lexical-per-step":
                needs.run_steps, combine = _lexical_per_step, keep
            needs.WHOLE_AS_NEED = whole
            needs.combine_needs = combine
            try:
                if method == "default-densehalf-onevector":
                    from dataclasses import replace

                    from toolsift.evaluate import cold

                    orig = cold.default_config
                    def one_vector(d, hybrid=False, orig=orig):
                        cfg, name = orig(d, hybrid=hybrid)
                        return replace(cfg, split_steps=False), name

                    cold.default_config = one_vector
                    try:
                        res = run_pooled(ds, "default-densehalf")
                    finally:
                        cold.default_config = orig
                else:
                    res = run_pooled(ds, method)
            finally:
                needs.combine_needs = keep
                needs.WHOLE_AS_NEED = True
                needs.run_steps = kept_run
            r = evaluate(qrels, res.run, metrics=("ndcg@10", "recall@10"))
            print(f"{name:44} {r.mean['ndcg@10']:7.4f} {r.mean['recall@10']:7.4f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
