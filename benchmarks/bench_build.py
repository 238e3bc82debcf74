"""Dense build throughput: encoder parallelism, and the hybrid preset's build of the 6,417
pooled mftr tools from an empty and from a full embedding cache (issue 22, "Builds").

Run: ``python -m pytest benchmarks/bench_build.py -s`` (about 5 minutes on the idle
2-core machine; nothing is asserted about time). ``TOOLSIFT_BENCH_BUILD_SAMPLE`` sets
the texts per throughput round (default 400). The summary prints wall texts/s, the
cores the process used (CPU s / wall s) and texts per CPU second, and the load average:
on a shared machine the per-CPU-second figure says more about the code than wall time.
"""

from __future__ import annotations

import os
import random
import time

import pytest

from toolsift import Catalog, ToolIndex
from toolsift.presets import preset_config

from .conftest import report

SAMPLE = int(os.environ.get("TOOLSIFT_BENCH_BUILD_SAMPLE", "400"))
_RATES: dict[str, float] = {}


@pytest.fixture(scope="module")
def dense_texts(combined):
    """The distinct non-empty texts the hybrid preset embeds for the pooled catalogue."""
    from toolsift.index.fields import field_documents
    from toolsift.schema import FIELDS

    tools, _ = combined
    cfg = preset_config("hybrid")
    fd = field_documents(Catalog(tools), name_in_description=cfg.name_in_description,
                         split_identifiers=cfg.split_identifiers, parameter_format=cfg.parameter_format,
                         tool_card=cfg.tool_card)
    texts = [t for f in FIELDS if cfg.retriever(f) != "bm25" for t in fd[f].texts]
    return list(dict.fromkeys(t for t in texts if t.strip()))


def _timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


@pytest.mark.parametrize("threads,parallel", [(1, "sessions"), (2, "sessions"), (2, "intra-op")])
def test_encode_throughput(benchmark, dense_texts, threads, parallel):
    from toolsift.encoders import OnnxEncoder

    sample = random.Random(0).sample(dense_texts, min(SAMPLE, len(dense_texts)))
    enc = OnnxEncoder(threads=threads, parallel=parallel)
    enc.encode(sample[:64])  # sessions made, arenas warm
    seen: list[tuple[float, float]] = []
    benchmark.pedantic(lambda: seen.append(_timed(lambda: enc.encode(sample))), rounds=2, iterations=1)
    wall, cpu = min(seen)
    key = f"{threads} thread(s), {parallel}"
    _RATES[key] = len(sample) / wall
    line = (f"encode {len(sample)} catalogue texts, {key}: {len(sample) / wall:.1f} texts/s, "
            f"{cpu / wall:.2f} cores used, {len(sample) / cpu:.1f} texts/CPU s, load {os.getloadavg()[0]:.2f}")
    one = _RATES.get("1 thread(s), sessions")
    if threads > 1 and one:
        line += f"; {_RATES[key] / one:.2f}x one thread"
    report(line)


def test_hybrid_build_pooled_catalogue(benchmark, combined, tmp_path):
    """``ToolIndex.build(tools, preset="hybrid")`` with threads=2: empty cache, then full."""
    tools, _ = combined
    config = preset_config("hybrid", threads=2)
    cache = tmp_path / "cache"
    cold_wall, cold_cpu = _timed(lambda: ToolIndex.build(tools, config=config, embed_cache=cache))
    load_cold = os.getloadavg()[0]
    warm: list[tuple[float, float]] = []
    benchmark.pedantic(lambda: warm.append(_timed(lambda: ToolIndex.build(tools, config=config,
                                                                               embed_cache=cache))),
                       rounds=2, iterations=1)
    warm_wall, warm_cpu = min(warm)
    entries = sum(1 for _ in cache.glob("??/*"))
    report(f"hybrid build of {len(tools)} tools, threads=2: empty cache {cold_wall:.1f} s "
           f"({cold_cpu:.0f} CPU s, load {load_cold:.2f}); full cache {warm_wall:.1f} s ({warm_cpu:.1f} CPU s, "
           f"load {os.getloadavg()[0]:.2f}); {entries} cache entries")
