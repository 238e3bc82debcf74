"""Numba kernels that score MFTR candidate sets, and their checked Python entry point.

One call scores many queries: candidates of every query in a batch are laid out flat and
each candidate points at its own block of precomputed similarities (see
:func:`score_candidates` for the layout). Per candidate the kernel takes the max over the
query's tool needs per field, the max over the query's arguments per tool parameter, the
mean of those parameter maxima, the sigmoid missing-parameter penalty and the weighted
sum. The work per candidate is tiny (a few dozen loads and a handful of ``exp``), so the
kernels are memory-bound loops over candidates, parallel over candidates.

The jitted functions have explicit signatures and compilation is disabled after them, so
nothing compiles on a call with unexpected types (a call with wrong types raises
``TypeError`` instead); the signatures are compiled, or loaded from Numba's on-disk cache,
when this module is imported. Input arrays are typed read-only in the signatures so
read-only buffers (memory-mapped index files, Arrow buffers) are accepted without a copy.
With ``NUMBA_DISABLE_JIT=1`` the same functions run as plain Python.
"""

from __future__ import annotations

import math
import threading
from typing import Literal, overload

import numba
import numpy as np
from numba import types as nt

from .params import DEFAULT_PARAMS, ScoringParams

__all__ = [
    "BREAKDOWN_COLUMNS",
    "PARALLEL_MIN_CANDIDATES",
    "score_candidates",
    "score_kernel",
    "score_breakdown_kernel",
]

#: Columns of the breakdown array returned with ``breakdown=True``.
BREAKDOWN_COLUMNS: tuple[str, ...] = ("description", "parameters", "response", "examples", "penalty")

#: Below this many candidates a batch runs on the calling thread, where waking the
#: worker threads would cost more than it saves. On a 2-core machine the parallel kernel
#: already wins at 64 candidates (3.7 µs vs 5.6 µs) and is 2.3× faster at 200.
PARALLEL_MIN_CANDIDATES = 64

_ro_i8 = nt.Array(nt.int64, 1, "C", readonly=True)
_ro_u1 = nt.Array(nt.uint8, 1, "C", readonly=True)
_ro_f4 = nt.Array(nt.float32, 1, "C", readonly=True)
_ro_f4_2d = nt.Array(nt.float32, 2, "C", readonly=True)
_ro_f8 = nt.Array(nt.float64, 1, "C", readonly=True)
_f8 = nt.float64

# cand_query, cand_tool, cand_need_off, cand_param_off, n_needs, n_args, penalize,
# need_sims, ap_sims, param_ptr, param_required
_INPUTS = (_ro_i8, _ro_i8, _ro_i8, _ro_i8, _ro_i8, _ro_i8, _ro_u1, _ro_f4_2d, _ro_f4, _ro_i8, _ro_u1)
# weights, bias, alpha, tau, w_req, w_opt
_PARAMS = (_ro_f8, _f8, _f8, _f8, _f8, _f8)

_SIG_TERMS = nt.UniTuple(_f8, 5)(nt.int64, *_INPUTS, _f8, _f8, _f8, _f8)
_SIG_SIGMOID = _f8(_f8)
#: Signature of :func:`score_kernel` (inputs, params, ``out: float32[nc]``).
SIG_SCORES = nt.void(*_INPUTS, *_PARAMS, nt.float32[::1])
#: Signature of :func:`score_breakdown_kernel` (adds ``breakdown: float32[nc, 5]``).
SIG_BREAKDOWN = nt.void(*_INPUTS, *_PARAMS, nt.float32[::1], nt.float32[:, ::1])

_JIT = {"cache": True, "nogil": True}


@numba.njit(_SIG_SIGMOID, **_JIT)
def _sigmoid(x: float) -> float:
    # Only ever exp() of a non-positive number: no overflow for any finite x.
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


