"""Numba kernels that score MFTR candidate sets, and their checked Python entry point.

One call scores many queries: candidates of every query in a batch are laid out flat and
each candidate points at its own block of precomputed similarities (see
:func:`score_candidates` for the layout). Per candidate the kernel takes the max over the
query's tool needs per field, the max over the query's arguments per tool parameter, a
blend of the max and the mean of those parameter maxima, the sigmoid missing-parameter penalty and the weighted
sum. The work per candidate is small (a few dozen loads and a few ``exp``); the kernel is
one loop over candidates, parallel over candidates.

The jitted functions have explicit signatures and compilation is disabled after them, so
nothing compiles on a call with unexpected types (a call with wrong types raises
``TypeError`` instead); the signatures are compiled, or loaded from Numba's on-disk cache,
when this module is imported. Input arrays are typed read-only in the signatures so
read-only buffers (memory-mapped index files, Arrow buffers) are accepted without a copy.
With ``NUMBA_DISABLE_JIT=1`` the same functions run as plain Python.
"""

from __future__ import annotations

import math
from typing import Literal, overload

import numba
import numpy as np
from numba import types as nt

from .launch import launch
from .params import PAPER_PARAMS, ScoringParams

__all__ = ["BREAKDOWN_COLUMNS", "FIELD_BITS", "SIG_KERNEL", "score_candidates", "score_kernel"]

#: Columns of the breakdown array returned with ``breakdown=True``.
BREAKDOWN_COLUMNS: tuple[str, ...] = (
    "description", "parameters", "response", "examples", "penalty",
)  # fmt: skip

_ro_i8 = nt.Array(nt.int64, 1, "C", readonly=True)
_ro_u1 = nt.Array(nt.uint8, 1, "C", readonly=True)
_ro_f4 = nt.Array(nt.float32, 1, "C", readonly=True)
_ro_f4_2d = nt.Array(nt.float32, 2, "C", readonly=True)
_ro_f8 = nt.Array(nt.float64, 1, "C", readonly=True)
_f8 = nt.float64

# cand_query, cand_tool, cand_need_off, cand_param_off, n_needs, n_args, penalize,
# need_sims, ap_sims, param_ptr, param_required, tool_fields
_INPUTS = (
    _ro_i8, _ro_i8, _ro_i8, _ro_i8, _ro_i8, _ro_i8, _ro_u1, _ro_f4_2d, _ro_f4, _ro_i8, _ro_u1,
    _ro_u1,
)  # fmt: skip
# weights, bias, alpha, tau, w_req, w_opt, param_max_share, renormalize
_PARAMS = (_ro_f8, _f8, _f8, _f8, _f8, _f8, _f8, nt.boolean)

#: Bits of ``tool_fields``: which fields a tool has, in ``WEIGHT_FIELDS`` order.
FIELD_BITS: tuple[int, ...] = (1, 2, 4, 8)

_SIG_SIGMOID = _f8(_f8)
#: Signature of :func:`score_kernel`: the inputs, the scoring parameters, then the
#: outputs ``scores: float32[nc]`` and ``breakdown: float32[nc, 5]`` (or ``[0, 5]``).
SIG_KERNEL = nt.void(*_INPUTS, *_PARAMS, nt.float32[::1], nt.float32[:, ::1])


@numba.njit(_SIG_SIGMOID, cache=True, nogil=True, inline="always")
def _sigmoid(x: float) -> float:
    # Only ever exp() of a non-positive number: no overflow for any finite x.
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


