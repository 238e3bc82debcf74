"""``toolsift eval`` and ``toolsift train``: the command-line front of :mod:`toolsift.evaluate`.

Kept out of :mod:`toolsift.cli` (as :mod:`toolsift.cli_batch` and :mod:`toolsift.usage.cli`
are): the main parser registers the two commands with :func:`add_commands` and dispatches
to the handlers it returns. Only argparse is imported here; the evaluation modules (and the
compiled kernels behind them) load when a command runs.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, TextIO

from ..errors import ToolsiftError

__all__ = ["add_commands"]


def add_commands(sub) -> dict:
    """Add ``eval`` and ``train`` to the main parser's subparsers ``sub``; returns
    ``{name: handler}``."""
    ev = sub.add_parser("eval", help="evaluate methods on a benchmark folder (mftr-* or ultratool)")
    ev.add_argument("dataset", help="benchmark folder, e.g. ../shared/data/mftr-apibank or ../shared/data/ultratool; "
                                    "or 'pooled' (the four mftr-* sets' tools and queries pooled) or 'stress' (seeded "
                                    "multi-step requests over the pooled tools); see docs/evaluation.md")
    ev.add_argument("--data", metavar="DIR", default=None,
                    help="folder of the shared sets for 'pooled' and 'stress' (default $TOOLSIFT_DATA, else ../shared/data)")
    ev.add_argument("--seed", type=int, default=0, help="generator seed of 'stress' (default 0, the reported set)")
    ev.add_argument("--split-by-gold-count", action="store_true",
                    help="also report the queries with 1, 2 and 3+ relevant tools separately")
    ev.add_argument("--method", default=None,
                    help="comma-separated methods (mftr-*: fulldoc,reproduce,mftr,mftr-nopenalty,mftr-mean,mftr-rules,"
                         "llm-free; default fulldoc,reproduce,mftr,llm-free. ultratool: plain,decomposed. Both: the "
                         "cold-start default (the default preset, hybrid),default-complete,default-bm25 (preset bm25: BM25 fields),bm25s-fulldoc,dense-fulldoc,peer-ratel,peer-toolpicker,"
                         "peer-dehydrator,peer-langchain; all but the last three join the default list)")
    ev.add_argument("--retriever", choices=("bm25", "minilm", "hybrid"), default="bm25",
                    help="field retrievers: bm25, minilm (dense, all-MiniLM-L6-v2 ONNX int8) or hybrid "
                         "(BM25 + dense for description/response/examples, BM25 for parameters)")
    ev.add_argument("--encoder", default=None, metavar="DIR",
                    help="encoder directory (model.onnx + tokenizer.json) for dense fields, e.g. "
                         "one written by export-encoder; default the installed int8 MiniLM")
    ev.add_argument("--docs", choices=("auto", "authors", "rules"), default="auto",
                    help="tool docs for mftr: the authors' LLM-standardized ones (apibank) or rule-based")
    ev.add_argument("--no-feedback", action="store_true",
                    help="no example intents from training-fold queries (document expansion off)")
    ev.add_argument("--rewrite-only", action="store_true",
                    help="structured methods send the LLM rewrite without the user's request (by default a "
                         "structured query carries the request too, as find_tools' 'request' does)")
    ev.add_argument("--json", action="store_true", help='print {method: {"ndcg@10": x, ...}} as JSON')
    ev.add_argument("--plot", metavar="FILE.png", help="write Recall@K curves per method")
    ev.add_argument("--runs", metavar="DIR", help="write one TREC run file per method into DIR")
    ev.add_argument("--quiet", action="store_true", help="no progress bars")
    ev.add_argument("--no-embed-cache", action="store_true",
                    help="do not read or write the on-disk embedding cache (~/.cache/toolsift/embeddings or "
                         "$TOOLSIFT_EMBED_CACHE_DIR); texts are still encoded once per run")

    tr = sub.add_parser("train", help="learn MFTR weights on a benchmark folder and save a ready index")
    tr.add_argument("dataset", help="mftr-* benchmark folder")
    tr.add_argument("out", help="index directory to write, with the learned parameters in its manifest")
    tr.add_argument("--docs", choices=("auto", "authors", "rules"), default="auto")
    tr.add_argument("--queries", choices=("rewritten", "raw"), default="rewritten",
                    help="train for structured (LLM-rewritten) queries or plain text")
    tr.add_argument("--no-feedback", action="store_true", help="no example intents from the queries")
    tr.add_argument("--quiet", action="store_true", help="no progress bars")
    return {"eval": _cmd_eval, "train": _cmd_train}


def _cmd_eval(args: argparse.Namespace, out: TextIO) -> int:
    from ..extras import require_extra

    # Checked up front: the metrics run only after every method has.
    require_extra("pytrec_eval", extra="eval", feature="toolsift eval")
    from . import MftrDataset, UltraToolDataset, evaluate, write_trec_run
    from .methods import METHODS, MethodUnavailable, run_method
    from .embcache import eval_encoder_cache
    from .report import format_table, plot_recall
    from .ultratool import ULTRATOOL_METHODS, ULTRATOOL_METRICS, run_ultratool
    from .cold import BASELINE_METHODS, COLD_METHODS, canonical_method

    from .pooled import POOLED_SETS, PSEUDO_DATASETS, load_pseudo, run_pooled

    root = Path(args.dataset)
    pseudo = args.dataset in PSEUDO_DATASETS and not root.exists()
    ds: Any  # a pooled, UltraTool or MFTR data set, run by its own runner below
    metrics: tuple[str, ...]
    if not pseudo:
        _check_dataset_folder(root)
    ultra = not pseudo and (root / "data" / "English-dataset").is_dir()
    if pseudo:
        ds = load_pseudo(args.dataset, args.data, seed=args.seed)
        methods = _split(args.method) or ["default", "default-bm25", "bm25s-fulldoc"]
        metrics = ("ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "ndcg@20", "recall@1", "recall@5",
                   "recall@10", "recall@20", "mrr", "completeness@10")
    elif ultra:
        ds = UltraToolDataset.load(root)
        methods = _split(args.method) or list(ULTRATOOL_METHODS + BASELINE_METHODS)
        metrics = ULTRATOOL_METRICS
    else:
        ds = MftrDataset.load(root)
        methods = _split(args.method) or ["fulldoc", "reproduce", "mftr", "llm-free", *BASELINE_METHODS]
        metrics = ("ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "ndcg@20", "recall@1", "recall@5",
                   "recall@10", "recall@20", "mrr", "completeness@10")
    known = COLD_METHODS if pseudo else (ULTRATOOL_METHODS if ultra else METHODS) + COLD_METHODS
    methods = list(dict.fromkeys(canonical_method(m) for m in methods))  # old names: today's methods
    bad = [m for m in methods if m not in known]
    if bad:
        raise ToolsiftError(f"unknown method(s) {', '.join(bad)} for {ds.name} (methods: {', '.join(known)})")
    results, seconds, curves, skipped, runs = {}, {}, {}, {}, {}
    bar = methods if args.quiet else _tqdm(methods, "methods")
    qrels = ds.qrels()
    # Every method, setup and fold encodes through one cache: each text once per run, and
    # from disk when an earlier run encoded it (the same vectors, bit for bit).
    with eval_encoder_cache(disk=not args.no_embed_cache):
        for m in bar:
            try:
                if pseudo:
                    res = run_pooled(ds, m, encoder=args.encoder)
                elif ultra:
                    res = run_ultratool(ds, m, encoder=args.encoder)
                else:
                    res = run_method(ds, m, docs=args.docs, feedback=not args.no_feedback,
                                     retriever=args.retriever, encoder=args.encoder, progress=not args.quiet,
                                     request=not args.rewrite_only)
            except MethodUnavailable as exc:
                skipped[m] = str(exc)
                continue
            all_metrics = tuple(dict.fromkeys(metrics + tuple(f"recall@{k}" for k in range(1, 21))))
            results[m] = evaluate(qrels, res.run, metrics=all_metrics)
            runs[m] = res.run
            seconds[m] = res.seconds
            curves[m] = [results[m].mean[f"recall@{k}"] for k in range(1, 21)]
            if args.runs:
                Path(args.runs).mkdir(parents=True, exist_ok=True)
                write_trec_run(res.run, Path(args.runs) / f"{ds.name}.{m}.run", tag=f"toolsift-{m}")
    if args.runs:
        write_qrels(qrels, Path(args.runs) / f"{ds.name}.qrels")
    if args.json:
        doc: dict[str, dict[str, Any]] = {m: {k: r.mean[k] for k in metrics} for m, r in results.items()}
        if args.split_by_gold_count:
            for label, sub in gold_count_subsets(qrels).items():
                for m in results:
                    doc[m][f"gold {label}"] = {k: v for k, v in evaluate(sub, runs[m], metrics=metrics).mean.items()}
        json.dump(doc, out, indent=2)
        out.write("\n")
    else:
        print(format_table(results, metrics, seconds=seconds,
                           title=f"{ds.name}: {len(qrels)} queries, {args.retriever}, pooled over all test queries"), file=out)
        if args.split_by_gold_count:
            for label, sub in gold_count_subsets(qrels).items():
                part = {m: evaluate(sub, runs[m], metrics=metrics) for m in results}
                print(format_table(part, metrics, title=f"{ds.name}, queries with {label} relevant tools: {len(sub)}"),
                      file=out)
        if pseudo:
            print(f"{ds.name}: {len(ds.tools)} pooled tools of {', '.join(POOLED_SETS)}; trained methods score each "
                  "query with the leave-one-dataset-out weights of its source set ([hybrid-]lodo-<set>), which never "
                  "saw it", file=out)
        for m, why in skipped.items():
            print(f"{m}: skipped: {why}", file=out)
        from .cold import STRUCTURED_METHODS

        cold = [m for m in results if m in COLD_METHODS and m not in STRUCTURED_METHODS]
        if cold:
            print(f"cold start ({', '.join(cold)}): raw tools, raw query, no labels, no LLM, no feedback, "
                  "no training; --no-feedback and --retriever do not change them", file=out)
        st = [m for m in results if m in STRUCTURED_METHODS]
        if st:
            fb = ("no feedback" if args.no_feedback else
                  "feedback: example intents from each fold's training queries (5 folds)")
            what = ("original text dropped" if args.rewrite_only else "and the user's request, verbatim")
            print(f"structured ({', '.join(st)}): raw tools; the queries are the data set's LLM rewrites (tool "
                  f"needs + extracted arguments, {what}), scored with the structured weights "
                  f"trained without this data set; {fb}", file=out)
    if args.plot:
        fixed = set(COLD_METHODS) | (set(curves) if ultra else set())
        plot_recall(labelled_curves(curves, args.retriever, fixed=fixed), args.plot, title=ds.name)
    return 0


def gold_count_subsets(qrels: dict) -> dict[str, dict]:
    """``qrels`` split by the number of relevant tools: ``{"1": ..., "2": ..., "3+": ...}``
    (empty groups left out)."""
    groups: dict[str, dict] = {"1": {}, "2": {}, "3+": {}}
    for qid, rel in qrels.items():
        n = sum(1 for v in rel.values() if v > 0)
        if n:
            groups["1" if n == 1 else "2" if n == 2 else "3+"][qid] = rel
    return {k: v for k, v in groups.items() if v}


def write_qrels(qrels: dict, path: Path) -> None:
    """``qid 0 doc rel`` lines (the TREC qrels format ``scripts/paired_test.py`` reads)."""
    from ..atomic import write_atomic

    write_atomic(path, "".join(f"{q} 0 {d} {r}\n" for q, rel in qrels.items() for d, r in rel.items()).encode())


def labelled_curves(curves: dict, retriever: str, *, fixed: set[str]) -> dict:
    """Plot labels: ``--retriever`` belongs to the methods it changes (``mftr (hybrid)``),
    not to the plot's title; cold-start baselines and UltraTool methods (``fixed``)
    ignore it and keep their bare names."""
    return {(m if m in fixed else f"{m} ({retriever})"): ys for m, ys in curves.items()}


def _looks_like_dataset(path: Path) -> bool:
    """An MFTR data set (``dataset/from_toolret``) or UltraTool (``data/English-dataset``)."""
    return (path / "dataset" / "from_toolret").is_dir() or (path / "data" / "English-dataset").is_dir()


def _check_dataset_folder(root: Path) -> None:
    """A folder of data sets instead of one: name the ones it holds."""
    if not root.is_dir() or _looks_like_dataset(root):
        return  # the loaders report missing folders and files precisely
    found = sorted(p.name for p in root.iterdir() if p.is_dir() and _looks_like_dataset(p))
    if found:
        raise ToolsiftError(f"{root} is a folder of data sets, not one data set; it holds: {', '.join(found)} "
                            f"(e.g. toolsift eval {root / found[0]})")


def _cmd_train(args: argparse.Namespace, out: TextIO) -> int:
    from . import MftrDataset
    from .methods import train_index

    ds = MftrDataset.load(args.dataset)
    t0 = time.perf_counter()
    index, note = train_index(ds, docs=args.docs, queries=args.queries, feedback=not args.no_feedback,
                              progress=not args.quiet)
    path = index.save(args.out)
    print(f"trained on {len(ds.queries)} {ds.name} queries in {time.perf_counter() - t0:.1f}s: "
          f"scale={note['scale']} stemmer={note['stemmer']}\n"
          f"params {json.dumps(note['params'])}\nsaved -> {path}", file=out)
    return 0


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()] if value else []


def _tqdm(items, desc: str):
    from ..progress import progress_bar

    return progress_bar(items, True, desc, total=len(items))
