"""Exploration kept for the record (docs/results/nomatch-2026-11-28.md, second part): does a
query's z-score over its own catalogue cosines separate gold tools from gibberish?

Per dense field: z of each tool's cosine against the mean and standard deviation of the
query's cosines over the field's non-empty documents; percentiles of the gold tools in the
hybrid top 10 (first 200 queries) against the best tool of 100 random character strings
and 100 word salads (seed 0). It does not separate them, so search/evidence.py uses a null
floor instead.

Usage: python scripts/nomatch_zscore.py SET   (SET: demo or a shared set's folder name)
"""
import json
import random
import sys

import numpy as np
sys.path.insert(0, "scripts")
from coldstart_lib import load_set
from toolsift import ToolIndex
from toolsift.adapters import demo_catalog_path, load_catalog
from toolsift.evaluate.embcache import eval_encoder_cache
from toolsift.search import plan_queries, as_query

def zstats(index, texts):
    st, cfg = index._state, index.config
    plan = plan_queries(st, cfg, [as_query(t, "q") for t in texts])
    out = {}
    for f in ("description", "response", "examples"):
        dn = st.dense.get(f)
        if dn is None: continue
        live, m = dn.live_rows()
        D = m.codes.astype(np.float32) * m.scales[:, None]
        q = plan.fields[f].vectors
        docs = q @ D.T
        mu, sd = docs.mean(1), docs.std(1)
        tools = dn.score_tools(q)  # per tool
        out[f] = ((tools - mu[:, None]) / sd[:, None], len(live), tools)
    return out

which = sys.argv[1]
with eval_encoder_cache():
    if which == "demo":
        cat = load_catalog(demo_catalog_path()); idx = ToolIndex.build(cat)
        texts = ["snap a photo of the porch", "keep a copy of the prod db before the migration", "how much cash is in my checking"]
        gold = [["get_camera_snapshot"], ["backup_database"], ["get_account_balance"]]
    else:
        cs = load_set(which); idx = ToolIndex.build(cs.catalog, config=None)
        texts = cs.texts[:200]; gold = [list(cs.qrels[q]) for q in cs.query_ids[:200]]
ids = [t.id for t in idx.catalog]
pos = {t: i for i, t in enumerate(ids)}
rng = random.Random(0)
with open("src/toolsift/models/all-MiniLM-L6-v2/tokenizer.json") as fh:
    vocab = sorted(w for w in json.load(fh)["model"]["vocab"] if w.isalpha() and w.isascii() and len(w) > 2)
gib = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(rng.randint(8, 30))) for _ in range(100)]
salad = [" ".join(rng.choice(vocab) for _ in range(rng.randint(3, 8))) for _ in range(100)]
zs = zstats(idx, texts); zg = zstats(idx, gib); zw = zstats(idx, salad)
hits = idx.search_batch(texts, k=10)
n = len(ids)
for f in zs:
    z, nl, _ = zs[f]
    g = [z[i, pos[t]] for i, hs in enumerate(hits) for h in hs if h.id in gold[i] for t in [h.id]]
    print(f, "nlive", nl, "sqrt2ln", round(np.sqrt(2*np.log(nl)),2), "gold-in-top10 z pct [5,25,50]", np.percentile(g, [5,25,50]).round(2) if g else None,
          "gib maxz pct[50,95,100]", np.percentile(zg[f][0].max(1), [50,95,100]).round(2),
          "salad maxz pct[50,95,100]", np.percentile(zw[f][0].max(1), [50,95,100]).round(2),
          "gib maxcos", np.percentile(zg[f][2].max(1), [50, 100]).round(3), "gold cos p5", np.percentile([zs[f][2][i, pos[h.id]] for i, hs in enumerate(hits) for h in hs if h.id in gold[i]], 5).round(3))