# The per-candidate work sits in the loop body rather than in a helper shared by several
# entry points: passing 11 arrays to a helper per candidate (even one inlined by Numba)
# made the kernel 1.6x slower. One kernel serves both outputs; the breakdown branch is
# loop-invariant and costs nothing measurable when not taken.
@numba.njit(SIG_KERNEL, cache=True, nogil=True, parallel=True)
def score_kernel(
    cand_query, cand_tool, cand_need_off, cand_param_off, n_needs, n_args, penalize,
    need_sims, ap_sims, param_ptr, param_required, tool_fields,
    weights, bias, alpha, tau, w_req, w_opt, max_share, renormalize, out, breakdown,
):  # fmt: skip
    """Write the MFTR score of every candidate into ``out``, in parallel over candidates.

    Unchecked: arguments must already have the exact types of :data:`SIG_KERNEL` and
    valid indices and offsets. Use :func:`score_candidates` unless inputs are known good.

    Args:
        cand_query: See :func:`score_candidates` for this and the next ten inputs.
        cand_tool: Tool of each candidate.
        cand_need_off: First ``need_sims`` row of each candidate.
        cand_param_off: Start of each candidate's arg-major block in ``ap_sims``.
        n_needs: Needs per query.
        n_args: Arguments per query.
        penalize: Penalty flag per query.
        need_sims: ``[m, 3]`` need similarities.
        ap_sims: Argument-parameter similarities.
        param_ptr: CSR row pointer of parameters per tool.
        param_required: Required flag per parameter.
        tool_fields: Per tool, the :data:`FIELD_BITS` of the fields it has.
        weights: ``float64[4]`` field weights.
        bias: Score bias.
        alpha: Sigmoid steepness.
        tau: Sigmoid threshold.
        w_req: Penalty weight of a required parameter.
        w_opt: Penalty weight of an optional parameter.
        max_share: Share of the max (vs the mean) in the parameters field.
        renormalize: Spread absent fields' weight over the tool's present fields.
        out: ``float32[nc]``, receives the scores.
        breakdown: ``float32[nc, 5]`` to receive ``(S_desc, S_param, S_resp, S_ex, P)``,
            or ``float32[0, 5]`` to skip that work.
    """
    w_desc, w_param, w_resp, w_ex = weights[0], weights[1], weights[2], weights[3]
    w_abs = abs(w_desc) + abs(w_param) + abs(w_resp) + abs(w_ex)
    has_penalty = w_req != 0.0 or w_opt != 0.0
    with_breakdown = breakdown.shape[0] != 0
    for i in numba.prange(out.shape[0]):
        q = cand_query[i]
        t = cand_tool[i]

        # Fields: max over the query's needs. float() widens float32 so that plain-Python
        # mode (NUMBA_DISABLE_JIT) also computes in float64.
        row = cand_need_off[i]
        s_desc = 0.0
        s_resp = 0.0
        s_ex = 0.0
        if n_needs[q] > 0:
            s_desc = float(need_sims[row, 0])
            s_resp = float(need_sims[row, 1])
            s_ex = float(need_sims[row, 2])
            for r in range(row + 1, row + n_needs[q]):
                s_desc = max(s_desc, float(need_sims[r, 0]))
                s_resp = max(s_resp, float(need_sims[r, 1]))
                s_ex = max(s_ex, float(need_sims[r, 2]))

        # Parameters: per parameter the max over the arguments (arg-major block), then
        # the mean. Without arguments every s_p is 0; the penalty then applies only if
        # the caller asked for it (toolsift does not, the MFTR reference does).
        p0 = param_ptr[t]
        n_params = param_ptr[t + 1] - p0
        na = n_args[q]
        s_param = 0.0
        pen = 0.0
        if n_params > 0 and na > 0:
            base = cand_param_off[i]
            apply_penalty = has_penalty and penalize[q] != 0
            total = 0.0
            top = -math.inf
            for p in range(n_params):
                best = float(ap_sims[base + p])
                for a in range(1, na):
                    best = max(best, float(ap_sims[base + a * n_params + p]))
                total += best
                top = max(top, best)
                if apply_penalty:
                    # No "skip the exp when w == 0" branch: required flags are close to
                    # random, and the mispredictions cost more than the exp saves.
                    w = w_req if param_required[p0 + p] != 0 else w_opt
                    pen += w * _sigmoid(alpha * (tau - best))
            s_param = max_share * top + (1.0 - max_share) * (total / n_params)
        elif n_params > 0 and has_penalty and penalize[q] != 0:
            for p in range(n_params):
                w = w_req if param_required[p0 + p] != 0 else w_opt
                pen += w * _sigmoid(alpha * tau)

        if renormalize:
            # Absent fields score nothing (a dense field can embed an empty text to a
            # non-zero cosine) and their weight goes to the present ones.
            m = tool_fields[t]
            e_desc = w_desc * s_desc if m & 1 else 0.0
            e_param = w_param * s_param if m & 2 else 0.0
            e_resp = w_resp * s_resp if m & 4 else 0.0
            e_ex = w_ex * s_ex if m & 8 else 0.0
            present = ((abs(w_desc) if m & 1 else 0.0) + (abs(w_param) if m & 2 else 0.0)
                       + (abs(w_resp) if m & 4 else 0.0) + (abs(w_ex) if m & 8 else 0.0))
            scale = w_abs / present if present > 0.0 else 1.0
            out[i] = scale * (e_desc + e_param + e_resp + e_ex) + bias - pen
        else:
            out[i] = w_desc * s_desc + w_param * s_param + w_resp * s_resp + w_ex * s_ex + bias - pen
        if with_breakdown:
            breakdown[i, 0] = s_desc
            breakdown[i, 1] = s_param
            breakdown[i, 2] = s_resp
            breakdown[i, 3] = s_ex
            breakdown[i, 4] = pen