@numba.njit(_SIG_TERMS, **_JIT)
def _candidate_terms(
    i, cand_query, cand_tool, cand_need_off, cand_param_off, n_needs, n_args, penalize,
    need_sims, ap_sims, param_ptr, param_required, alpha, tau, w_req, w_opt,
):  # fmt: skip
    """Return ``(S_desc, S_param, S_resp, S_ex, P)`` of candidate ``i``, in float64."""
    q = cand_query[i]
    t = cand_tool[i]

    # Fields: max over the query's needs. float() widens float32 so that plain-Python
    # mode (NUMBA_DISABLE_JIT) computes in float64 like the compiled code.
    row = cand_need_off[i]
    nn = n_needs[q]
    s_desc = 0.0
    s_resp = 0.0
    s_ex = 0.0
    if nn > 0:
        s_desc = float(need_sims[row, 0])
        s_resp = float(need_sims[row, 1])
        s_ex = float(need_sims[row, 2])
        for r in range(row + 1, row + nn):
            s_desc = max(s_desc, float(need_sims[r, 0]))
            s_resp = max(s_resp, float(need_sims[r, 1]))
            s_ex = max(s_ex, float(need_sims[r, 2]))

    # Parameters: per parameter the max over arguments (arg-major block), then the mean.
    p0 = param_ptr[t]
    n_params = param_ptr[t + 1] - p0
    na = n_args[q]
    s_param = 0.0
    pen = 0.0
    if n_params > 0 and na > 0:
        base = cand_param_off[i]
        # No arguments means nothing to match: the model defines P = 0 then, whatever
        # the caller's flag says (this branch is not reached).
        apply_penalty = penalize[q] != 0 and (w_req != 0.0 or w_opt != 0.0)
        total = 0.0
        for p in range(n_params):
            best = float(ap_sims[base + p])
            for a in range(1, na):
                best = max(best, float(ap_sims[base + a * n_params + p]))
            total += best
            if apply_penalty:
                # No "skip the exp when w == 0" branch: required flags are close to
                # random, and the mispredictions cost more than the exp they save.
                w = w_req if param_required[p0 + p] != 0 else w_opt
                pen += w * _sigmoid(alpha * (tau - best))
        s_param = total / n_params
    return s_desc, s_param, s_resp, s_ex, pen


@numba.njit(SIG_SCORES, parallel=True, **_JIT)
def score_kernel(
    cand_query, cand_tool, cand_need_off, cand_param_off, n_needs, n_args, penalize,
    need_sims, ap_sims, param_ptr, param_required,
    weights, bias, alpha, tau, w_req, w_opt, out,
):  # fmt: skip
    """Write the MFTR score of every candidate into ``out`` (parallel over candidates).

    Unchecked: arguments must already have the exact types of :data:`SIG_SCORES` and
    valid offsets. Use :func:`score_candidates` unless the inputs are known good.
    """
    w_desc, w_param, w_resp, w_ex = weights[0], weights[1], weights[2], weights[3]
    for i in numba.prange(out.shape[0]):
        d, sp, r, e, pen = _candidate_terms(
            i, cand_query, cand_tool, cand_need_off, cand_param_off, n_needs, n_args,
            penalize, need_sims, ap_sims, param_ptr, param_required, alpha, tau, w_req, w_opt,
        )  # fmt: skip
        out[i] = w_desc * d + w_param * sp + w_resp * r + w_ex * e + bias - pen


@numba.njit(SIG_BREAKDOWN, parallel=True, **_JIT)
def score_breakdown_kernel(
    cand_query, cand_tool, cand_need_off, cand_param_off, n_needs, n_args, penalize,
    need_sims, ap_sims, param_ptr, param_required,
    weights, bias, alpha, tau, w_req, w_opt, out, breakdown,
):  # fmt: skip
    """Like :func:`score_kernel`, also writing ``(S_desc, S_param, S_resp, S_ex, P)`` rows.

    Unchecked, see :func:`score_kernel`.
    """
    w_desc, w_param, w_resp, w_ex = weights[0], weights[1], weights[2], weights[3]
    for i in numba.prange(out.shape[0]):
        d, sp, r, e, pen = _candidate_terms(
            i, cand_query, cand_tool, cand_need_off, cand_param_off, n_needs, n_args,
            penalize, need_sims, ap_sims, param_ptr, param_required, alpha, tau, w_req, w_opt,
        )  # fmt: skip
        out[i] = w_desc * d + w_param * sp + w_resp * r + w_ex * e + bias - pen
        breakdown[i, 0] = d
        breakdown[i, 1] = sp
        breakdown[i, 2] = r
        breakdown[i, 3] = e
        breakdown[i, 4] = pen


