"""Ablation of the lexical half's analyzer (issue 22, item 5; docs/coldstart.md).

For each shared set, the ``default`` (BM25 fields) and ``default-hybrid`` evaluation
methods exactly as ``toolsift eval --no-feedback`` runs them (leave-one-dataset-out
weights, the eval's hash tie rule), with the analyzer replaced by each variant:

* ``stem``: the default (NLTK stop list, Snowball English stems, accents folded);
* ``stem+exact``: the same, and each word's exact form kept beside its stem
  (``Analyzer(exact_forms=True)``, Lucene's keyword-repeat);
* ``exact``: no stemming.

The weights were trained with the default analyzer; no variant retrains them. Run:

    python scripts/analyzer_ablation.py [--sets mftr-apibank,...] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from coldstart_lib import SETS, load_set

from toolsift.analyze import Analyzer
from toolsift.config import COLDSTART_ANALYZER
from toolsift.evaluate.cold import _search_run, default_config
from toolsift.evaluate.metrics import evaluate

VARIANTS = {
    "stem": COLDSTART_ANALYZER,
    "stem+exact": replace(COLDSTART_ANALYZER, exact_forms=True),
    "exact": replace(COLDSTART_ANALYZER, stemmer=None),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    args = ap.parse_args()
    sets = [s for s in args.sets.split(",") if s]
    load0 = os.getloadavg()[0]
    rows: dict[tuple[str, str], list[str]] = {}
    t0 = time.time()
    for name in sets:
        cs = load_set(name)
        for hybrid in (False, True):
            cfg, weights = default_config(name, hybrid=hybrid)
            for label, an in VARIANTS.items():
                assert isinstance(an, Analyzer)
                run, _ = _search_run(cs.catalog, cs.texts, cs.query_ids, replace(cfg, analyzer=an))
                m = evaluate(cs.qrels, run, metrics=("ndcg@10", "recall@10")).mean
                key = ("default" if hybrid else "default-bm25", label)
                rows.setdefault(key, []).append(f"{m['ndcg@10']:.4f} / {m['recall@10']:.4f}")
                print(name, key, rows[key][-1], f"weights {weights}", flush=True)
    lines = [f"Output of `python scripts/analyzer_ablation.py` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"{platform.machine()}, {os.cpu_count()} cores, load average {load0:.1f} at start, "
             f"{time.time() - t0:.0f} s). N@10 / R@10, `--no-feedback`, LODO weights, hash ties.", "",
             "| method | analyzer | " + " | ".join(sets) + " |", "|---|---|" + "---|" * len(sets)]
    lines += [f"| `{m}` | {a} | " + " | ".join(v) + " |" for (m, a), v in rows.items()]
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
