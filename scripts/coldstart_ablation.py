"""Cold-start ablation: what a new user gets from ``ToolIndex.build(raw tools)`` and
``search(raw text)`` under variations of the default configuration, against flat bm25s
Full-Doc and a ratel-style flat BM25, on the five shared sets. No labels are used except
to measure; no LLM; no feedback.

Usage: python scripts/coldstart_ablation.py [--sets mftr-apibank,...] [--out table.md]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))
from coldstart_lib import SETS, SHORT, bm25s_fulldoc, load_set, measure, ratel_like

from toolsift import ToolIndex
from toolsift.analyze import Analyzer
from toolsift.config import Bm25Config, IndexConfig
from toolsift.kernels.params import COLDSTART_INIT, DEFAULT_PARAMS, ScoringParams, shipped_params

OLD = ScoringParams()  # the untrained MFTR-paper weights, mean pooling, no renormalisation


def variants() -> list[tuple[str, IndexConfig, ScoringParams]]:
    """(label, build config, scoring params) of every ablation row."""
    new = IndexConfig()
    p = new.params
    old_an = Analyzer()
    rows = [
        ("old default (lucene stop, no stem, k1 1.5 b .75, mean, fixed w)",
         IndexConfig(analyzer=old_an, bm25=Bm25Config(), tool_card=0), OLD),
        ("new default (LODO weights)", new, p),
        ("  - stop words lucene instead of nltk", replace(new, analyzer=replace_an(new.analyzer, stopwords="en")), p),
        ("  - no stemming", replace(new, analyzer=replace_an(new.analyzer, stemmer=None)), p),
        ("  - no accent folding", replace(new, analyzer=replace_an(new.analyzer, fold_accents=False)), p),
        ("  - bm25 k1 1.5 b .75", replace(new, bm25=Bm25Config(1.5, 0.75)), p),
        ("  - bm25 k1 1.2 b .75", replace(new, bm25=Bm25Config(1.2, 0.75)), p),
        ("  - bm25 k1 0.9 b .4", replace(new, bm25=Bm25Config(0.9, 0.4)), p),
        ("  - bm25 k1 1.2 b .3", replace(new, bm25=Bm25Config(1.2, 0.3)), p),
        ("  - no tool card (description without name whole and parameters)", replace(new, tool_card=0), p),
        ("  - no tool card, no tool name in description",
         replace(new, tool_card=0, name_in_description=False), p),
        ("  - param pool mean", new, replace(p, param_max_share=0.0)),
        ("  - param pool max", new, replace(p, param_max_share=1.0)),
        ("  - renormalised weights over present fields", new, replace(p, renormalize=True)),
        ("  - description only (weights 1/0/0/0)", new, replace(p, weights=(1.0, 0.0, 0.0, 0.0))),
        ("  - param pool .5 max + .5 mean", new, replace(p, param_max_share=0.5)),
        ("  - untrained cold formula (paper weights, max pool)", new, COLDSTART_INIT),
        ("  - equal weights", new, replace(p, weights=(0.25, 0.25, 0.25, 0.25))),
        ("  + query-side request words dropped", new, p),
    ]
    return rows


#: Generic request words that say nothing about which tool is wanted.
REQUEST_WORDS = frozenset("""want wants need needs please help find show get give tell know like would could
can may let use using make sure look looking something anything way also""".split())


def _drop_request_words(text: str) -> str:
    import re

    out = re.sub(r"\w+", lambda m: "" if m.group(0).lower() in REQUEST_WORDS else m.group(0), text)
    return out if out.strip() else text


def replace_an(an: Analyzer, **kw) -> Analyzer:
    d = an.to_dict()
    d.update(kw)
    return Analyzer.from_dict(d)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--only", default="", help="comma-separated row numbers")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    sets = args.sets.split(",")
    rows = variants()
    if args.only:
        keep = {int(i) for i in args.only.split(",")}
        rows = [r for i, r in enumerate(rows) if i in keep]
    results: dict[str, dict[str, dict[str, float]]] = {}
    for name in sets:
        cs = load_set(name)
        t0 = time.perf_counter()
        results.setdefault("bm25s-fulldoc", {})[name] = measure(cs, bm25s_fulldoc(cs))
        results.setdefault("ratel-style flat BM25", {})[name] = measure(cs, ratel_like(cs))
        cache: dict[str, object] = {}
        lodo = shipped_params(f"lodo-{name}")  # weights that never saw this set
        for label, cfg, params in rows:
            if params.weights == DEFAULT_PARAMS.weights and label != "untrained":
                params = replace(params, weights=lodo.weights)
            qwords = "request words" in label
            key = json.dumps({k: v for k, v in cfg.to_dict().items() if k != "params"}, sort_keys=True)
            key += str(qwords)
            if key not in cache:
                index = ToolIndex.build(cs.catalog, config=cfg)
                texts = [_drop_request_words(t) for t in cs.texts] if qwords else cs.texts
                cache[key] = (index, index.field_scores(texts, query_ids=cs.query_ids))
            index, fs = cache[key]
            results.setdefault(label, {})[name] = measure(cs, fs.score(params))
        print(f"{name}: {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    print(table(results, sets))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


def table(results, sets) -> str:
    head = "| configuration | " + " | ".join(f"{SHORT[s]} N@10 / R@10" for s in sets) + " |"
    lines = [head, "|---" * (len(sets) + 1) + "|"]
    for label, per in results.items():
        cells = [f"{per[s]['ndcg@10']:.4f} / {per[s]['recall@10']:.4f}" if s in per else "" for s in sets]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
