"""The cold-start table: what a new user gets (``default``: the hybrid preset; ``default-bm25``) beside flat
bm25s and flat dense baselines and peer tool retrievers, on raw tools and raw queries with
no labels, no LLM and no feedback (see :mod:`toolsift.evaluate.cold`).

APIBank always runs (well under a minute); the four big sets only with
``TOOLSIFT_BENCH_ALL=1``. Numbers are printed, never asserted. Run:
``python -m pytest benchmarks/bench_coldstart.py -s`` (add ``TOOLSIFT_BENCH_ALL=1``).
"""

from __future__ import annotations

import os

import pytest

from toolsift.evaluate import MftrDataset, UltraToolDataset, evaluate
from toolsift.evaluate.cold import COLD_METHODS
from toolsift.evaluate.methods import MethodUnavailable, run_method
from toolsift.evaluate.report import format_table
from toolsift.evaluate.ultratool import run_ultratool

from .conftest import DATA, report

_ALL = os.environ.get("TOOLSIFT_BENCH_ALL") == "1"
_big = pytest.mark.skipif(not _ALL, reason="opt-in: minutes per set with the dense methods; set TOOLSIFT_BENCH_ALL=1 (APIBank always runs)")
SETS = [
    pytest.param("mftr-apibank", id="apibank"),
    pytest.param("mftr-apigen", id="apigen", marks=_big),
    pytest.param("mftr-gorilla-huggingface", id="gorilla", marks=_big),
    pytest.param("mftr-toolink", id="toolink", marks=_big),
    pytest.param("ultratool", id="ultratool", marks=_big),
]
METRICS = ("ndcg@10", "recall@10")


def _table(folder: str) -> tuple[str, dict, dict, dict]:
    """Every cold-start method on one set: (name, results, seconds, skipped)."""
    ultra = folder == "ultratool"
    ds = UltraToolDataset.load(DATA / folder) if ultra else MftrDataset.load(DATA / folder)
    qrels = ds.qrels()
    results, seconds, skipped = {}, {}, {}
    for m in COLD_METHODS:
        try:
            out = run_ultratool(ds, m) if ultra else run_method(ds, m)
        except MethodUnavailable as exc:  # dense or peers extra not installed
            skipped[m] = str(exc)
            continue
        results[m] = evaluate(qrels, out.run, metrics=METRICS)
        seconds[m] = out.seconds
    return ds.name, results, seconds, skipped


@pytest.mark.parametrize("folder", SETS)
def test_coldstart_table(benchmark, folder):
    name, results, seconds, skipped = benchmark.pedantic(_table, args=(folder,), rounds=1, iterations=1)
    table = format_table(results, METRICS, seconds=seconds,
                         title=f"cold start, {name}: raw tools, raw queries, no labels/LLM/feedback")
    print("\n" + table)
    for line in table.splitlines():
        report(line)
    for m, why in skipped.items():
        report(f"{name} {m}: skipped: {why}")
    benchmark.extra_info.update({m: {k: r.mean[k] for k in METRICS} for m, r in results.items()})
