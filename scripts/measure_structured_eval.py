"""``toolsift eval``'s structured-query methods on the four mftr sets, with and without
feedback, as one table (the done-when check of issue 23 item 2).

For each set: ``default-bm25`` (raw query text, ``lodo-<set>`` weights) and
``default-bm25-structured`` (the authors' LLM rewrites as structured queries, with the user's
original request as ``find_tools``' ``request`` carries it, ``structured-lodo-<set>``
weights; and the rewrite alone, ``toolsift eval --rewrite-only``), all on the raw tools, through
``toolsift.evaluate.methods.run_method`` exactly as ``toolsift eval --method ...`` runs
them (``search_batch`` top 100, ties by the eval's hash of the tool id). With
``--hybrid`` also ``default`` (the hybrid preset) and ``default-structured`` (encodings
come from the eval's embedding cache).

* no feedback = ``toolsift eval DATASET --method ... --no-feedback``;
* feedback = the structured methods with, per fold, example intents from the fold's
  training queries (5 folds pooled); ``default-bm25`` has no feedback variant (a cold method).

Usage: python scripts/measure_structured_eval.py [--hybrid] [--out docs/results/structured-eval.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from coldstart_lib import DATA, SHORT

from toolsift.evaluate import MftrDataset, evaluate
from toolsift.evaluate.embcache import eval_encoder_cache
from toolsift.evaluate.methods import run_method

SETS = ("mftr-apibank", "mftr-apigen", "mftr-gorilla-huggingface", "mftr-toolink")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hybrid", action="store_true")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    load = os.getloadavg()
    machine = (f"{platform.node()} ({platform.machine()}, {os.cpu_count()} cores, Python "
               f"{platform.python_version()}), load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} at "
               f"start, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    # (method, feedback, request): request=False is the rewrite alone (--rewrite-only).
    rows = [("default-bm25", False, True), ("default-bm25-structured", False, True),
            ("default-bm25-structured", True, True), ("default-bm25-structured", False, False),
            ("default-bm25-structured", True, False)]
    if args.hybrid:
        rows += [("default", False, True), ("default-structured", False, True),
                 ("default-structured", True, True), ("default-structured", False, False),
                 ("default-structured", True, False)]
    res: dict[tuple[str, bool, bool], dict[str, tuple[float, float]]] = {r: {} for r in rows}
    t0 = time.perf_counter()
    with eval_encoder_cache():
        for s in SETS:
            ds = MftrDataset.load(DATA / s)
            qrels = ds.qrels()
            for m, fb, rq in rows:
                out = run_method(ds, m, feedback=fb, request=rq)
                mean = evaluate(qrels, out.run, metrics=("ndcg@10", "recall@10")).mean
                res[m, fb, rq][s] = (mean["ndcg@10"], mean["recall@10"])
                print(s, m, "feedback" if fb else "no feedback", "" if rq else "rewrite only", res[m, fb, rq][s],
                      file=sys.stderr)
    lines = ["Command: `python scripts/measure_structured_eval.py" + (" --hybrid" if args.hybrid else "") + "`  ",
             f"Machine: {machine}", "",
             "| method | input | " + " | ".join(f"{SHORT[s]} N@10 / R@10" for s in SETS) + " |",
             "|---|---" + "|---" * len(SETS) + "|"]
    def kind(m: str, rq: bool) -> str:
        return "raw text" if "structured" not in m else "LLM rewrite + request" if rq else "LLM rewrite alone"

    for m, fb, rq in rows:
        what = kind(m, rq) + (", feedback" if fb else ", no feedback")
        lines.append(f"| `{m}` | {what} | " + " | ".join(f"{res[m, fb, rq][s][0]:.4f} / {res[m, fb, rq][s][1]:.4f}"
                                                       for s in SETS) + " |")
    for base, st in (("default-bm25", "default-bm25-structured"), ("default", "default-structured")):
        if (base, False, True) in res:
            for rq in (True, False):
                for fb in (False, True):
                    what = (f"{kind(st, rq)}; both without feedback" if not fb else
                            f"{kind(st, rq)}; `{st}` with feedback ÷ `{base}` without (a cold method: no feedback "
                            "variant)")
                    lines.append(f"| `{st}` ÷ `{base}` (N@10) | {what} | " + " | ".join(
                        f"{res[st, fb, rq][s][0] / res[base, False, True][s][0]:.3f}" for s in SETS) + " |")
    if args.hybrid:
        lines.append("| `default-structured` ÷ `default-bm25` (N@10) | LLM rewrite + request; both without feedback | "
                     + " | ".join(f"{res['default-structured', False, True][s][0] / res['default-bm25', False, True][s][0]:.3f}"
                                  for s in SETS) + " |")
    lines.append(f"\nTotal time {time.perf_counter() - t0:.0f}s.\n")
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
