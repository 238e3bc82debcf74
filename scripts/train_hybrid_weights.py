"""Learn shipped weights for hybrid fields (``hybrid-default.json``, ``hybrid-lodo-<set>.json``).

The default index with hybrid description/response/examples fields scores a field as
``h``·BM25 (bounded) + (1 − ``h``)·max(cosine, 0), ``h = hybrid_weight``. Its field weights
were the BM25 ones and ``h`` was .5, never fitted. Here, per data set, the BM25 and the
cosine field scores are computed once (a BM25 index and a dense index over the raw tools,
raw queries; no LLM, no feedback); a hybrid field score for any ``h`` is their mix. Then:

* for each held-out set, and each ``h`` of the grid, weights are trained on the other
  sets' pairs (hard negatives mined by the untrained hybrid model), and ``h`` is chosen by
  the mean N@10 *on those training sets*; the held-out set's queries, labels and tools
  never touch the choice or the weights (``hybrid-lodo-<set>.json``);
* ``hybrid-default.json``: the same on all sets.

Query vectors: the shipped files are learned with MiniLM's own query vectors
(``--query-encoder transformer``, the default here, which reproduces them). The ``hybrid``
preset embeds queries with the static table; weights learned with static queries
(``--query-encoder static``) were level on two sets and lower on three held out
(docs/results/coldstart-2026-11-26c.md), so both eval methods keep the transformer-learned
files.

Usage: python scripts/train_hybrid_weights.py [--grid .3,.4,.5,.6] [--cache DIR] [--sets ...]
[--query-encoder static|transformer] [--no-write]
(``--cache`` keeps the per-set field scores between runs; dense encoding is the slow part.)
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from coldstart_lib import SETS, SHORT, load_set
from train_default_weights import MINE_DEPTH, N_NEGATIVES, OUT, fit, write

from toolsift import ToolIndex
from toolsift.config import IndexConfig
from toolsift.presets import preset_config
from toolsift.evaluate.cold import scores_run
from toolsift.evaluate.embcache import eval_encoder_cache
from toolsift.evaluate.metrics import evaluate
from toolsift.kernels.params import COLDSTART_INIT
from toolsift.train import make_pairs

HYBRID_FIELDS = (0, 2, 3)  # description, response, examples; parameters stay BM25


QUERY_ENCODER = "transformer"  # --query-encoder


def hybrid_config(h: float) -> IndexConfig:
    """The ``hybrid`` preset at BM25 share ``h`` with the untrained starting weights, its
    queries embedded by ``QUERY_ENCODER`` (``static``: the table refitted per catalogue)."""
    return preset_config("hybrid", params=COLDSTART_INIT, hybrid_weight=h, query_encoder=QUERY_ENCODER)


def field_scores(name: str, cache: Path | None):
    """(BM25 field scores, cosine field scores) of one set's raw queries on its raw tools."""
    tag = "" if QUERY_ENCODER == "static" else f".{QUERY_ENCODER}"
    path = cache / f"{name}.hybrid{tag}.pkl" if cache else None
    if path and path.is_file():
        return pickle.loads(path.read_bytes())
    cs = load_set(name)
    out = []
    # The evaluation embedding cache: each document is encoded once across both builds
    # and across runs (queries use the static encoder and need no cache).
    with eval_encoder_cache():
        for h in (1.0, 0.0):  # pure BM25 and pure cosine through the hybrid retriever
            index = ToolIndex.build(cs.catalog, config=replace(hybrid_config(h), threads=0))
            out.append(index.field_scores(cs.texts, query_ids=cs.query_ids))
    if path:
        path.write_bytes(pickle.dumps(tuple(out)))
    return tuple(out)


def mix(bm, cos, h: float):
    """Field scores of the hybrid fields at BM25 share ``h``."""
    base = bm.base.copy()
    for f in HYBRID_FIELDS:
        base[..., f] = h * bm.base[..., f] + (1.0 - h) * cos.base[..., f]
    return replace(bm, base=base)


def ndcg(cs, fs, params) -> float:
    run = scores_run(fs.score(params), cs.query_ids, [t.id for t in cs.catalog])
    return evaluate(cs.qrels, run, metrics=("ndcg@10",)).mean["ndcg@10"]


def pairs_of(cs, fs):
    scores = fs.score(COLDSTART_INIT)
    ids = [t.id for t in cs.catalog]
    negatives = {}
    for i, qid in enumerate(cs.query_ids):
        top = np.lexsort((np.arange(len(ids)), -scores[i]))[:MINE_DEPTH]
        negatives[qid] = tuple(ids[j] for j in top if ids[j] not in cs.qrels[qid])
    labels = {q: tuple(r) for q, r in cs.qrels.items()}
    return make_pairs(fs, np.arange(len(cs.query_ids)), labels, negatives, n_negatives=N_NEGATIVES)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--grid", default="0.3,0.4,0.5,0.6,0.7")
    ap.add_argument("--cache", default="")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--query-encoder", choices=("static", "transformer"), default="transformer",
                    help="how queries of the dense fields are embedded while learning (the shipped files: "
                         "transformer; the preset's own: static)")
    args = ap.parse_args()
    global QUERY_ENCODER
    QUERY_ENCODER = args.query_encoder
    sets, grid = args.sets.split(","), [float(x) for x in args.grid.split(",")]
    cache = Path(args.cache) if args.cache else None
    if cache:
        cache.mkdir(parents=True, exist_ok=True)
    cold = {s: load_set(s) for s in sets}
    raw = {s: field_scores(s, cache) for s in sets}
    mixed = {(s, h): mix(*raw[s], h) for s in sets for h in grid}
    pairs = {(s, h): pairs_of(cold[s], mixed[s, h]) for s in sets for h in grid}

    def choose(train_sets):
        best = None
        for h in grid:
            params = fit([pairs[s, h] for s in train_sets], COLDSTART_INIT)
            score = float(np.mean([ndcg(cold[s], mixed[s, h], params) for s in train_sets]))
            if best is None or score > best[0] + 1e-9:
                best = (score, h, params)
        return best

    out = Path(args.out)
    lines = ["| held out | h (chosen on the others) | weights | N@10 held out |", "|---|---|---|---|"]
    for held in sets:
        others = [s for s in sets if s != held]
        score, h, params = choose(others)
        test = ndcg(cold[held], mixed[held, h], params)
        lines.append(f"| {SHORT[held]} | {h} | {[round(w, 3) for w in params.weights]} | {test:.4f} |")
        if not args.no_write:
            write(out / f"hybrid-lodo-{held}.json", params, others, hybrid_config(h), {"held_out": held})
    score, h, params = choose(sets)
    if not args.no_write:
        write(out / "hybrid-default.json", params, sets, hybrid_config(h))
    print("\n".join(lines))
    print("hybrid-default:", h, json.dumps(params.to_dict()))


if __name__ == "__main__":
    main()
