"""Do the dense candidates' depth and fields change what a hybrid search returns?

For each shared set: the ``hybrid`` preset (shipped all-set weights, static queries, raw
tools, raw queries, no feedback) searched at k=10 with ``dense_candidates`` 100 (as deep
as BM25's lists) and shallower depths, every field's dense half adding candidates, and
as the preset ships (``dense_candidates_from`` without ``response``), against the k=100
search at depth 100 with every field. Prints N@10 (the eval's hash tie rule) and the
share of queries whose top-10 list is identical.

Usage: python scripts/dense_candidates_check.py [--depths 100,30,20] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from coldstart_lib import SETS, SHORT, load_set

from toolsift import ToolIndex
from toolsift.evaluate.cold import tie_keys
from toolsift.evaluate.embcache import eval_encoder_cache
from toolsift.evaluate.metrics import evaluate
from toolsift.presets import preset_config
from toolsift.schema import FIELDS


def run(index: ToolIndex, cs, k: int, keys: dict[str, int]) -> tuple[float, list[tuple[str, ...]]]:
    hits = index.search_batch(list(cs.texts), k=k)
    run_, tops = {}, []
    for qid, hs in zip(cs.query_ids, hits):
        hs = sorted(hs, key=lambda h: (-h.score, keys[h.id]))
        run_[qid] = {h.id: float(len(hs) - i) for i, h in enumerate(hs)}
        tops.append(tuple(h.id for h in hs[:10]))
    return evaluate(cs.qrels, run_, metrics=("ndcg@10",)).mean["ndcg@10"], tops


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--depths", default="100,30,20")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    depths = [int(x) for x in args.depths.split(",")]
    shipped = preset_config("hybrid")
    load = os.getloadavg()
    rows = []
    for name in SETS:
        cs = load_set(name)
        keys = dict(zip((t.id for t in cs.catalog), tie_keys([t.id for t in cs.catalog])))
        with eval_encoder_cache():
            base_index = ToolIndex.build(cs.catalog, config=replace(preset_config("hybrid", dense_candidates=100),
                                                                    dense_candidates_from=FIELDS, threads=0))
        ref, ref_tops = run(base_index, cs, 100, keys)
        cells = [f"{ref:.4f}"]
        for d, fields in [(d, FIELDS) for d in depths] + [(shipped.dense_candidates, shipped.dense_candidates_from)]:
            st = base_index._state
            cfg = replace(base_index.config, dense_candidates=d, dense_candidates_from=fields)
            index = ToolIndex(st.catalog, cfg, st.vocab, st.fields,
                              tokens=st.tokens, dense=st.dense, graph=st.graph, query_table=st.query_table)
            n10, tops = run(index, cs, 10, keys)
            same = np.mean([a == b for a, b in zip(tops, ref_tops)])
            cells.append(f"{n10:.4f} ({same:.1%})")
        rows.append(f"| {SHORT.get(name, name)} | " + " | ".join(cells) + " |")
        print(rows[-1], flush=True)
    head = ("| set | k=100, depth 100: N@10 | " + " | ".join(f"k=10, depth {d}: N@10 (same top-10)" for d in depths)
            + f" | k=10, as shipped (depth {shipped.dense_candidates}, from "
            + f"{', '.join(shipped.dense_candidates_from)}): N@10 (same top-10) |\n|---|" + "---|" * (len(depths) + 2))
    text = (f"# Dense candidates: depth and fields\n\n`python scripts/dense_candidates_check.py --depths {args.depths}`\n\n"
            f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; machine: {platform.machine()}, "
            f"{os.cpu_count()} cores, Python {platform.python_version()}; load average at start "
            f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n"
            "- `hybrid` preset, shipped all-set weights (`hybrid-default.json`), static query encoder, raw tools "
            "and raw queries, no feedback; N@10 with the eval's hash tie rule; \"same top-10\": share of queries "
            "whose ten hits equal those of the k=100, depth-100 search with every field adding candidates\n\n" + head + "\n" + "\n".join(rows) + "\n")
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
