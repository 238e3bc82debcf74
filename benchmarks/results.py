"""Timing helpers and result files shared by ``bench_latency`` and ``bench_scale``.

Numbers are reported, never asserted: a wall-clock threshold in a test only measures
how busy the CI machine was. Each benchmark module collects :class:`Figure` rows, prints
them as a compact table at the end of the session and, when ``$TOOLSIFT_BENCH_OUT``
names a folder, writes them there as JSON (``<module>.json``) so the README's
performance table can be filled from a run.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Figure", "machine", "peak_rss_mb", "per_call", "ratio", "table", "write_json"]


def per_call(fn: Callable[[Any], Any], items: Sequence[Any]) -> np.ndarray:
    """Seconds taken by ``fn(item)`` for each item, in order."""
    out = np.empty(len(items))
    clock = time.perf_counter
    for i, item in enumerate(items):
        t0 = clock()
        fn(item)
        out[i] = clock() - t0
    return out


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB (``getrusage``; Linux reports
    kB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def machine() -> dict[str, Any]:
    """What the numbers were measured on: CPUs, load average, Python, library versions."""
    import numba

    from toolsift import __version__

    try:
        import bm25s

        bm25s_version = bm25s.__version__
    except (ImportError, AttributeError):
        bm25s_version = None
    return {"cpus": os.cpu_count(), "load_avg": list(os.getloadavg()), "python": platform.python_version(),
            "platform": platform.platform(), "toolsift": __version__, "bm25s": bm25s_version,
            "numba_threads": numba.get_num_threads()}


@dataclass
class Figure:
    """One measured figure under one condition (``idle`` or ``busy``).

    Attributes:
        name: What was measured, e.g. ``"search raw"``.
        condition: ``"idle"``, ``"busy"`` (two spinning background processes) or a scale.
        unit: ``"ms"`` for latencies (``p50``/``p99`` filled), ``"q/s"`` for throughput
            (``value``), ``"s"`` / ``"MB"`` for one-off costs (``value``).
        p50, p99: Latency percentiles in milliseconds.
        value: The figure for non-latency units.
        n: Number of timed calls (queries).
        baseline: Name of the figure this one is compared with (bm25s), if any.
        extra: Anything else worth keeping (tool counts, k, thread settings).
    """

    name: str
    condition: str
    unit: str
    p50: float | None = None
    p99: float | None = None
    value: float | None = None
    n: int = 0
    baseline: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def latency(cls, name: str, condition: str, seconds: np.ndarray, **kw: Any) -> Figure:
        """A latency figure from per-call seconds."""
        return cls(name, condition, "ms", p50=float(np.percentile(seconds, 50) * 1e3),
                   p99=float(np.percentile(seconds, 99) * 1e3), n=len(seconds), **kw)

    def headline(self) -> float | None:
        """The number ratios are taken on: p50 for latencies, else ``value``."""
        return self.p50 if self.unit == "ms" else self.value

    def cell(self) -> str:
        """The figure as one table cell."""
        if self.unit == "ms":
            return f"{self.p50:8.3f} /{self.p99:8.3f}"
        v = self.value
        digits = f"{v:,.0f}" if v >= 100 else f"{v:.2f}" if v >= 1 else f"{v:.3g}"
        return f"{digits} {self.unit}"


def ratio(fig: Figure, figures: Iterable[Figure]) -> float | None:
    """How many times better ``fig`` is than its baseline under the same condition (> 1:
    toolsift is faster, or smaller); ``None`` without a baseline."""
    if fig.baseline is None:
        return None
    base = next((f for f in figures if f.name == fig.baseline and f.condition == fig.condition), None)
    if base is None or not base.headline() or not fig.headline():
        return None
    if fig.unit == "q/s":  # higher is better
        return fig.headline() / base.headline()
    return base.headline() / fig.headline()


def table(figures: Sequence[Figure], conditions: Sequence[str]) -> list[str]:
    """Rows of ``name | condition: p50 / p99 (ratio) | ...``, one per figure name, after a
    header and a legend line."""
    names = list(dict.fromkeys(f.name for f in figures))
    head = f"{'figure':<28}" + "".join(f"| {c + ': p50 / p99 ms, or value':<44}" for c in conditions)
    rows = [head, "-" * len(head)]
    for name in names:
        cells = []
        for c in conditions:
            fig = next((f for f in figures if f.name == name and f.condition == c), None)
            if fig is None:
                cells.append(f"| {'-':<44}")
                continue
            r = ratio(fig, figures)
            tail = f" ({r:.3g}x {fig.baseline})" if r is not None else ""
            cells.append(f"| {fig.cell() + tail:<44}")
        rows.append(f"{name:<28}" + "".join(cells))
    rows.append("(Nx baseline: N > 1 means toolsift is N times faster / smaller than the baseline)")
    return rows


def write_json(module: str, figures: Sequence[Figure], **meta: Any) -> Path | None:
    """Write ``figures`` (with ratios) to ``$TOOLSIFT_BENCH_OUT/<module>.json``; returns the
    path, or ``None`` when the variable is unset."""
    out = os.environ.get("TOOLSIFT_BENCH_OUT")
    if not out:
        return None
    path = Path(out) / f"{module}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [dict(asdict(f), ratio_to_baseline=ratio(f, figures)) for f in figures]
    path.write_text(json.dumps({"machine": machine(), **meta, "figures": rows}, indent=1))
    return path
