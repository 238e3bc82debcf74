"""How the top score of a query differs by index: the facts behind docs/scoring.md's
paragraph on thresholds.

For each shared data set and preset, every query (raw text, the whole corpus) is
searched with ``ToolIndex.build(catalog, preset=...)`` (the shipped weights, as a user
gets them) and this prints, as a Markdown table, the quartiles of the top-1 score, of
the best-ranked relevant tool's score (when one is in the top 100), and the share of queries whose top hit clears
0.3 and 0.5. Nothing is tuned or fitted; the numbers describe the score scale only.

Usage: python scripts/measure_score_scale.py [DATA_DIR] [--presets bm25,hybrid] > OUT.md
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from toolsift import ToolIndex
from toolsift.evaluate.datasets import MftrDataset
from toolsift.evaluate.ultratool_data import UltraToolDataset
from toolsift.presets import preset_config

DEPTH = 100  # the relevant tool's score is read among the top 100

SETS = ("mftr-apibank", "mftr-apigen", "mftr-gorilla-huggingface", "mftr-toolink", "ultratool")


def _load(root: Path, name: str):
    """(catalog, [(query text, relevant ids)]) of one data set."""
    if name == "ultratool":
        ds = UltraToolDataset.load(root / name)
        return ds.tools, [(q.question, set(q.labels)) for q in ds.queries]
    ds = MftrDataset.load(root / name)
    return ds.raw_tools, [(q.text, set(q.labels)) for q in ds.queries]


def _q(values: list[float]) -> str:
    p25, p50, p75 = np.percentile(values, [25, 50, 75])
    return f"{p50:.3f} ({p25:.3f}-{p75:.3f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--presets", default="bm25,hybrid")
    args = ap.parse_args()
    root = Path(args.data)
    load = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows = []
    for preset in args.presets.split(","):
        for name in SETS:
            catalog, queries = _load(root, name)
            index = ToolIndex.build(catalog, config=preset_config(preset, threads=1))
            top, gold, rank1 = [], [], []
            for text, labels in queries:
                hits = index.search(text, k=DEPTH)
                top.append(hits[0].score)
                first = next((h for h in hits if h.id in labels), None)
                if first is not None:
                    gold.append(first.score)
                rank1.append(hits[0].id in labels)
            clear3 = np.mean(np.asarray(top) >= 0.3)
            clear5 = np.mean(np.asarray(top) >= 0.5)
            rows.append(f"| {preset} | {name} | {len(catalog)} | {len(queries)} | {_q(top)} | {_q(gold)} "
                        f"| {clear3:.0%} | {clear5:.0%} | {np.mean(rank1):.0%} |")
            print(f"{preset} {name} done", file=sys.stderr)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"# Top scores by index: {started}\n")
    print(f"`python scripts/measure_score_scale.py --presets {args.presets}` at commit {commit}, "
          f"{platform.machine()} with {os.cpu_count()} cores, load average {load[0]:.2f} / {load[1]:.2f} "
          f"/ {load[2]:.2f} at the start (only CPU time matters here: no timings are reported).")
    print("Every query of each set, raw text, searched against its whole corpus with "
          "`ToolIndex.build(catalog, preset=...)` (the shipped weights; no feedback, no LLM). "
          "Scores are median (25th-75th percentile).\n")
    print("| preset | data set | tools | queries | top-1 score | best relevant tool's score (top 100) "
          "| top-1 ≥ 0.3 | top-1 ≥ 0.5 | top-1 relevant |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
