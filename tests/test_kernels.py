"""Tests of the MFTR candidate scorer: the Numba kernel against its plain-NumPy twin,
hand-computed values, edge cases, input validation and the scoring parameters.

The whole module also runs once more in a subprocess with ``NUMBA_DISABLE_JIT=1`` (see
``test_module_passes_with_disable_jit``), so the kernel body runs as plain Python too.
"""

from __future__ import annotations

import json
import math
import os
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np
import pytest

from toolsift.errors import ConfigError
from toolsift.kernels import (
    BREAKDOWN_COLUMNS,
    PAPER_PARAMS,
    ScoringParams,
    get_threads,
    mftr,
    score_candidates,
    score_candidates_reference,
    set_threads,
    warmup,
)

from toolsift.cpus import available_cpus

from ._nojit import assert_module_passes_without_jit
from .conftest import DATA

JIT_DISABLED = os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0")
MFTR_PARAMS_FILE = DATA / "mftr-apibank" / "weight" / "apibank" / "bm25__0" / "fold_0_learned_params.json"

RTOL, ATOL = 1e-5, 1e-6


def sigmoid(x: float) -> float:
    """Textbook sigmoid for hand-computed expectations (arguments kept small)."""
    return 1.0 / (1.0 + math.exp(-x))


# --------------------------------------------------------------------------------------
# Batch construction
# --------------------------------------------------------------------------------------


@dataclass
class Cand:
    """One candidate before flattening: its query, tool and similarity blocks."""

    query: int
    tool: int
    needs: np.ndarray  # [n_needs, 3]
    ap: np.ndarray  # [n_args, n_params]


def flatten(
    queries: list[tuple[int, int, int]],
    tools_required: list[list[int]],
    cands: list[Cand],
    rng: np.random.Generator | None = None,
) -> tuple[np.ndarray, ...]:
    """Lay candidates out in the kernel's flat format.

    Args:
        queries: ``(n_needs, n_args, penalize)`` per query.
        tools_required: Per tool, the required flag of each of its parameters.
        cands: The candidates.
        rng: When given, blocks are stored in shuffled order with junk between them, so
            a kernel that assumes contiguous, ordered blocks fails.

    Returns:
        The eleven input arrays in :func:`score_candidates` order.
    """
    n_needs = np.array([q[0] for q in queries], dtype=np.int64)
    n_args = np.array([q[1] for q in queries], dtype=np.int64)
    penalize = np.array([q[2] for q in queries], dtype=np.uint8)
    param_ptr = np.concatenate([[0], np.cumsum([len(r) for r in tools_required])]).astype(np.int64)
    param_required = np.array([f for r in tools_required for f in r], dtype=np.uint8)

    order = list(range(len(cands)))
    if rng is not None:
        rng.shuffle(order)
    need_rows: list[np.ndarray] = []
    ap_parts: list[np.ndarray] = []
    n_rows = n_ap = 0
    need_off = np.zeros(len(cands), dtype=np.int64)
    param_off = np.zeros(len(cands), dtype=np.int64)
    for i in order:
        c = cands[i]
        assert c.needs.shape == (n_needs[c.query], 3)
        assert c.ap.shape == (n_args[c.query], param_ptr[c.tool + 1] - param_ptr[c.tool])
        if rng is not None and rng.random() < 0.5:
            junk = rng.uniform(5, 9, size=(int(rng.integers(1, 3)), 3))
            need_rows.append(junk)
            n_rows += len(junk)
            ap_parts.append(rng.uniform(5, 9, size=int(rng.integers(1, 4))))
            n_ap += len(ap_parts[-1])
        need_off[i] = n_rows
        need_rows.append(c.needs)
        n_rows += len(c.needs)
        param_off[i] = n_ap
        ap_parts.append(c.ap.reshape(-1))  # row-major = arg-major
        n_ap += c.ap.size
    need_sims = np.concatenate(need_rows).astype(np.float32) if need_rows else np.zeros((0, 3), np.float32)
    ap_sims = np.concatenate(ap_parts).astype(np.float32) if ap_parts else np.zeros(0, np.float32)
    return (
        np.array([c.query for c in cands], dtype=np.int64),
        np.array([c.tool for c in cands], dtype=np.int64),
        need_off,
        param_off,
        n_needs,
        n_args,
        penalize,
        need_sims,
        ap_sims,
        param_ptr,
        param_required,
    )