# --------------------------------------------------------------------------------------
# Checked entry point
# --------------------------------------------------------------------------------------

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
    check_finite: bool = ...,
) -> np.ndarray: ...  # fmt: skip
@overload
def score_candidates(
    cand_query: np.ndarray, cand_tool: np.ndarray, cand_need_off: np.ndarray,
    cand_param_off: np.ndarray, n_needs: np.ndarray, n_args: np.ndarray,
    penalize: np.ndarray, need_sims: np.ndarray, ap_sims: np.ndarray,
    param_ptr: np.ndarray, param_required: np.ndarray,
    params: ScoringParams = ..., *, breakdown: Literal[True],
    check_finite: bool = ...,
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
    params: ScoringParams = PAPER_PARAMS,
    *,
    tool_fields: np.ndarray | None = None,
    breakdown: bool = False,
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
            ``S_param = 0``).
        penalize: ``0/1[nq]``, whether the missing-parameter penalty applies to a query.
            A penalized query without arguments counts every parameter as unmatched
            (``s_p = 0``), as the MFTR reference does; toolsift itself sets the flag
            only for queries with arguments, so their penalty is 0 (DESIGN.md).
        need_sims: ``float[m, 3]``, per candidate and need the (description, response,
            examples) similarities.
        ap_sims: ``float[k]``, argument-parameter similarities.
        param_ptr: ``int[n_tools + 1]``, tool ``t``'s parameters are
            ``param_ptr[t]:param_ptr[t+1]`` (CSR row pointer; starts at 0, non-decreasing).
        param_required: ``0/1[param_ptr[-1]]``, whether each parameter is required.
        params: Weights, bias, penalty shape, parameter pooling and renormalisation.
        tool_fields: ``uint8[n_tools]``, per tool the :data:`FIELD_BITS` of the fields it
            has (read only when ``params.renormalize``); ``None`` = every field present.
        breakdown: Also return the per-candidate terms.
        check_finite: Reject NaN/inf similarities (one extra pass over both arrays). Turn
            off only for inputs known to be finite: scores of candidates whose blocks
            hold NaN are unspecified.

    Returns:
        ``scores: float32[nc]``; with ``breakdown=True`` the tuple ``(scores,
        terms: float32[nc, 5])``, columns :data:`BREAKDOWN_COLUMNS` =
        ``(S_desc, S_param, S_resp, S_ex, P)``, so that, without renormalisation,
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
            raise ValueError(
                f"{name} has length {arr.shape[0]}, cand_query has {nc} (one per candidate)"
            )
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
        raise ValueError(
            f"param_ptr[{i}]={param_ptr[i]} is less than param_ptr[{i - 1}]={param_ptr[i - 1]}"
        )
    if param_ptr[-1] != param_required.shape[0]:
        raise ValueError(
            f"param_ptr[-1]={param_ptr[-1]} must equal the length of param_required "
            f"({param_required.shape[0]})"
        )
    n_tools = param_ptr.shape[0] - 1
    if tool_fields is None:
        tool_fields = np.full(n_tools, 15, dtype=np.uint8)
    else:
        tool_fields = np.ascontiguousarray(_shape_1d("tool_fields", tool_fields, "iu", "field bits"),
                                           dtype=np.uint8)
        if tool_fields.shape[0] != n_tools:
            raise ValueError(f"tool_fields has length {tool_fields.shape[0]}, expected one per tool "
                             f"({n_tools})")

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
    terms = np.empty((nc if breakdown else 0, 5), dtype=np.float32)
    if nc:
        launch(score_kernel, *(
            cand_query, cand_tool, cand_need_off, cand_param_off, n_needs, n_args, penalize,
            need_sims, ap_sims, param_ptr, param_required, tool_fields,
            params.weights_array(), params.bias, params.alpha, params.tau, params.w_req,
            params.w_opt, params.param_max_share, params.renormalize, scores, terms,
        ), work=nc)  # fmt: skip
    return (scores, terms) if breakdown else scores