# Serial twins of the two entry points for small batches and for calls that arrive while
# another thread runs a parallel kernel. Separate function objects rather than a second
# njit of the same function: Numba's cache index does not key on parallel=, so two
# dispatchers of one function would overwrite each other's cache entries.
@numba.njit(SIG_SCORES, **_JIT)
def _score_serial(
    cand_query, cand_tool, cand_need_off, cand_param_off, n_needs, n_args, penalize,
    need_sims, ap_sims, param_ptr, param_required,
    weights, bias, alpha, tau, w_req, w_opt, out,
):  # fmt: skip
    w_desc, w_param, w_resp, w_ex = weights[0], weights[1], weights[2], weights[3]
    for i in range(out.shape[0]):
        d, sp, r, e, pen = _candidate_terms(
            i, cand_query, cand_tool, cand_need_off, cand_param_off, n_needs, n_args,
            penalize, need_sims, ap_sims, param_ptr, param_required, alpha, tau, w_req, w_opt,
        )  # fmt: skip
        out[i] = w_desc * d + w_param * sp + w_resp * r + w_ex * e + bias - pen


@numba.njit(SIG_BREAKDOWN, **_JIT)
def _score_breakdown_serial(
    cand_query, cand_tool, cand_need_off, cand_param_off, n_needs, n_args, penalize,
    need_sims, ap_sims, param_ptr, param_required,
    weights, bias, alpha, tau, w_req, w_opt, out, breakdown,
):  # fmt: skip
    w_desc, w_param, w_resp, w_ex = weights[0], weights[1], weights[2], weights[3]
    for i in range(out.shape[0]):
        d, sp, r, e, pen = _candidate_terms(
            i, cand_query, cand_tool, cand_need_off, cand_param_off, n_needs, n_args,
            penalize, need_sims, ap_sims, param_ptr, param_required, alpha, tau, w_req, w_opt,
        )  # fmt: skip
        out[i] = w_desc * d + w_param * sp + w_resp * r + w_ex * e + bias - pen
        breakdown[i, 0] = d
        breakdown[i, 1] = sp
        breakdown[i, 2] = r
        breakdown[i, 3] = e
        breakdown[i, 4] = pen


# --------------------------------------------------------------------------------------
# Checked entry point
# --------------------------------------------------------------------------------------

# Held by whichever thread runs a parallel kernel. A second thread that finds it taken
# runs the serial kernel instead: with Numba's default "workqueue" threading layer two
# concurrent parallel launches abort the process, and with any layer they would
# oversubscribe the cores that the first launch already uses.
_parallel_lock = threading.Lock()


def _shape_1d(name: str, a: object, kinds: str, what: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    # An empty list arrives as float64; its dtype does not matter.
    if arr.size and arr.dtype.kind not in kinds:
        raise ValueError(f"{name} must hold {what}, got dtype {arr.dtype}")
    return arr


def _index_array(name: str, a: object) -> np.ndarray:
    return np.ascontiguousarray(_shape_1d(name, a, "iu", "integers"), dtype=np.int64)


def _flag_array(name: str, a: object) -> np.ndarray:
    arr = _shape_1d(name, a, "iub", "0/1 flags")
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{i}]={arr[i]} is not a 0/1 flag")
    return np.ascontiguousarray(arr, dtype=np.uint8)


def _sims_array(name: str, a: object, ndim: int, check_finite: bool) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim != ndim or (ndim == 2 and arr.shape[1] != 3):
        want = "(rows, 3) [description, response, examples]" if ndim == 2 else "(k,)"
        raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    if arr.size and arr.dtype.kind not in "fiu":
        raise ValueError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    if check_finite and arr.size:
        bad = ~np.isfinite(arr)
        if bad.any():
            idx = np.unravel_index(int(np.flatnonzero(bad)[0]), arr.shape)
            where = ",".join(str(int(j)) for j in idx)
            raise ValueError(f"{name}[{where}]={arr[idx]} is not finite")
    return arr


def _check_range(name: str, arr: np.ndarray, lo: int, hi: int, what: str) -> None:
    bad = (arr < lo) | (arr >= hi)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{i}]={arr[i]} out of range for {what} (valid: {lo}..{hi - 1})")


def _check_blocks(
    off_name: str, off: np.ndarray, length: np.ndarray, target: str, size: int, unit: str
) -> None:
    # Written as size - off < length rather than off + length > size: off is caller data
    # and off + length could wrap around int64.
    nonempty = length > 0
    bad = nonempty & ((off < 0) | (off > size) | (size - off < length))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{off_name}[{i}]={off[i]} out of bounds for {target} with {size} {unit} "
            f"(candidate {i} needs a block of {length[i]} {unit})"
        )


