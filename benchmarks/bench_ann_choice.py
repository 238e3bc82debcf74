"""IVF or a graph index? Recall@100 / @10 and query CPU time on real MiniLM vectors.

Vectors: ``tests/fixtures/ivf_apigen.npz`` (all-MiniLM-L6-v2, int8, APIGen's 3,605 tool
descriptions and 400 of its queries; ``tests/fixtures/make_ivf_apigen.py``). Truth is the
exact int8 scan (what ``DenseRetriever`` ranks without an index).

* toolsift's IVF (:mod:`toolsift.index.ivf`) at several list counts and ``nprobe``;
* usearch's HNSW with int8 storage (``dtype="i8"``, cosine) at several
  ``expansion_search`` values, when usearch is installed (it is not a dependency).

Run (numbers printed, never asserted)::

    python -m benchmarks.bench_ann_choice
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from toolsift.index.dense import Int8Matrix
from toolsift.index.dense_field import DenseField
from toolsift.kernels.select import top_positive
from toolsift.index.ivf import IvfIndex

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "ivf_apigen.npz"


def _load() -> tuple[Int8Matrix, np.ndarray]:
    z = np.load(FIXTURE)
    q = z["query_codes"].astype(np.float32) * z["query_scales"][:, None]
    return Int8Matrix(z["doc_codes"], z["doc_scales"]), q / np.linalg.norm(q, axis=1, keepdims=True)


def _recall(truth: list[set], got: list) -> float:
    return float(np.mean([len(t & set(np.asarray(g).tolist())) / max(len(t), 1) for t, g in zip(truth, got)]))


def main() -> None:
    docs, q = _load()
    exact = DenseField(docs, None, docs.n_rows).score_tools(q)
    truth = {n: [set(top_positive(r, np.arange(r.size), None, r.size, n).tolist()) for r in exact] for n in (10, 100)}
    load = os.getloadavg()[0]
    for k in (30, 60, 120):
        ivf = IvfIndex.fit(docs, n_lists=k)
        dn = DenseField(docs, None, docs.n_rows, ivf=ivf)
        dn.top_tools_ivf(q[:2], 100, 4)
        for p in (8, 16, 32, 48, 64, 96):
            if p > k:
                continue
            t0 = time.process_time()
            got = [dn.top_tools_ivf(q[i:i + 1], 100, p)[0] for i in range(q.shape[0])]
            ms = (time.process_time() - t0) * 1e3 / q.shape[0]
            got10 = dn.top_tools_ivf(q, 10, p)
            print(json.dumps({"index": "ivf", "lists": k, "nprobe": p, "rows_probed": round(p / k, 3),
                              "recall_at_100": _recall(truth[100], got), "recall_at_10": _recall(truth[10], got10),
                              "cpu_ms_per_query": ms, "load_avg_1m": load}), flush=True)
    try:
        from usearch.index import Index
    except ImportError:
        print(json.dumps({"index": "usearch", "skipped": "usearch is not installed"}))
        return
    x = docs.dequantize()
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    for ef in (64, 128, 256, 512):
        idx = Index(ndim=docs.dim, metric="cos", dtype="i8", connectivity=16, expansion_add=128, expansion_search=ef)
        t0 = time.process_time()
        idx.add(np.arange(docs.n_rows), x, threads=1)
        build = time.process_time() - t0
        t0 = time.process_time()
        res = [idx.search(v, 100, threads=1).keys for v in q]
        ms = (time.process_time() - t0) * 1e3 / q.shape[0]
        res10 = [idx.search(v, 10, threads=1).keys for v in q]
        print(json.dumps({"index": "usearch-hnsw-i8", "connectivity": 16, "expansion_search": ef,
                          "recall_at_100": _recall(truth[100], res), "recall_at_10": _recall(truth[10], res10),
                          "cpu_ms_per_query": ms, "build_cpu_s": build, "load_avg_1m": load}), flush=True)


if __name__ == "__main__":
    main()
