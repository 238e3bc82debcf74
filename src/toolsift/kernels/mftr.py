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

#: Below this many candidates a batch runs on the calling thread: starting the worker
#: threads costs more than it saves (one query × a few hundred candidates is the usual
#: service request). Measured on a 2-core machine; see benchmarks/bench_kernels.py.
PARALLEL_MIN_CANDIDATES = 4096

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
            v = float(need_sims[r, 0])
            if v > s_desc:
                s_desc = v
            v = float(need_sims[r, 1])
            if v > s_resp:
                s_resp = v
            v = float(need_sims[r, 2])
            if v > s_ex:
                s_ex = v

    # Parameters: per parameter the max over arguments (arg-major block), then the mean.
    p0 = param_ptr[t]
    n_params = param_ptr[t + 1] - p0
    na = n_args[q]
    s_param = 0.0
    pen = 0.0
    if n_params > 0 and na > 0:
        base = cand_param_off[i]
        # No arguments means nothing to match: the model defines P = 0 then, whatever
        # the caller's flag says.
        apply_penalty = penalize[q] != 0
        total = 0.0
        for p in range(n_params):
            best = float(ap_sims[base + p])
            for a in range(1, na):
                v = float(ap_sims[base + a * n_params + p])
                if v > best:
                    best = v
            total += best
            if apply_penalty:
                w = w_req if param_required[p0 + p] != 0 else w_opt
                # w_opt is 0 by default: skip the exp for most optional parameters.
                if w != 0.0:
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