@overload
def score_candidates(
    cand_query: np.ndarray, cand_tool: np.ndarray, cand_need_off: np.ndarray,
    cand_param_off: np.ndarray, n_needs: np.ndarray, n_args: np.ndarray,
    penalize: np.ndarray, need_sims: np.ndarray, ap_sims: np.ndarray,
    param_ptr: np.ndarray, param_required: np.ndarray,
    params: ScoringParams = ..., *, breakdown: Literal[False] = ...,
    parallel: bool | None = ..., check_finite: bool = ...,
) -> np.ndarray: ...  # fmt: skip
@overload
def score_candidates(
    cand_query: np.ndarray, cand_tool: np.ndarray, cand_need_off: np.ndarray,
    cand_param_off: np.ndarray, n_needs: np.ndarray, n_args: np.ndarray,
    penalize: np.ndarray, need_sims: np.ndarray, ap_sims: np.ndarray,
    param_ptr: np.ndarray, param_required: np.ndarray,
    params: ScoringParams = ..., *, breakdown: Literal[True],
    parallel: bool | None = ..., check_finite: bool = ...,
) -> tuple[np.ndarray, np.ndarray]: ...  # fmt: skip


def score_candidates(
    cand_query: np.ndarray,
    cand_tool: np.ndarray,
    cand_need_off: np.ndarray,
    cand_param_off: np.ndarray,
    n_needs: np.ndarray,
    n_args: np.ndarray,
    penalize: np.ndarray,
    need_sims: np.ndarray,
    ap_sims: np.ndarray,
    param_ptr: np.ndarray,
    param_required: np.ndarray,
    params: ScoringParams = DEFAULT_PARAMS,
    *,
    breakdown: bool = False,
    parallel: bool | None = None,
    check_finite: bool = True,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Score a flat batch of (query, candidate tool) pairs with the MFTR model.

    A batch holds ``nq`` queries and ``nc`` candidates over all of them. Similarities are
    precomputed by the caller; each candidate points at its own blocks.

    Every array is validated (shape, dtype kind, offsets in bounds) before any kernel
    runs, then converted to the kernel's exact dtype with ``np.ascontiguousarray``, which
    does not copy an array that already has that dtype and layout.

    Args:
        cand_query: ``int[nc]``, the query (``0..nq-1``) each candidate belongs to.
        cand_tool: ``int[nc]``, the tool (``0..n_tools-1``) each candidate is.
        cand_need_off: ``int[nc]``, first row of candidate ``i``'s block in
            ``need_sims``; the block has ``n_needs[cand_query[i]]`` rows.
        cand_param_off: ``int[nc]``, start of candidate ``i``'s block in ``ap_sims``; the
            block has ``n_args[q] * n_params(t)`` entries, arg-major
            (``[a * n_params(t) + p]``). Not checked, and not read, for empty blocks.
        n_needs: ``int[nq]``, tool needs per query (at least 1).
        n_args: ``int[nq]``, extracted arguments per query (0 allowed: then
            ``S_param = 0`` and ``P = 0``).
        penalize: ``0/1[nq]``, whether the missing-parameter penalty applies to a query.
            Ignored for queries without arguments, whose penalty is 0 by definition.
        need_sims: ``float[m, 3]``, per candidate and need the (description, response,
            examples) similarities.
        ap_sims: ``float[k]``, argument-parameter similarities.
        param_ptr: ``int[n_tools + 1]``, tool ``t``'s parameters are
            ``param_ptr[t]:param_ptr[t+1]`` (CSR row pointer; starts at 0, non-decreasing).
        param_required: ``0/1[param_ptr[-1]]``, whether each parameter is required.
        params: Weights, bias and penalty shape.
        breakdown: Also return the per-candidate terms.
        parallel: ``None`` runs batches of at least :data:`PARALLEL_MIN_CANDIDATES` on all
            threads (see :func:`toolsift.kernels.set_threads`) and smaller ones on the
            calling thread; ``True``/``False`` forces the choice. A parallel request made
            while another thread is running a parallel kernel runs serially.
        check_finite: Reject NaN/inf similarities (one extra pass over both arrays). Turn
            off only for inputs known to be finite: the kernel's ``max`` skips NaN.

    Returns:
        ``scores: float32[nc]``; with ``breakdown=True`` the tuple ``(scores,
        terms: float32[nc, 5])``, columns :data:`BREAKDOWN_COLUMNS` =
        ``(S_desc, S_param, S_resp, S_ex, P)``, so that
        ``scores == terms[:, :4] @ params.weights + params.bias - terms[:, 4]``.

    Raises:
        ValueError: An array has the wrong shape or dtype kind, lengths disagree, an
            index or offset is out of bounds (the message names the array, position and
            value), or a similarity is not finite.
        TypeError: ``params`` is not a :class:`ScoringParams`.
    """
    if not isinstance(params, ScoringParams):
        raise TypeError(f"params must be a ScoringParams, got {type(params).__name__}")

    cand_query = _index_array("cand_query", cand_query)
    cand_tool = _index_array("cand_tool", cand_tool)
    cand_need_off = _index_array("cand_need_off", cand_need_off)
    cand_param_off = _index_array("cand_param_off", cand_param_off)
    n_needs = _index_array("n_needs", n_needs)
    n_args = _index_array("n_args", n_args)
    penalize = _flag_array("penalize", penalize)
    need_sims = _sims_array("need_sims", need_sims, 2, check_finite)
    ap_sims = _sims_array("ap_sims", ap_sims, 1, check_finite)
    param_ptr = _index_array("param_ptr", param_ptr)
    param_required = _flag_array("param_required", param_required)

    nc = cand_query.shape[0]
    for name, arr in (("cand_tool", cand_tool), ("cand_need_off", cand_need_off),
                      ("cand_param_off", cand_param_off)):  # fmt: skip
        if arr.shape[0] != nc:
            raise ValueError(f"{name} has length {arr.shape[0]}, cand_query has {nc} (one per candidate)")
    nq = n_needs.shape[0]
    for name, arr in (("n_args", n_args), ("penalize", penalize)):
        if arr.shape[0] != nq:
            raise ValueError(f"{name} has length {arr.shape[0]}, n_needs has {nq} (one per query)")

    if param_ptr.shape[0] == 0:
        raise ValueError("param_ptr must have n_tools + 1 entries, got an empty array")
    if param_ptr[0] != 0:
        raise ValueError(f"param_ptr[0]={param_ptr[0]} must be 0")
    steps = np.diff(param_ptr)
    if (steps < 0).any():
        i = int(np.flatnonzero(steps < 0)[0]) + 1
        raise ValueError(f"param_ptr[{i}]={param_ptr[i]} is less than param_ptr[{i - 1}]={param_ptr[i - 1]}")
    if param_ptr[-1] != param_required.shape[0]:
        raise ValueError(
            f"param_ptr[-1]={param_ptr[-1]} must equal the length of param_required "
            f"({param_required.shape[0]})"
        )
    n_tools = param_ptr.shape[0] - 1

    if (n_needs < 1).any():
        i = int(np.flatnonzero(n_needs < 1)[0])
        raise ValueError(f"n_needs[{i}]={n_needs[i]}: every query has at least one tool need")
    if (n_args < 0).any():
        i = int(np.flatnonzero(n_args < 0)[0])
        raise ValueError(f"n_args[{i}]={n_args[i]} is negative")
    _check_range("cand_query", cand_query, 0, nq, f"{nq} queries")
    _check_range("cand_tool", cand_tool, 0, n_tools, f"{n_tools} tools")

    m = need_sims.shape[0]
    k = ap_sims.shape[0]
    # Clip per-query counts so products cannot wrap int64; a clipped count is already
    # larger than the array, so the block is still reported out of bounds.
    need_len = np.minimum(n_needs, m + 1)[cand_query]
    _check_blocks("cand_need_off", cand_need_off, need_len, "need_sims", m, "rows")
    param_len = np.minimum(n_args, k + 1)[cand_query] * steps[cand_tool]
    _check_blocks("cand_param_off", cand_param_off, param_len, "ap_sims", k, "entries")

    scores = np.empty(nc, dtype=np.float32)
    terms = np.empty((nc, 5), dtype=np.float32) if breakdown else None
    if nc == 0:
        return (scores, terms) if breakdown else scores

    args = (
        cand_query, cand_tool, cand_need_off, cand_param_off, n_needs, n_args, penalize,
        need_sims, ap_sims, param_ptr, param_required,
        params.weights_array(), params.bias, params.alpha, params.tau, params.w_req,
        params.w_opt, scores,
    )  # fmt: skip
    if breakdown:
        _run(score_breakdown_kernel, _score_breakdown_serial, nc, parallel, (*args, terms))
        return scores, terms
    _run(score_kernel, _score_serial, nc, parallel, args)
    return scores


def _run(parallel_kernel, serial_kernel, nc: int, parallel: bool | None, args: tuple) -> None:  # type: ignore[no-untyped-def]
    want = nc >= PARALLEL_MIN_CANDIDATES if parallel is None else parallel
    if want and _parallel_lock.acquire(blocking=False):
        try:
            parallel_kernel(*args)
        finally:
            _parallel_lock.release()
    else:
        serial_kernel(*args)
