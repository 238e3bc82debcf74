"""Throughput of the MFTR candidate scorer: Numba kernel vs its plain-NumPy twin.

Run with ``PYTHONPATH=src python -m pytest benchmarks/bench_kernels.py``. Each benchmark
records ``pairs_per_s`` (scored query-tool pairs per second, from the mean time) in
``benchmark.extra_info`` and prints it. The batch mimics offline scoring: 1,000 queries ×
200 candidates, 2 tool needs and 3 arguments per query, tools with ~4 parameters
(Poisson), half of them required, everything penalised. The twin runs on 25 queries of
the same shape so it finishes in seconds.
"""

from __future__ import annotations

import numpy as np
import pytest

from toolsift.kernels import (
    DEFAULT_PARAMS,
    get_threads,
    score_candidates,
    score_candidates_reference,
    set_threads,
    warmup,
)
from toolsift.kernels import mftr

Batch = tuple[np.ndarray, ...]


def realistic_batch(
    nq: int,
    per_query: int = 200,
    *,
    n_tools: int = 5_000,
    needs: int = 2,
    args: int = 3,
    mean_params: float = 4.0,
    seed: int = 0,
) -> Batch:
    """Build a batch in :func:`score_candidates` layout with random similarities.

    Args:
        nq: Number of queries.
        per_query: Candidates per query.
        n_tools: Catalogue size the candidates are drawn from.
        needs: Tool needs per query.
        args: Extracted arguments per query.
        mean_params: Mean parameters per tool (Poisson).
        seed: RNG seed.

    Returns:
        The eleven input arrays, in the kernel's exact dtypes.
    """
    rng = np.random.default_rng(seed)
    n_params = rng.poisson(mean_params, n_tools)
    param_ptr = np.concatenate([[0], np.cumsum(n_params)]).astype(np.int64)
    param_required = (rng.random(int(param_ptr[-1])) < 0.5).astype(np.uint8)
    nc = nq * per_query
    cand_query = np.repeat(np.arange(nq, dtype=np.int64), per_query)
    cand_tool = rng.integers(0, n_tools, nc, dtype=np.int64)
    cand_need_off = np.arange(nc, dtype=np.int64) * needs
    block = args * n_params[cand_tool]
    cand_param_off = np.concatenate([[0], np.cumsum(block)[:-1]]).astype(np.int64)
    return (
        cand_query,
        cand_tool,
        cand_need_off,
        cand_param_off,
        np.full(nq, needs, dtype=np.int64),
        np.full(nq, args, dtype=np.int64),
        np.ones(nq, dtype=np.uint8),
        rng.random((nc * needs, 3), dtype=np.float32),
        rng.random(int(block.sum()), dtype=np.float32),
        param_ptr,
        param_required,
    )


@pytest.fixture(scope="module", autouse=True)
def _all_threads_and_warm():
    before = get_threads()
    set_threads(0)
    warmup()
    yield
    set_threads(before)


@pytest.fixture(scope="module")
def big() -> Batch:
    return realistic_batch(1_000)


@pytest.fixture(scope="module")
def small() -> Batch:
    return realistic_batch(25)


def _record(benchmark, pairs: int) -> None:  # type: ignore[no-untyped-def]
    benchmark.extra_info["pairs"] = pairs
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable
        return
    rate = pairs / stats.stats.mean
    benchmark.extra_info["pairs_per_s"] = rate
    benchmark.extra_info["threads"] = get_threads()
    threads = get_threads()
    print(f"\n{benchmark.name}: {rate / 1e6:,.2f} M pairs/s ({pairs:,} pairs, {threads} threads)")


def test_kernel_checked(benchmark, big: Batch) -> None:
    """score_candidates as a caller uses it: validation, finiteness scan, kernel."""
    benchmark.group = "mftr scorer"
    benchmark(score_candidates, *big)
    _record(benchmark, len(big[0]))


def test_kernel_unchecked_finite(benchmark, big: Batch) -> None:
    """score_candidates with check_finite=False (offsets and shapes still validated)."""
    benchmark.group = "mftr scorer"
    benchmark(score_candidates, *big, check_finite=False)
    _record(benchmark, len(big[0]))


def test_kernel_with_breakdown(benchmark, big: Batch) -> None:
    """score_candidates also writing the per-field breakdown."""
    benchmark.group = "mftr scorer"
    benchmark(score_candidates, *big, breakdown=True)
    _record(benchmark, len(big[0]))


def test_kernel_raw(benchmark, big: Batch) -> None:
    """The jitted kernel alone, no Python-side checks: the ceiling."""
    benchmark.group = "mftr scorer"
    nc = len(big[0])
    p = DEFAULT_PARAMS
    out = np.empty(nc, dtype=np.float32)
    no_breakdown = np.empty((0, 5), dtype=np.float32)
    all_fields = np.full(len(big[9]) - 1, 15, dtype=np.uint8)  # tool_fields: every field present
    benchmark(
        mftr.score_kernel, *big, all_fields, p.weights_array(), p.bias, p.alpha, p.tau, p.w_req,
        p.w_opt, p.param_max_share, p.renormalize, out, no_breakdown,
    )  # fmt: skip
    _record(benchmark, nc)


def test_twin(benchmark, small: Batch) -> None:
    """The plain-NumPy twin (test oracle) on a 40x smaller batch."""
    benchmark.group = "mftr scorer"
    benchmark.pedantic(score_candidates_reference, args=small, rounds=3, iterations=1)
    _record(benchmark, len(small[0]))


def test_service_request(benchmark) -> None:
    """Latency case: one query, 200 candidates, through the checked entry point."""
    benchmark.group = "mftr single query"
    one = realistic_batch(1, seed=1)
    benchmark(score_candidates, *one)
    _record(benchmark, len(one[0]))
