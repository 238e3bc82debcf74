"""Learn the shipped default weights across data sets, and their leave-one-dataset-out twins.

For each of the five shared sets: build the default index over its raw tools, score its
raw queries (no LLM, no feedback examples), and make training pairs from its labels
against hard negatives mined by the *untrained* default model (its top tools that are not
relevant). Then:

* ``lodo-<set>.json``: weights trained on the pairs of the four other sets only; the
  held-out set's queries, labels, tools and negatives never touch them;
* ``default.json``: weights trained on all five sets, shipped as the package default.

Every file records what it was trained on. The script also prints the LODO evaluation
(N@10 / R@10 of the default index with the LODO weights on the held-out set) beside
flat bm25s Full-Doc and a ratel-style flat BM25, and can write it as JSON.

Usage: python scripts/train_default_weights.py [--out src/toolsift/data/weights] [--json lodo.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from coldstart_lib import SETS, SHORT, bm25s_fulldoc, load_set, measure, ratel_like

from toolsift import ToolIndex
from toolsift.config import Bm25Config, IndexConfig
from toolsift.kernels.params import COLDSTART_INIT, PAPER_PARAMS, ScoringParams
from toolsift.train import TrainConfig, concat_pairs, make_pairs, train

OUT = Path(__file__).resolve().parents[1] / "src" / "toolsift" / "data" / "weights"
N_NEGATIVES = 32
MINE_DEPTH = 100


def cold_config(**overrides) -> IndexConfig:
    """The default index configuration with the untrained cold-start formula."""
    return replace(IndexConfig(params=COLDSTART_INIT), **overrides)


def prepare(name: str, cfg: IndexConfig):
    """(set, field scores, pairs) of one data set under ``cfg``."""
    cs = load_set(name)
    index = ToolIndex.build(cs.catalog, config=cfg)
    fs = index.field_scores(cs.texts, query_ids=cs.query_ids)
    scores = fs.score(cfg.params)
    tool_ids = [t.id for t in cs.catalog]
    negatives = {}
    for i, qid in enumerate(cs.query_ids):
        top = np.lexsort((np.arange(len(tool_ids)), -scores[i]))[:MINE_DEPTH]
        rel = cs.qrels[qid]
        negatives[qid] = tuple(tool_ids[j] for j in top if tool_ids[j] not in rel)
    labels = {q: tuple(r) for q, r in cs.qrels.items()}
    pairs = make_pairs(fs, np.arange(len(cs.query_ids)), labels, negatives, n_negatives=N_NEGATIVES)
    return cs, fs, pairs


def fit(pair_sets, init: ScoringParams) -> ScoringParams:
    """Field weights on raw queries. Raw queries have no arguments, so the penalty cannot
    be learned here; untrained, it hurts decomposed queries (docs/coldstart.md), so the
    shipped weights switch it off (``w_req = w_opt = 0``) until ``toolsift train`` fits
    it on labelled structured queries."""
    pairs = concat_pairs(pair_sets)
    res = train(pairs, TrainConfig(init=init, penalty=False, epochs=500, nonnegative=True))
    # A field no training catalogue has (all-zero feature: the examples field, since raw
    # tools carry no example intents) got no signal, only decay to 0. It keeps the
    # paper's untrained weight instead, so catalogues that do have it (the demo, any
    # catalogue with examples or feedback) still use it; the learned fields share the
    # rest. Raw-query rankings do not depend on the weights' scale (no penalty, bias 0),
    # so the sum is fixed at 1, the paper's.
    seen = np.abs(pairs.base).sum(axis=0) > 0
    seen[1] |= bool(np.abs(pairs.param_max).sum() > 0)
    prior = np.asarray(PAPER_PARAMS.weights)
    w = np.asarray(res.params.weights)
    w = np.where(seen, w / w[seen].sum() * (1.0 - prior[~seen].sum()), prior)
    return replace(res.params, weights=tuple(float(x) for x in w), tau=PAPER_PARAMS.tau,
                   w_req=0.0, w_opt=0.0)


def write(path: Path, params: ScoringParams, trained_on, cfg: IndexConfig, extra=None) -> None:
    doc = {"params": params.to_dict(), "trained_on": list(trained_on),
           "queries": "raw text", "docs": "raw tools (no LLM, no feedback examples)",
           "negatives": f"top {MINE_DEPTH} of the untrained default model, first {N_NEGATIVES} kept",
           "index_config": {k: v for k, v in cfg.to_dict().items() if k != "params"}}
    doc.update(extra or {})
    path.write_text(json.dumps(doc, indent=1) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--json", default="")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--k1", type=float, default=None, help="ablation: BM25 k1 (default: the config's)")
    ap.add_argument("--b", type=float, default=None, help="ablation: BM25 b")
    ap.add_argument("--scale", default=None, help="ablation: score scale")
    ap.add_argument("--stopwords", default=None, help="ablation: stop list name")
    ap.add_argument("--card", type=int, default=None, help="ablation: tool card repetitions")
    ap.add_argument("--no-write", action="store_true", help="ablation: do not write weight files")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sets = args.sets.split(",")
    over = {}
    base = IndexConfig()
    if args.k1 is not None or args.b is not None:
        over["bm25"] = Bm25Config(k1=args.k1 if args.k1 is not None else base.bm25.k1,
                                  b=args.b if args.b is not None else base.bm25.b)
    if args.card is not None:
        over["tool_card"] = args.card
    if args.scale:
        over["scale"] = args.scale
    if args.stopwords:
        over["analyzer"] = replace(base.analyzer, stopwords=args.stopwords)
    cfg = cold_config(**over)
    if args.no_write:
        out = Path("/tmp") / "toolsift_weights_ablation"
        out.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    prepared = {s: prepare(s, cfg) for s in sets}
    print(f"prepared in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    report = {}
    for held in sets:
        t1 = time.perf_counter()
        others = [s for s in sets if s != held]
        params = fit([prepared[s][2] for s in others], cfg.params)
        cs, fs, _ = prepared[held]
        res = {"default (LODO weights)": measure(cs, fs.score(params)),
               "default (untrained)": measure(cs, fs.score(cfg.params)),
               "bm25s-fulldoc": measure(cs, bm25s_fulldoc(cs)),
               "ratel-style flat BM25": measure(cs, ratel_like(cs))}
        report[held] = {"params": params.to_dict(), "trained_on": others, "metrics": res}
        write(out / f"lodo-{held}.json", params, others, cfg, {"held_out": held})
        print(f"{held}: {time.perf_counter() - t1:.1f}s {json.dumps(res)}", file=sys.stderr)
    final = fit([prepared[s][2] for s in sets], cfg.params)
    write(out / "default.json", final, sets, cfg)
    print(table(report, sets))
    print("shipped:", json.dumps(final.to_dict()))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


def table(report, sets) -> str:
    rows = list(next(iter(report.values()))["metrics"])
    lines = ["| method | " + " | ".join(f"{SHORT[s]} N@10 / R@10" for s in sets) + " |",
             "|---" * (len(sets) + 1) + "|"]
    for r in rows:
        cells = [f"{report[s]['metrics'][r]['ndcg@10']:.4f} / {report[s]['metrics'][r]['recall@10']:.4f}"
                 for s in sets]
        lines.append(f"| {r} | " + " | ".join(cells) + " |")
    ratio = [report[s]["metrics"]["default (LODO weights)"]["ndcg@10"]
             / report[s]["metrics"]["bm25s-fulldoc"]["ndcg@10"] for s in sets]
    lines.append("| LODO / bm25s-fulldoc N@10 | " + " | ".join(f"{r:.3f}" for r in ratio) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
