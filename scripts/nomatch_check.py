"""Does ``Hit.matched`` mean evidence on the default (hybrid) preset?

For the demo catalogue, each shared set, the pooled catalogue (6,417 tools) and its
multi-step stress requests: the default preset (shipped weights, static queries, raw
queries, no feedback, k=10) against the ``bm25`` preset of the same catalogue.

* gold: of the gold tools in the hybrid top 10, the share flagged matched (hybrid),
  and the share the BM25 preset flags matched (the lexical evidence alone);
* nonsense: the share of queries with any matched hit in the top 10, for seeded random
  character strings (seed 1; the null floor uses seed 0), word salad (3-8 random
  alphabetic words of the MiniLM tokenizer's vocabulary), two nonsense strings joined as
  a two-step request, and the queries of another domain (the next set's, cyclically;
  for the demo, Gorilla's). Before this change every hybrid hit was matched (100%).

Usage: python scripts/nomatch_check.py [--n 300] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from coldstart_lib import SETS, SHORT, load_set

import toolsift
from toolsift import ToolIndex
from toolsift.adapters import demo_catalog_path, load_catalog
from toolsift.demo import SEMANTIC_CANDIDATES
from toolsift.evaluate.embcache import eval_encoder_cache
from toolsift.evaluate.pooled import data_root, load_pseudo

VOCAB = Path(toolsift.__file__).parent / "models" / "all-MiniLM-L6-v2" / "tokenizer.json"


def nonsense(n: int) -> dict[str, list[str]]:
    rng = random.Random(1)
    chars = "abcdefghijklmnopqrstuvwxyz "
    gib = ["".join(rng.choice(chars) for _ in range(rng.randint(8, 30))).strip() or "x" for _ in range(n)]
    words = sorted(w for w in json.loads(VOCAB.read_text())["model"]["vocab"]
                   if w.isascii() and w.isalpha() and len(w) > 2)
    rng = random.Random(2)
    salad = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 8))) for _ in range(n)]
    two = [f"{a}, then {b}" for a, b in zip(gib, gib[1:] + gib[:1])]
    return {"random chars": gib, "word salad": salad, "two-step nonsense": two}


def any_matched(index: ToolIndex, texts: list[str]) -> float:
    hits = index.search_batch(texts, k=10)
    return sum(any(h.matched for h in hs) for hs in hits) / max(len(texts), 1)


def row(name: str, catalog, texts: list[str], gold: list[set[str]], off: list[str], n: int) -> str:
    with eval_encoder_cache():
        hy = ToolIndex.build(catalog)
    bm = ToolIndex.build(catalog, preset="bm25")
    pairs = hy_m = bm_m = 0
    for hs, bs, g in zip(hy.search_batch(texts, k=10), bm.search_batch(texts, k=len(catalog)), gold):
        bmatched = {h.id for h in bs if h.matched}
        for h in hs:
            if h.id in g:
                pairs += 1
                hy_m += h.matched
                bm_m += h.id in bmatched
    cells = [name, f"{len(catalog):,}", str(len(texts)), str(pairs),
             f"{hy_m / max(pairs, 1):.1%}", f"{bm_m / max(pairs, 1):.1%}"]
    for qs in [*nonsense(n).values(), off[:n]]:
        cells.append(f"{any_matched(hy, qs):.1%} / {any_matched(bm, qs):.1%}")
    line = "| " + " | ".join(cells) + " |"
    print(line, flush=True)
    return line


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300, help="queries per set (the first n) and nonsense queries per kind")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    n = args.n
    load = os.getloadavg()
    sets = {name: load_set(name) for name in SETS}
    lines = []
    demo = load_catalog(demo_catalog_path())
    gor = sets["mftr-gorilla-huggingface"].texts
    lines.append(row("demo (semantic requests)", demo, [q for q, _ in SEMANTIC_CANDIDATES],
                     [{t} for _, t in SEMANTIC_CANDIDATES], gor, n))
    for i, name in enumerate(SETS):
        cs, other = sets[name], sets[SETS[(i + 1) % len(SETS)]]
        lines.append(row(SHORT.get(name, name), cs.catalog, cs.texts[:n],
                         [set(cs.qrels[q]) for q in cs.query_ids[:n]], other.texts, n))
    pooled, stress = load_pseudo("pooled", data_root()), load_pseudo("stress", data_root())
    ult = sets["ultratool"].texts
    lines.append(row("pooled", pooled.tools, [q.text for q in pooled.queries[:n]],
                     [set(q.labels) for q in pooled.queries[:n]], ult, n))
    lines.append(row("pooled, stress (multi-step)", stress.tools, [q.text for q in stress.queries[:n]],
                     [set(q.labels) for q in stress.queries[:n]], ult, n))
    head = ("| catalogue | tools | queries | gold in hybrid top 10 | flagged matched (hybrid) | matched by BM25 preset "
            "| random chars: any matched (hybrid / BM25) | word salad | two-step nonsense | other domain |\n"
            "|---|---|---|---|---|---|---|---|---|---|")
    text = (f"# Hit.matched on the default (hybrid) preset\n\n`python scripts/nomatch_check.py --n {n}`\n\n"
            f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; machine: {platform.machine()}, "
            f"{os.cpu_count()} cores, Python {platform.python_version()}; load average at start "
            f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n"
            "- default preset (hybrid, shipped weights, static query encoder), raw queries, no feedback, k=10; "
            "the first n queries of each set; BM25 = the `bm25` preset of the same catalogue\n"
            "- before this change every hit of a hybrid index was matched (100% in every column)\n\n"
            + head + "\n" + "\n".join(lines) + "\n")
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
