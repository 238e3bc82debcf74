"""Where a default build's time and memory go, phase by phase.

Runs ``ToolIndex.build(tools)`` (default settings) on ``N`` of bench_scale's synthetic
tools and prints, per phase of the build (BM25 analysis, dense embedding, query table,
IVF, BM25 field indexes), its wall and CPU seconds, the process's RSS before and after
it, and the phase's own peak RSS (the kernel's high-water mark ``VmHWM``, reset before
each phase through ``/proc/self/clear_refs``; Linux only)::

    python -m benchmarks.build_phases 100000

The phases are the functions ``ToolIndex.build`` calls, wrapped for the run; numbers are
printed, never asserted.
"""

from __future__ import annotations

import functools
import json
import resource
import sys
import time
from typing import Any

PHASES = ("embed_fields", "build_query_table", "fields_with_ivf", "encoder_record")


def _mem() -> dict[str, float]:
    out = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024
    return out


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")  # resets VmHWM to the current RSS


def _timed(label: str, fn: Any, rows: list[dict]) -> Any:
    @functools.wraps(fn)
    def inner(*args: Any, **kwargs: Any) -> Any:
        _reset_peak()
        before = _mem()["VmRSS"]
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn(*args, **kwargs)
        m = _mem()
        rows.append({"phase": label, "wall_s": round(time.perf_counter() - t0, 2),
                     "cpu_s": round(time.process_time() - c0, 2), "rss_before_mb": round(before),
                     "rss_after_mb": round(m["VmRSS"]), "peak_mb": round(m["VmHWM"])})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        return result
    return inner


def main(n: int) -> dict:
    import toolsift.toolindex as ti

    from .synthetic import synthetic_tools

    rows: list[dict] = []
    t0 = time.perf_counter()
    tools = list(synthetic_tools(n, seed=0))
    out: dict[str, Any] = {"tools": n, "generate_s": round(time.perf_counter() - t0, 2),
                           "catalogue_rss_mb": round(_mem()["VmRSS"])}
    for name in PHASES:
        setattr(ti, name, _timed(name, getattr(ti, name), rows))
    analyse, from_tokens = ti.DocumentTokens.analyse.__func__, ti.ToolIndex._from_tokens.__func__
    ti.DocumentTokens.analyse = classmethod(_timed("analyse (BM25 tokens)", analyse, rows))
    ti.ToolIndex._from_tokens = classmethod(_timed("BM25 field indexes", from_tokens, rows))
    t0, c0 = time.perf_counter(), time.process_time()
    ti.ToolIndex.build(tools)
    out.update(build_wall_s=round(time.perf_counter() - t0, 2), build_cpu_s=round(time.process_time() - c0, 2),
               ru_maxrss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024), phases=rows)
    return out


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]))))
