"""Learn the shipped weights for *structured* queries, leave-one-dataset-out.

A structured query is what a calling LLM sends to ``find_tools``: tool needs (user intent,
tool description, expected response) plus extracted arguments. The input here is the MFTR
authors' LLM-rewritten queries of the four ``mftr-*`` shared sets (the union of each set's
``train_and_test/*/fold_k/test_queries.json``, each with the user's original request, as
``find_tools``' ``request`` carries it: what a calling LLM sends), against the raw tools
(no LLM docs, no feedback examples).
UltraTool has no rewritten queries and is not used.

For each set X (held out):

* every candidate setup (parameters pooled by max share ``lambda`` in {0, .5, 1}; penalty
  learned or off) is trained on two of the other three sets and scored on the third, for
  each choice of the third; the setup with the best mean N@10 there is chosen (the
  penalty and the parameter weight thus get non-zero weight only where training says
  they help);
* that setup is trained on all three other sets -> ``structured-lodo-X.json``. X's
  queries, labels, tools and negatives never touch the choice or the weights.

``structured-default.json``: the setup with the best mean held-out N@10 over the four
LODO runs, trained on all four sets. Training is the existing pairwise logistic loss with
L-BFGS-B (``toolsift.train``): weights bounded >= 0, ``tau`` learned (start .5), ``alpha``
fixed at 15, L2 1e-4 on weights and 1e-3 on the penalty weights; negatives are the top 100
of the untrained model (no penalty), 32 kept per query. A field no training catalogue has
(examples: raw tools carry none) keeps the paper's .25 and the learned weights share the
rest; all weights then sum to 1, with the penalty weights scaled by the same factor (the
one score scale, docs/scoring.md).

With ``--hybrid`` the same is done for the ``hybrid`` preset's fields (description,
response and examples mix BM25 and MiniLM cosine at the BM25 share of the matching raw
hybrid weights file), writing ``hybrid-structured-*.json``. Encoding uses the embedding
cache of ``toolsift eval``.

Every number is N@10 (pytrec_eval) over all queries of the held-out set, whole corpus,
ties broken by the eval's hash of the tool id (``toolsift.evaluate.cold.scores_run``).

Usage: python scripts/train_structured_weights.py [--hybrid] [--cache DIR]
           [--results docs/results/structured-weights.md] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from coldstart_lib import DATA, SHORT

from toolsift import ToolIndex
from toolsift.config import IndexConfig
from toolsift.evaluate.cold import scores_run
from toolsift.evaluate.datasets import MftrDataset
from toolsift.evaluate.metrics import evaluate
from toolsift.kernels.params import (
    COLDSTART_INIT,
    PAPER_PARAMS,
    ScoringParams,
    shipped_weights,
)
from toolsift.schema import Query
from toolsift.train import PairSet, TrainConfig, concat_pairs, make_pairs, train

OUT = Path(__file__).resolve().parents[1] / "src" / "toolsift" / "data" / "weights"
SETS = ("mftr-apibank", "mftr-apigen", "mftr-gorilla-huggingface", "mftr-toolink")
HYBRID_FIELDS = (0, 2, 3)  # description, response, examples; parameters stay BM25
N_NEGATIVES = 32
MINE_DEPTH = 100
#: Candidate setups: (param_max_share, learn the penalty).
SETUPS = tuple((lam, pen) for lam in (0.0, 0.5, 1.0) for pen in (False, True))
TRAIN = {"epochs": 500, "l2": 1e-4, "l2_penalty": 1e-3, "nonnegative": True}
#: The untrained model that mines negatives: the cold-start formula without the penalty.
MINER = replace(COLDSTART_INIT, w_req=0.0, w_opt=0.0)


def structured_queries(ds: MftrDataset) -> list[Query | str]:
    """The rewritten queries as a calling LLM sends them to find_tools (needs, arguments and
    the user's request verbatim); a query the rewrite left without a usable need falls back
    to its raw text."""
    return [q.rewritten if q.rewritten is not None else q.text for q in ds.queries]


def bm25_config() -> IndexConfig:
    """The default index (the ``bm25`` preset) with the untrained formula."""
    return replace(IndexConfig(params=COLDSTART_INIT), threads=0)


def cosine_config() -> IndexConfig:
    """Hybrid description/response/examples fields at BM25 share 0: their cosine part."""
    base = IndexConfig(params=COLDSTART_INIT)
    kinds = {"description": "hybrid", "response": "hybrid", "examples": "hybrid"}
    return replace(base, retrievers=tuple((f, kinds.get(f, r)) for f, r in base.retrievers), hybrid_weight=0.0,
                   threads=0)


def load(name: str, cache: Path | None, hybrid: bool) -> dict:
    """Ids, labels and field scores (raw and structured queries; with ``hybrid`` also the
    cosine parts) of one set, cached under ``cache`` when given."""
    path = cache / f"{name}.{'hybrid' if hybrid else 'bm25'}.pkl" if cache else None
    if path and path.is_file():
        return pickle.loads(path.read_bytes())
    ds = MftrDataset.load(DATA / name)
    qids = [q.id for q in ds.queries]
    out = {"qids": qids, "tids": [t.id for t in ds.raw_tools], "qrels": ds.qrels(),
           "n_rewritten": sum(q.rewritten is not None for q in ds.queries)}
    texts = {"raw": [q.text for q in ds.queries], "st": structured_queries(ds)}
    index = ToolIndex.build(ds.raw_tools, config=bm25_config())
    for k, qs in texts.items():
        out[k] = index.field_scores(qs, query_ids=qids)
    if hybrid:
        from toolsift.evaluate.embcache import eval_encoder_cache

        with eval_encoder_cache():
            index = ToolIndex.build(ds.raw_tools, config=cosine_config())
            for k, qs in texts.items():
                out[f"cos-{k}"] = index.field_scores(qs, query_ids=qids)
    if path:
        path.write_bytes(pickle.dumps(out))
    return out


def mix(bm, cos, h: float):
    """Field scores of the hybrid fields at BM25 share ``h``."""
    base = bm.base.copy()
    for f in HYBRID_FIELDS:
        base[..., f] = h * bm.base[..., f] + (1.0 - h) * cos.base[..., f]
    return replace(bm, base=base)


def ndcg(d: dict, fs, params: ScoringParams) -> float:
    run = scores_run(fs.score(params), d["qids"], d["tids"])
    return evaluate(d["qrels"], run, metrics=("ndcg@10",)).mean["ndcg@10"]


def pairs_of(d: dict, fs) -> PairSet:
    scores = fs.score(MINER)
    tids = d["tids"]
    negatives = {}
    for i, qid in enumerate(d["qids"]):
        top = np.lexsort((np.arange(len(tids)), -scores[i]))[:MINE_DEPTH]
        negatives[qid] = tuple(tids[j] for j in top if tids[j] not in d["qrels"][qid])
    labels = {q: tuple(r) for q, r in d["qrels"].items()}
    return make_pairs(fs, np.arange(len(d["qids"])), labels, negatives, n_negatives=N_NEGATIVES)


def fit(pair_sets: list[PairSet], setup: tuple[float, bool]) -> ScoringParams:
    """Weights of one setup on the given pairs, on the unit scale."""
    lam, pen = setup
    pairs = concat_pairs(pair_sets)
    init = replace(COLDSTART_INIT, param_max_share=lam)
    p = train(pairs, TrainConfig(init=init, penalty=pen, **TRAIN)).params
    # A field no training catalogue has (all-zero feature) got only decay to 0: it keeps
    # the paper's weight for catalogues that have it; the learned fields (and the penalty,
    # whose scale is theirs) share the rest, so the training rankings do not change.
    seen = np.abs(pairs.base).sum(axis=0) > 0
    seen[1] |= bool(np.abs(pairs.param_max).sum() > 0)
    prior = np.asarray(PAPER_PARAMS.weights)
    w = np.asarray(p.weights)
    mass = w[seen].sum()
    if mass <= 0:
        raise RuntimeError(f"setup {setup}: every learned weight is 0")
    f = (1.0 - prior[~seen].sum()) / mass
    w = np.where(seen, w * f, prior)
    out = replace(p, weights=tuple(float(x) for x in w), w_req=p.w_req * f, w_opt=p.w_opt * f,
                  tau=p.tau if pen else PAPER_PARAMS.tau, bias=0.0)
    assert out.on_unit_scale(), out
    return out


def zeroed(p: ScoringParams, *, params: bool, penalty: bool) -> ScoringParams:
    """Ablation: the parameters weight and/or the penalty set to 0 (no re-training)."""
    w = list(p.weights)
    if params:
        w[1] = 0.0
    return replace(p, weights=tuple(w), w_req=0.0 if penalty else p.w_req, w_opt=0.0 if penalty else p.w_opt)


def machine_line() -> str:
    load = os.getloadavg()
    return (f"{platform.node()} ({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}), "
            f"load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} at start, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


def run(kind: str, data: dict, out: Path, write_files: bool) -> dict:
    """LODO training and the report for ``kind`` (``"bm25"`` or ``"hybrid"``)."""
    prefix = "hybrid-" if kind == "hybrid" else ""
    fs, raw_params, h = {}, {}, {}
    for s in SETS:
        d = data[s]
        if kind == "hybrid":
            doc = shipped_weights(f"hybrid-lodo-{s}")
            h[s] = doc["index_config"]["hybrid_weight"]
            fs[s] = {k: mix(d[k], d[f"cos-{k}"], h[s]) for k in ("raw", "st")}
        else:
            doc = shipped_weights(f"lodo-{s}")
            fs[s] = {k: d[k] for k in ("raw", "st")}
        raw_params[s] = doc["params"]
    # Negatives and pairs depend on h through the field scores; the LODO raw weights of
    # hybrid sets differ in h (.5 / .6), so pairs are made per (set, h) on demand.
    pair_cache: dict[tuple[str, float], PairSet] = {}

    def pairs(s: str, hh: float | None) -> PairSet:
        key = (s, -1.0 if hh is None else hh)
        if key not in pair_cache:
            f = fs[s]["st"] if hh is None else mix(data[s]["st"], data[s]["cos-st"], hh)
            pair_cache[key] = pairs_of(data[s], f)
        return pair_cache[key]

    def scored(s: str, hh: float | None):
        return fs[s]["st"] if hh is None else mix(data[s]["st"], data[s]["cos-st"], hh)

    def choose(train_sets: list[str], hh: float | None) -> tuple[tuple[float, bool], dict]:
        """The setup with the best mean N@10 over leave-one-out among ``train_sets``."""
        table = {}
        for setup in SETUPS:
            vals = [ndcg(data[v], scored(v, hh), fit([pairs(t, hh) for t in train_sets if t != v], setup))
                    for v in train_sets]
            table[setup] = float(np.mean(vals))
        best = max(SETUPS, key=lambda k: (table[k], -SETUPS.index(k)))
        return best, table

    report = {}
    for held in SETS:
        t0 = time.perf_counter()
        others = [s for s in SETS if s != held]
        hh = h.get(held)
        setup, table = choose(others, hh)
        params = fit([pairs(s, hh) for s in others], setup)
        d, f = data[held], fs[held]
        res = {
            "raw queries, raw LODO weights (the raw-query default)": ndcg(d, f["raw"], raw_params[held]),
            "structured queries, raw LODO weights": ndcg(d, f["st"], raw_params[held]),
            "structured queries, structured LODO weights": ndcg(d, f["st"], params),
            "... penalty zeroed": ndcg(d, f["st"], zeroed(params, params=False, penalty=True)),
            "... parameters weight and penalty zeroed": ndcg(d, f["st"], zeroed(params, params=True, penalty=True)),
        }
        # The other direction: parameters and penalty forced into the fit on the same
        # training sets (what "turning them on, trained" does to the held-out set).
        forced = {}
        for label, setup_f in (("forced: chosen lambda, penalty learned", (setup[0], True)),
                               ("forced: lambda 0.5, penalty learned", (0.5, True)),
                               ("forced: lambda 0.5, penalty off", (0.5, False))):
            pf = params if setup_f == setup else fit([pairs(s, hh) for s in others], setup_f)
            res[label] = ndcg(d, f["st"], pf)
            forced[label] = pf.to_dict()
        report[held] = {"setup": {"param_max_share": setup[0], "penalty": setup[1]},
                        "selection (mean N@10 on the other sets, leave-one-out)":
                            {f"lambda {k[0]}, penalty {'on' if k[1] else 'off'}": v for k, v in table.items()},
                        "params": params.to_dict(), "trained_on": others, "ndcg@10": res, "forced": forced,
                        "hybrid_weight": hh, "rewritten": d["n_rewritten"], "queries": len(d["qids"])}
        print(f"{kind} {held}: {time.perf_counter() - t0:.0f}s setup {setup} {json.dumps(res)}", file=sys.stderr)
        if write_files:
            write(out / f"{prefix}structured-lodo-{held}.json", params, others, setup, kind, hh, {"held_out": held})
    # The shipped default: the setup with the best mean held-out N@10, trained on all sets.
    by_setup = {}
    for setup in SETUPS:
        by_setup[setup] = float(np.mean([
            ndcg(data[s], scored(s, h.get(s)), fit([pairs(t, h.get(s)) for t in SETS if t != s], setup))
            for s in SETS]))
    best = max(SETUPS, key=lambda k: (by_setup[k], -SETUPS.index(k)))
    hd = shipped_weights(f"{prefix}default")["index_config"]["hybrid_weight"] if kind == "hybrid" else None
    final = fit([pairs(s, hd) for s in SETS], best)
    if write_files:
        write(out / f"{prefix}structured-default.json", final, list(SETS), best, kind, hd)
    report["default"] = {"setup": {"param_max_share": best[0], "penalty": best[1]}, "params": final.to_dict(),
                         "selection (mean held-out N@10 over the four LODO runs)":
                             {f"lambda {k[0]}, penalty {'on' if k[1] else 'off'}": v for k, v in by_setup.items()}}
    return report


def write(path: Path, params: ScoringParams, trained_on, setup, kind: str, h: float | None, extra=None) -> None:
    cfg = bm25_config() if kind == "bm25" else replace(cosine_config(), hybrid_weight=h)
    doc = {"params": params.to_dict(), "trained_on": list(trained_on),
           "queries": "structured: the MFTR authors' LLM-rewritten queries (tool needs + extracted arguments) "
                      "with the original request",
           "docs": "raw tools (no LLM, no feedback examples)",
           "negatives": f"top {MINE_DEPTH} of the untrained model without penalty, first {N_NEGATIVES} kept",
           "setup": {"param_max_share": setup[0], "penalty_learned": setup[1],
                     "chosen_by": "mean N@10 over leave-one-out among the training sets"},
           "made_by": "scripts/train_structured_weights.py",
           "index_config": {k: v for k, v in replace(cfg, threads=1).to_dict().items() if k != "params"}}
    doc.update(extra or {})
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, path)


def markdown(kind: str, report: dict, machine: str, command: str) -> str:
    rows = list(report[SETS[0]]["ndcg@10"])
    lines = [f"### {kind}: N@10, held-out set, hash ties", "",
             f"Command: `{command}`  ", f"Machine: {machine}", "",
             "| | " + " | ".join(SHORT[s] for s in SETS) + " |", "|---" * (len(SETS) + 1) + "|"]
    for r in rows:
        lines.append(f"| {r} | " + " | ".join(f"{report[s]['ndcg@10'][r]:.4f}" for s in SETS) + " |")
    base = rows[0]
    for r in rows[1:]:
        lines.append(f"| ratio: {r} / raw default | " + " | ".join(
            f"{report[s]['ndcg@10'][r] / report[s]['ndcg@10'][base]:.3f}" for s in SETS) + " |")
    lines.append("| setup chosen on the other sets (lambda, penalty) | " + " | ".join(
        f"{report[s]['setup']['param_max_share']}, {'on' if report[s]['setup']['penalty'] else 'off'}"
        for s in SETS) + " |")
    lines.append("| LODO weights (desc, params, resp, ex); tau, w_req, w_opt | " + " | ".join(
        f"{', '.join(f'{w:.3f}' for w in report[s]['params']['weights'])}; {report[s]['params']['tau']:.2f}, "
        f"{report[s]['params']['w_req']:.3f}, {report[s]['params']['w_opt']:.3f}" for s in SETS) + " |")
    d = report["default"]
    lines += ["", (f"Shipped `{'hybrid-' if kind == 'hybrid' else ''}structured-default.json`: setup lambda "
              f"{d['setup']['param_max_share']}, penalty {'on' if d['setup']['penalty'] else 'off'}; "
              f"params `{json.dumps(d['params'])}`"), ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(OUT), help="folder of the weight files")
    ap.add_argument("--hybrid", action="store_true", help="also the hybrid-structured-* files (encodes with MiniLM)")
    ap.add_argument("--cache", default="", help="keep per-set field scores here between runs")
    ap.add_argument("--results", default="", help="write the report (markdown) here")
    ap.add_argument("--json", default="", help="write the full report (JSON) here")
    ap.add_argument("--no-write", action="store_true", help="do not write weight files")
    args = ap.parse_args()
    machine = machine_line()
    cache = Path(args.cache) if args.cache else None
    if cache:
        cache.mkdir(parents=True, exist_ok=True)
    out = Path(args.out)
    t0 = time.perf_counter()
    kinds = ["bm25"] + (["hybrid"] if args.hybrid else [])
    data = {s: load(s, cache, args.hybrid) for s in SETS}
    print(f"field scores in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    reports = {k: run(k, data, out, not args.no_write) for k in kinds}
    command = "python scripts/train_structured_weights.py" + (" --hybrid" if args.hybrid else "")
    text = "\n".join(markdown(k, reports[k], machine, command) for k in kinds)
    text += f"\nTotal time {time.perf_counter() - t0:.0f}s.\n"
    print(text)
    if args.results:
        Path(args.results).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps({k: {s: {kk: (str(vv) if isinstance(vv, tuple) else vv)
                                                       for kk, vv in r.items()} for s, r in rep.items()}
                                               for k, rep in reports.items()}, indent=1, default=str))


if __name__ == "__main__":
    main()