def random_batch(
    rng: np.random.Generator,
    *,
    nq: int,
    n_tools: int,
    max_cands: int,
    max_needs: int = 4,
    max_args: int = 4,
    max_params: int = 6,
) -> tuple[np.ndarray, ...]:
    """A random batch with ties, negative similarities and empty blocks mixed in."""
    tools_required = [
        [int(f) for f in rng.integers(0, 2, size=int(rng.integers(0, max_params + 1)))]
        for _ in range(n_tools)
    ]
    queries = [
        (int(rng.integers(1, max_needs + 1)), int(rng.integers(0, max_args + 1)), int(rng.integers(0, 2)))
        for _ in range(nq)
    ]

    def sims(shape: tuple[int, ...]) -> np.ndarray:
        kind = rng.integers(0, 4)
        if kind == 0:  # cosine-like, may be negative
            return rng.uniform(-1, 1, size=shape)
        if kind == 1:  # coarse values: many exact ties
            return rng.integers(0, 3, size=shape) / 2.0
        if kind == 2:  # near tau, where the sigmoid is steep
            return 0.5 + rng.normal(0, 0.02, size=shape)
        return rng.uniform(0, 1, size=shape)

    cands = []
    for q, (nn, na, _) in enumerate(queries):
        for t in rng.integers(0, n_tools, size=int(rng.integers(0, max_cands + 1))):
            n_p = len(tools_required[t])
            cands.append(Cand(q, int(t), sims((nn, 3)), sims((na, n_p))))
    return flatten(queries, tools_required, cands, rng)


def random_params(rng: np.random.Generator) -> ScoringParams:
    return ScoringParams(
        weights=tuple(rng.normal(0.25, 0.2, size=4)),
        bias=float(rng.normal(0, 0.5)),
        alpha=float(rng.choice([0.0, 1.0, 15.0, 80.0])),
        tau=float(rng.uniform(0, 1)),
        w_req=float(rng.uniform(0, 1)),
        w_opt=float(rng.choice([0.0, rng.uniform(0, 4)])),
    )


