"""IVF against the exact int8 scan: where the IVF starts to pay, and what it costs to build.

For each matrix size, rows are a Gaussian mixture on the unit sphere (``sqrt(n)``
clusters, so lists are about as unbalanced as real text clusters), quantized to int8.
Per size it measures, on one thread, the CPU time per query text of:

* ``scan``: :meth:`DenseField.top_tools` (the C++ scan and top-100 selection in one
  pass), as ``DenseRetriever.candidates`` does without an IVF;
* ``ivf``: :meth:`DenseField.top_tools_ivf` with ``IndexConfig().ivf_nprobe``;

and the IVF's fit time and recall@100 against the scan. Timings are CPU seconds
(``time.process_time``) per query, so a loaded machine slows them less than wall time.

Run (numbers are printed, never asserted)::

    python -m benchmarks.bench_ivf                    # 20k ... 1M rows
    python -m benchmarks.bench_ivf 50000 200000       # chosen sizes
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from toolsift import IndexConfig
from toolsift.index.dense import Int8Matrix
from toolsift.index.dense_field import DenseField
from toolsift.kernels.int8 import quantize_rows
from toolsift.index.ivf import IvfIndex

D = 384
N_QUERIES = 200
TOP = 100


def _data(n: int, rng: np.random.Generator) -> tuple[Int8Matrix, np.ndarray]:
    k = max(1, int(np.sqrt(n)))
    centers = rng.standard_normal((k, D)).astype(np.float32)
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    # Cluster sizes vary (Zipf-like), as topics do in a catalogue.
    weights = 1.0 / np.arange(1, k + 1) ** 0.7
    codes = np.empty((n, D), np.int8)
    scales = np.empty(n, np.float32)
    for s in range(0, n, 65536):
        m = min(65536, n - s)
        x = centers[rng.choice(k, m, p=weights / weights.sum())] + 0.09 * rng.standard_normal((m, D)).astype(np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        codes[s:s + m], scales[s:s + m] = quantize_rows(x)
    q = centers[rng.choice(k, N_QUERIES, p=weights / weights.sum())] + 0.09 * rng.standard_normal((N_QUERIES, D)).astype(np.float32)
    return Int8Matrix(codes, scales), q / np.linalg.norm(q, axis=1, keepdims=True)


def measure(n: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    m, q = _data(n, rng)
    t0 = time.process_time()
    ivf = IvfIndex.fit(m)
    fit_s = time.process_time() - t0
    dn = DenseField(m, None, n, ivf=ivf)
    nprobe = IndexConfig().ivf_nprobe
    dn.top_tools_ivf(q[:2], TOP, nprobe)  # compile / warm
    dn.top_tools(*quantize_rows(q[:1]), TOP)
    scan_t, ivf_t, rec = [], [], []
    for i in range(N_QUERIES):
        t0 = time.process_time()
        # The search path without an IVF: quantize, then one pass that scans and selects.
        truth = dn.top_tools(*quantize_rows(q[i:i + 1]), TOP)[0]
        t1 = time.process_time()
        got = dn.top_tools_ivf(q[i:i + 1], TOP, nprobe)[0]
        t2 = time.process_time()
        scan_t.append(t1 - t0)
        ivf_t.append(t2 - t1)
        rec.append(len(set(truth.tolist()) & set(got.tolist())) / max(truth.size, 1))
    return {"rows": n, "lists": ivf.n_lists, "nprobe": nprobe, "fit_cpu_s": fit_s,
            "scan_cpu_ms": 1e3 * float(np.median(scan_t)), "ivf_cpu_ms": 1e3 * float(np.median(ivf_t)),
            "recall_at_100": float(np.mean(rec)), "load_avg_1m": os.getloadavg()[0]}


if __name__ == "__main__":
    sizes = [int(a) for a in sys.argv[1:]] or [20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000]
    for n in sizes:
        print(json.dumps(measure(n)), flush=True)