def score_both(batch: tuple[np.ndarray, ...], params: ScoringParams = PAPER_PARAMS):
    """Score with the kernel and the twin, check they agree, return the kernel's output."""
    scores, terms = score_candidates(*batch, params, breakdown=True)
    ref_scores, ref_terms = score_candidates_reference(*batch, params, breakdown=True)
    assert scores.dtype == np.float32 and terms.dtype == np.float32
    assert scores.shape == (len(batch[0]),) and terms.shape == (len(batch[0]), 5)
    np.testing.assert_allclose(terms, ref_terms, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(scores, ref_scores, rtol=RTOL, atol=ATOL)
    # The scores-only path runs the same loop without writing the breakdown.
    np.testing.assert_array_equal(score_candidates(*batch, params), scores)
    return scores, terms


def one_query_batch(
    needs: list[list[float]],
    ap: list[list[float]],
    required: list[int],
    penalize: int = 1,
) -> tuple[np.ndarray, ...]:
    """One query, one candidate: tool 0 with ``len(required)`` parameters."""
    needs_a = np.array(needs, dtype=np.float64).reshape(len(needs), 3)
    ap_a = np.array(ap, dtype=np.float64).reshape(len(ap), len(required))
    queries = [(len(needs), len(ap), penalize)]
    return flatten(queries, [required], [Cand(0, 0, needs_a, ap_a)])


# --------------------------------------------------------------------------------------
# Kernel == twin
# --------------------------------------------------------------------------------------

GRIDS = {
    "small": dict(nq=5, n_tools=4, max_cands=4),
    "mixed": dict(nq=25, n_tools=30, max_cands=10),
    "wide": dict(nq=6, n_tools=10, max_cands=8, max_needs=8, max_args=7, max_params=12),
}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("grid", sorted(GRIDS))
def test_kernel_matches_twin_on_random_grids(seed: int, grid: str) -> None:
    rng = np.random.default_rng([seed, len(grid)])
    batch = random_batch(rng, **GRIDS[grid])
    scores, terms = score_both(batch, random_params(rng))
    assert np.isfinite(scores).all()


@pytest.mark.parametrize("seed", range(3))
def test_kernel_matches_twin_with_default_and_learned_params(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    batch = random_batch(rng, nq=20, n_tools=15, max_cands=8)
    score_both(batch, PAPER_PARAMS)
    if MFTR_PARAMS_FILE.exists():
        score_both(batch, ScoringParams.from_mftr_json(MFTR_PARAMS_FILE))


def test_scores_equal_weighted_breakdown() -> None:
    rng = np.random.default_rng(7)
    batch = random_batch(rng, nq=10, n_tools=8, max_cands=6)
    params = random_params(rng)
    scores, terms = score_candidates(*batch, params, breakdown=True)
    expected = terms[:, :4].astype(np.float64) @ np.array(params.weights) + params.bias - terms[:, 4]
    np.testing.assert_allclose(scores, expected, rtol=RTOL, atol=1e-5)
    assert BREAKDOWN_COLUMNS == ("description", "parameters", "response", "examples", "penalty")


# --------------------------------------------------------------------------------------
# Hand-computed values
# --------------------------------------------------------------------------------------


def test_tiny_case_matches_hand_computed_formula() -> None:
    # One query (2 needs, 2 args, penalised); tool 0 has a required and an optional
    # parameter, tool 1 has none.
    needs = np.array([[0.2, 0.5, 0.1], [0.6, 0.3, 0.0]])
    ap = np.array([[0.9, 0.1], [0.4, 0.3]])  # [arg, param]
    batch = flatten(
        [(2, 2, 1)],
        [[1, 0], []],
        [Cand(0, 0, needs, ap), Cand(0, 1, needs, np.zeros((2, 0)))],
    )
    params = ScoringParams(
        weights=(0.35, 0.25, 0.15, 0.25), bias=0.05, alpha=15, tau=0.5, w_req=0.1, w_opt=0.2
    )
    scores, terms = score_candidates(*batch, params, breakdown=True)

    s_desc, s_resp, s_ex = 0.6, 0.5, 0.1  # column maxima over the two needs
    s_p = (0.9, 0.3)  # per parameter, max over the two arguments
    s_param = (0.9 + 0.3) / 2
    pen = 0.1 * sigmoid(15 * (0.5 - s_p[0])) + 0.2 * sigmoid(15 * (0.5 - s_p[1]))
    expected0 = 0.35 * s_desc + 0.25 * s_param + 0.15 * s_resp + 0.25 * s_ex + 0.05 - pen
    expected1 = 0.35 * s_desc + 0.15 * s_resp + 0.25 * s_ex + 0.05  # no parameters: no S_param, no P

    np.testing.assert_allclose(terms[0], [s_desc, s_param, s_resp, s_ex, pen], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(terms[1], [s_desc, 0.0, s_resp, s_ex, 0.0], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(scores, [expected0, expected1], rtol=RTOL, atol=ATOL)
    # The same numbers written out, so a wrong formula shared by helper and kernel fails.
    assert scores[0] == pytest.approx(0.3192379, abs=2e-6)
    assert scores[1] == pytest.approx(0.36, abs=1e-6)
    score_both(batch, params)


def test_default_params_on_hand_computed_case() -> None:
    batch = one_query_batch([[0.8, 0.4, 0.2]], [[0.3]], required=[1])
    scores, terms = score_candidates(*batch, breakdown=True)
    pen = 0.1 * sigmoid(15 * (0.5 - 0.3))
    expected = 0.35 * 0.8 + 0.25 * 0.3 + 0.15 * 0.4 + 0.25 * 0.2 - pen
    assert scores[0] == pytest.approx(expected, abs=1e-6)
    assert terms[0, 4] == pytest.approx(pen, abs=1e-7)


# --------------------------------------------------------------------------------------
# Edge cases
# --------------------------------------------------------------------------------------


def test_tool_without_parameters_has_zero_param_score_and_penalty() -> None:
    batch = one_query_batch([[0.4, 0.3, 0.2]], [[], [], []], required=[])
    scores, terms = score_both(batch)
    assert terms[0, 1] == 0.0 and terms[0, 4] == 0.0
    assert scores[0] == pytest.approx(0.35 * 0.4 + 0.15 * 0.3 + 0.25 * 0.2, abs=1e-6)


def test_query_without_arguments_has_zero_param_score_and_no_penalty_by_default() -> None:
    batch = one_query_batch([[0.4, 0.3, 0.2]], [], required=[1, 1, 0], penalize=0)
    scores, terms = score_both(batch)
    assert terms[0, 1] == 0.0 and terms[0, 4] == 0.0
    assert scores[0] == pytest.approx(0.35 * 0.4 + 0.15 * 0.3 + 0.25 * 0.2, abs=1e-6)


def test_query_without_arguments_penalized_on_request_counts_every_parameter_unmatched() -> None:
    # The MFTR reference penalises queries without arguments: s_p = 0 for every parameter.
    batch = one_query_batch([[0.4, 0.3, 0.2]], [], required=[1, 1, 0], penalize=1)
    scores, terms = score_both(batch)
    expected = (0.1 + 0.1 + 0.0) * sigmoid(15 * 0.5)
    assert terms[0, 1] == 0.0 and terms[0, 4] == pytest.approx(expected, abs=1e-6)
    assert scores[0] == pytest.approx(0.35 * 0.4 + 0.15 * 0.3 + 0.25 * 0.2 - expected, abs=1e-6)


def test_penalize_off_with_arguments_keeps_param_score_and_drops_penalty() -> None:
    on = one_query_batch([[0.5, 0.5, 0.5]], [[0.1, 0.2]], required=[1, 1], penalize=1)
    off = one_query_batch([[0.5, 0.5, 0.5]], [[0.1, 0.2]], required=[1, 1], penalize=0)
    s_on, t_on = score_both(on)
    s_off, t_off = score_both(off)
    assert t_off[0, 1] == pytest.approx(0.15) and t_off[0, 4] == 0.0
    assert t_on[0, 4] == pytest.approx(0.1 * (sigmoid(15 * 0.4) + sigmoid(15 * 0.3)), abs=1e-6)
    assert s_on[0] == pytest.approx(s_off[0] - t_on[0, 4], abs=1e-6)


def test_one_tool_many_queries() -> None:
    rng = np.random.default_rng(3)
    queries = [(1, 2, 1), (3, 0, 1), (2, 1, 0)]
    cands = [
        Cand(q, 0, rng.uniform(size=(nn, 3)), rng.uniform(size=(na, 2)))
        for q, (nn, na, _) in enumerate(queries)
    ]
    score_both(flatten(queries, [[1, 0]], cands, rng))


def test_all_zero_fields() -> None:
    # All similarities zero: every S_f is 0, each s_p is 0, the penalty is at its
    # "nothing matched" level sigmoid(α·τ) per parameter.
    batch = one_query_batch([[0.0, 0.0, 0.0]] * 2, [[0.0, 0.0]] * 3, required=[1, 0])
    params = ScoringParams(w_req=0.1, w_opt=0.05)
    scores, terms = score_both(batch, params)
    pen = (0.1 + 0.05) * sigmoid(15 * 0.5)
    np.testing.assert_allclose(terms[0], [0, 0, 0, 0, pen], atol=1e-7)
    assert scores[0] == pytest.approx(-pen, abs=1e-6)


def test_one_all_zero_column_among_nonzero() -> None:
    rng = np.random.default_rng(11)
    needs = rng.uniform(0.1, 1, size=(4, 3))
    needs[:, 2] = 0.0
    batch = one_query_batch(needs.tolist(), [[0.7]], required=[0])
    _, terms = score_both(batch)
    assert terms[0, 3] == 0.0
    assert terms[0, 0] == pytest.approx(needs[:, 0].max(), abs=1e-7)


def test_many_needs_takes_max_per_field_independently() -> None:
    needs = np.full((20, 3), 0.1)
    needs[17, 0] = 0.9  # description best at need 17
    needs[3, 1] = 0.8  # response best at need 3
    needs[19, 2] = 0.7  # examples best at the last need
    batch = one_query_batch(needs.tolist(), [[0.6]], required=[1])
    _, terms = score_both(batch)
    np.testing.assert_allclose(terms[0, [0, 2, 3]], [0.9, 0.8, 0.7], atol=1e-7)


def test_negative_similarities_are_not_clipped_at_zero() -> None:
    needs = [[-0.5, -0.2, -0.9], [-0.3, -0.4, -0.8]]
    batch = one_query_batch(needs, [[-0.6, -0.1], [-0.7, -0.2]], required=[1, 1])
    _, terms = score_both(batch)
    np.testing.assert_allclose(terms[0, :4], [-0.3, (-0.6 - 0.1) / 2, -0.2, -0.8], atol=1e-7)


def test_single_candidate() -> None:
    batch = one_query_batch([[0.3, 0.2, 0.1]], [[0.9, 0.8]], required=[0, 1])
    scores, terms = score_both(batch)
    assert scores.shape == (1,) and terms.shape == (1, 5)


def test_no_candidates_returns_empty_arrays() -> None:
    batch = flatten([(1, 1, 1)], [[1]], [])
    scores = score_candidates(*batch)
    scores2, terms = score_candidates(*batch, breakdown=True)
    assert scores.shape == (0,) and scores.dtype == np.float32
    assert scores2.shape == (0,) and terms.shape == (0, 5) and terms.dtype == np.float32


def test_no_candidates_from_plain_empty_lists() -> None:
    scores = score_candidates([], [], [], [], [], [], [], np.zeros((0, 3)), [], [0], [])
    assert scores.shape == (0,)


@pytest.mark.parametrize(
    ("required", "w_req", "w_opt"),
    [([1, 1], 0.3, 0.0), ([0, 0], 0.3, 0.7), ([1, 0], 0.3, 0.7), ([0, 1], 0.0, 0.7)],
)
def test_required_and_optional_weights(required: list[int], w_req: float, w_opt: float) -> None:
    ap = [[0.2, 0.6]]
    batch = one_query_batch([[0.5, 0.5, 0.5]], ap, required=required)
    params = ScoringParams(w_req=w_req, w_opt=w_opt)
    _, terms = score_both(batch, params)
    expected = sum(
        sigmoid(15 * (0.5 - s)) * (w_req if req else w_opt) for s, req in zip(ap[0], required)
    )
    assert terms[0, 4] == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("alpha", [0.0, 1e-3, 1e3, 1e6, 1e300, -1e6])
def test_extreme_alpha_is_stable(alpha: float) -> None:
    # s just below, at and far above tau; α(τ − s) reaches ±1e300 without overflow.
    ap = [[0.49, 0.5, 0.99]]
    batch = one_query_batch([[0.5, 0.5, 0.5]], ap, required=[1, 1, 1])
    params = ScoringParams(alpha=alpha, w_req=1.0)
    with warnings.catch_warnings(), np.errstate(over="raise", invalid="raise", divide="raise"):
        warnings.simplefilter("error")
        scores, terms = score_both(batch, params)
    assert np.isfinite(scores).all()
    pen = terms[0, 4]
    if alpha == 0.0:
        assert pen == pytest.approx(1.5)  # 3 × sigmoid(0)
    elif alpha >= 1e6:
        assert pen == pytest.approx(1.5, abs=1e-6)  # 1 + 0.5 + 0
    elif alpha <= -1e6:
        assert pen == pytest.approx(1.5, abs=1e-6)  # 0 + 0.5 + 1
    assert 0.0 <= pen <= 3.0


def test_python_sigmoid_is_stable() -> None:
    # The kernel's sigmoid, called as plain Python (py_func when jitted).
    sig = getattr(mftr._sigmoid, "py_func", mftr._sigmoid)
    assert sig(1e308) == 1.0 and sig(-1e308) == 0.0 and sig(0.0) == 0.5
    assert sig(-700.0) == pytest.approx(math.exp(-700.0), rel=1e-12)


def test_nonstandard_dtypes_and_layouts_give_same_scores() -> None:
    rng = np.random.default_rng(5)
    batch = random_batch(rng, nq=8, n_tools=6, max_cands=5)
    expected = score_candidates(*batch)
    (cq, ct, cno, cpo, nn, na, pen, ns, aps, pp, pr) = batch
    ns_f = np.asfortranarray(ns.astype(np.float64))
    aps_strided = np.repeat(aps.astype(np.float64), 2)[::2]  # non-contiguous view
    other = (
        cq.astype(np.int32), ct.astype(np.uint16), cno.astype(np.int32), cpo,
        nn.astype(np.int8), na.astype(np.int16), pen.astype(bool), ns_f, aps_strided,
        pp.astype(np.int32), pr.astype(bool),
    )  # fmt: skip
    np.testing.assert_allclose(score_candidates(*other), expected, rtol=RTOL, atol=ATOL)


def test_inputs_in_kernel_dtypes_are_not_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(9)
    batch = random_batch(rng, nq=6, n_tools=5, max_cands=5)
    for arr in batch:
        arr.setflags(write=False)  # read-only buffers (mmap, Arrow) must be accepted as-is
    seen: list[tuple[int, ...]] = []
    real = mftr.score_kernel

    def spy(*args: object) -> None:
        seen.append(tuple(a.__array_interface__["data"][0] for a in args[:11]))  # type: ignore[attr-defined]
        real(*args)

    monkeypatch.setattr(mftr, "score_kernel", spy)
    score_candidates(*batch)
    assert seen == [tuple(a.__array_interface__["data"][0] for a in batch)]


def test_concurrent_calls_from_threads_agree() -> None:
    rng = np.random.default_rng(21)
    size = dict(nq=40, n_tools=50, max_cands=30) if JIT_DISABLED else dict(nq=400, n_tools=500, max_cands=120)
    batch = random_batch(rng, **size)
    expected = score_candidates(*batch)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(3):
                results.append(score_candidates(*batch))
        except BaseException as exc:  # noqa: BLE001  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 12
    for r in results:
        np.testing.assert_array_equal(r, expected)


# --------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------


def _valid_batch() -> list[np.ndarray]:
    # 2 queries, 3 tools (2, 0 and 1 parameters), 4 candidates.
    queries = [(2, 2, 1), (1, 1, 0)]
    rng = np.random.default_rng(0)
    cands = [
        Cand(0, 0, rng.uniform(size=(2, 3)), rng.uniform(size=(2, 2))),
        Cand(0, 1, rng.uniform(size=(2, 3)), np.zeros((2, 0))),
        Cand(1, 2, rng.uniform(size=(1, 3)), rng.uniform(size=(1, 1))),
        Cand(1, 0, rng.uniform(size=(1, 3)), rng.uniform(size=(1, 2))),
    ]
    return list(flatten(queries, [[1, 0], [], [1]], cands))


NAMES = ("cand_query", "cand_tool", "cand_need_off", "cand_param_off", "n_needs", "n_args",
         "penalize", "need_sims", "ap_sims", "param_ptr", "param_required")  # fmt: skip


def _set(name: str, value: object):
    def mutate(b: list) -> None:
        b[NAMES.index(name)] = value

    return mutate


def _poke(name: str, index: object, value: object):
    def mutate(b: list) -> None:
        arr = b[NAMES.index(name)].copy()
        arr[index] = value
        b[NAMES.index(name)] = arr

    return mutate


BAD_INPUTS = {
    "need_off_past_end": (_poke("cand_need_off", 3, 6), r"cand_need_off\[3\]=6 out of bounds for need_sims with 6 rows"),
    "need_off_block_overruns": (_poke("cand_need_off", 1, 5), r"cand_need_off\[1\]=5 out of bounds for need_sims with 6 rows \(candidate 1 needs a block of 2 rows\)"),
    "need_off_negative": (_poke("cand_need_off", 0, -1), r"cand_need_off\[0\]=-1 out of bounds"),
    "need_off_huge": (_poke("cand_need_off", 2, 2**63 - 1), r"cand_need_off\[2\]=9223372036854775807 out of bounds"),
    "param_off_past_end": (_poke("cand_param_off", 3, 6), r"cand_param_off\[3\]=6 out of bounds for ap_sims with 7 entries"),
    "param_off_wraps_int64": (_poke("cand_param_off", 0, 2**63 - 2), r"cand_param_off\[0\]=\d+ out of bounds for ap_sims"),
    "n_args_too_large": (_poke("n_args", 1, 2**62), r"cand_param_off\[2\]=\d+ out of bounds for ap_sims"),
    "query_out_of_range": (_poke("cand_query", 2, 2), r"cand_query\[2\]=2 out of range for 2 queries"),
    "tool_negative": (_poke("cand_tool", 1, -1), r"cand_tool\[1\]=-1 out of range for 3 tools"),
    "need_sims_4_columns": (_set("need_sims", np.zeros((6, 4), np.float32)), r"need_sims must have shape \(rows, 3\).*got \(6, 4\)"),
    "need_sims_1d": (_set("need_sims", np.zeros(18, np.float32)), r"need_sims must have shape"),
    "ap_sims_2d": (_set("ap_sims", np.zeros((7, 1), np.float32)), r"ap_sims must have shape \(k,\), got \(7, 1\)"),
    "cand_tool_short": (_set("cand_tool", np.zeros(3, np.int64)), r"cand_tool has length 3, cand_query has 4"),
    "n_args_short": (_set("n_args", np.zeros(1, np.int64)), r"n_args has length 1, n_needs has 2"),
    "cand_query_2d": (_set("cand_query", np.zeros((4, 1), np.int64)), r"cand_query must be 1-D, got shape \(4, 1\)"),
    "float_indices": (_set("cand_tool", np.zeros(4, np.float64)), r"cand_tool must hold integers, got dtype float64"),
    "string_sims": (_set("ap_sims", np.array(["a"] * 7)), r"ap_sims must hold real numbers"),
    "param_ptr_decreasing": (_set("param_ptr", np.array([0, 2, 1, 3])), r"param_ptr\[2\]=1 is less than param_ptr\[1\]=2"),
    "param_ptr_not_from_zero": (_set("param_ptr", np.array([1, 3, 3, 4])), r"param_ptr\[0\]=1 must be 0"),
    "param_ptr_total_mismatch": (_set("param_ptr", np.array([0, 2, 2, 2])), r"param_ptr\[-1\]=2 must equal the length of param_required \(3\)"),
    "param_ptr_empty": (_set("param_ptr", np.zeros(0, np.int64)), r"param_ptr must have n_tools \+ 1 entries"),
    "zero_needs": (_poke("n_needs", 1, 0), r"n_needs\[1\]=0: every query has at least one tool need"),
    "negative_args": (_poke("n_args", 0, -2), r"n_args\[0\]=-2 is negative"),
    "penalize_not_flag": (_set("penalize", np.array([1, 2])), r"penalize\[1\]=2 is not a 0/1 flag"),
    "required_not_flag": (_set("param_required", np.array([1, 0, 5])), r"param_required\[2\]=5 is not a 0/1 flag"),
    "nan_need_sim": (_poke("need_sims", (2, 1), np.nan), r"need_sims\[2,1\]=nan is not finite"),
    "inf_ap_sim": (_poke("ap_sims", 4, -np.inf), r"ap_sims\[4\]=-inf is not finite"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_inputs_raise_before_the_kernel_runs(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    batch = _valid_batch()
    score_candidates(*batch)  # the unmutated batch is valid
    mutate, message = BAD_INPUTS[case]
    mutate(batch)
    calls: list[int] = []
    monkeypatch.setattr(mftr, "score_kernel", lambda *a: calls.append(1))
    with pytest.raises(ValueError, match=message):
        score_candidates(*batch)
    assert calls == []


def test_check_finite_off_skips_the_scan() -> None:
    batch = _valid_batch()
    batch[7] = batch[7].copy()
    batch[7][0, 0] = np.nan
    scores = score_candidates(*batch, check_finite=False)
    assert scores.shape == (4,)


def test_empty_param_block_offset_is_not_checked() -> None:
    batch = _valid_batch()
    batch[3] = batch[3].copy()
    batch[3][1] = 10**9  # candidate 1's tool has no parameters: its block is empty
    np.testing.assert_array_equal(score_candidates(*batch), score_candidates(*_valid_batch()))


def test_params_must_be_scoring_params() -> None:
    with pytest.raises(TypeError, match="params must be a ScoringParams"):
        score_candidates(*_valid_batch(), {"alpha": 15.0})  # type: ignore[call-overload]


@pytest.mark.skipif(JIT_DISABLED, reason="signatures exist only when compiled")
def test_kernel_has_one_explicit_signature_and_never_compiles_more() -> None:
    kernel = mftr.score_kernel
    assert len(kernel.signatures) == 1
    score_candidates(*_valid_batch())
    bad = [np.asarray(a, dtype=np.int32) if a.dtype == np.int64 else a for a in _valid_batch()]
    outputs = (np.empty(4, np.float32), np.empty((0, 5), np.float32))
    args = (*bad, PAPER_PARAMS.weights_array(), 0.0, 15.0, 0.5, 0.1, 0.0, 0.0, False, *outputs)
    with pytest.raises(TypeError):
        kernel(*args)
    assert len(kernel.signatures) == 1


# --------------------------------------------------------------------------------------
# ScoringParams
# --------------------------------------------------------------------------------------


def test_default_params() -> None:
    p = ScoringParams()
    assert p == PAPER_PARAMS
    assert p.weights == (0.35, 0.25, 0.15, 0.25)
    assert (p.bias, p.alpha, p.tau, p.w_req, p.w_opt) == (0.0, 15.0, 0.5, 0.1, 0.0)
    assert "w_req = 0.1" in (ScoringParams.__doc__ or "") and "w_opt = 0.0" in (ScoringParams.__doc__ or "")


def test_params_dict_round_trip() -> None:
    p = ScoringParams(weights=(0.1, 0.2, 0.3, 0.4), bias=-0.5, alpha=7.0, tau=0.3, w_req=0.2, w_opt=0.05)
    d = p.to_dict()
    assert ScoringParams.from_dict(d) == p
    assert ScoringParams.from_dict(json.loads(json.dumps(d))) == p
    assert ScoringParams.from_dict({"tau": 0.4}) == ScoringParams(tau=0.4)
    assert ScoringParams(weights=np.array([1, 2, 3, 4])).weights == (1.0, 2.0, 3.0, 4.0)


def test_params_are_frozen() -> None:
    with pytest.raises(AttributeError):
        PAPER_PARAMS.alpha = 1.0  # type: ignore[misc]


@pytest.mark.parametrize("field", ["bias", "alpha", "tau", "w_req", "w_opt"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_scalar_names_the_field(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match=rf"^{field}: must be finite"):
        ScoringParams(**{field: value})


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ((0.1, 0.2, 0.3), r"weights: expected 4 values"),
        ((0.1, 0.2, 0.3, 0.4, 0.5), r"weights: expected 4 values"),
        ((0.1, float("nan"), 0.3, 0.4), r"weights\[1\] \(parameters\): must be finite"),
        ((0.1, 0.2, "x", 0.4), r"weights\[2\] \(response\): expected a real number"),
        ("abcd", r"weights: expected a sequence"),
        (0.5, r"weights: expected a sequence"),
    ],
)
def test_bad_weights(weights: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ScoringParams(weights=weights)  # type: ignore[arg-type]


def test_bad_param_types_and_keys() -> None:
    with pytest.raises(ConfigError, match=r"^alpha: expected a real number, got bool"):
        ScoringParams(alpha=True)
    with pytest.raises(ConfigError, match=r"^tau: expected a real number, got str"):
        ScoringParams(tau="0.5")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['taus'\]"):
        ScoringParams.from_dict({"taus": 0.5})
    with pytest.raises(ConfigError, match="expected a mapping"):
        ScoringParams.from_dict([("tau", 0.5)])  # type: ignore[arg-type]


def test_from_mftr_json_reads_the_authors_file() -> None:
    raw = json.loads(MFTR_PARAMS_FILE.read_text())
    p = ScoringParams.from_mftr_json(raw)
    assert p.weights == tuple(raw["base_weight"][0])
    assert p.weights[0] == pytest.approx(0.20098550617694855)
    assert p.bias == raw["base_bias"][0] == pytest.approx(-0.10955178737640381)
    assert (p.alpha, p.tau, p.w_req, p.w_opt) == (raw["alpha"], raw["tau"], raw["w_req"], raw["w_opt"])
    assert ScoringParams.from_mftr_json(MFTR_PARAMS_FILE) == p
    assert ScoringParams.from_mftr_json(str(MFTR_PARAMS_FILE)) == p
    assert ScoringParams.from_mftr_json(p.to_mftr_json()) == p
    assert ScoringParams.from_dict(p.to_dict()) == p


def test_from_mftr_json_variants_and_errors(tmp_path: Path) -> None:
    base = {"base_weight": [[0.1, 0.2, 0.3, 0.4]], "base_bias": [0.5], "tau": 0.4, "w_req": 0.2, "w_opt": 0.1}
    p = ScoringParams.from_mftr_json(base)
    assert p.alpha == 15.0 and p.weights == (0.1, 0.2, 0.3, 0.4) and p.bias == 0.5
    flat = {**base, "base_weight": [0.1, 0.2, 0.3, 0.4], "base_bias": 0.5}
    assert ScoringParams.from_mftr_json(flat) == p

    with pytest.raises(ConfigError, match="missing key 'w_opt'"):
        ScoringParams.from_mftr_json({k: v for k, v in base.items() if k != "w_opt"})
    with pytest.raises(ConfigError, match=r"base_weight: expected \[\[4 numbers\]\], got shape \(1, 3\)"):
        ScoringParams.from_mftr_json({**base, "base_weight": [[0.1, 0.2, 0.3]]})
    with pytest.raises(ConfigError, match=r"base_bias\[0\]: must be finite"):
        ScoringParams.from_mftr_json({**base, "base_bias": [float("nan")]})
    with pytest.raises(ConfigError, match=r"^tau: must be finite"):
        ScoringParams.from_mftr_json({**base, "tau": float("inf")})

    bad_file = tmp_path / "fold_0_learned_params.json"
    bad_file.write_text(json.dumps({**base, "w_req": None}))
    with pytest.raises(ConfigError, match=rf"{bad_file.name}: w_req: expected a real number"):
        ScoringParams.from_mftr_json(bad_file)
    with pytest.raises(ConfigError, match="cannot read MFTR params"):
        ScoringParams.from_mftr_json(tmp_path / "missing.json")


# --------------------------------------------------------------------------------------
# Threads, warm-up, NUMBA_DISABLE_JIT
# --------------------------------------------------------------------------------------


def test_set_threads() -> None:
    before = get_threads()
    try:
        assert set_threads(1) == 1 == get_threads()
        assert set_threads(0) == min(numba.config.NUMBA_NUM_THREADS, available_cpus())
        score_candidates(*_valid_batch())
        for bad in (-1, numba.config.NUMBA_NUM_THREADS + 1):
            with pytest.raises(ConfigError, match=rf"threads={bad} out of range"):
                set_threads(bad)
        with pytest.raises(ConfigError, match="expected an integer"):
            set_threads(1.5)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="expected an integer"):
            set_threads(True)
    finally:
        set_threads(before)


def test_warmup_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    # warmup() runs both kernel variants (plain and breakdown) on a real batch, and what
    # they return is a valid scoring of it.
    import toolsift.kernels as kernels

    calls: list[tuple[bool, object]] = []
    real = kernels.score_candidates

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append((bool(kwargs.get("breakdown", False)), out))
        return out

    monkeypatch.setattr(kernels, "score_candidates", spy)
    warmup()
    assert sorted(b for b, _ in calls) == [False, True]
    for _breakdown, out in calls:
        scores = out[0] if isinstance(out, tuple) else out
        scores = np.asarray(scores)
        assert scores.shape[0] == 2 and np.all(np.isfinite(scores))  # two candidates


@pytest.mark.slow  # the whole module again, in plain Python
@pytest.mark.skipif(JIT_DISABLED, reason="already running with NUMBA_DISABLE_JIT=1")
def test_module_passes_with_disable_jit() -> None:
    assert_module_passes_without_jit(__file__, mftr.__file__)
