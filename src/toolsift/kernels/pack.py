"""Laying per-field similarities out for the MFTR kernel, compiled.

Field retrievers return scores text-major: text ``r`` of query ``q`` has one block with
an entry per candidate of ``q`` (for the parameters field: per parameter of each
candidate of ``q``). The MFTR kernel reads candidate-major blocks (see
:func:`toolsift.kernels.score_candidates`). This is the transpose between the two, one
pass over the output; done with NumPy fancy indexing it took ~30 small array operations
per search, more than the scoring itself.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types as nt

from ..csr import row_of

__all__ = ["pack_needs", "pack_params"]

_ro_i8 = nt.Array(nt.int64, 1, "C", readonly=True)
_ro_f4 = nt.Array(nt.float32, 1, "C", readonly=True)
_i8 = nt.int64[::1]
_f4 = nt.float32[::1]
_f4_2d = nt.float32[:, ::1]

# ptr, tool, need_ptr, desc, resp, ex -> need_sims[m, 3], need_off[nc]
_SIG_NEEDS = nt.void(_ro_i8, _ro_i8, _ro_i8, _ro_f4, _ro_f4, _ro_f4, _f4_2d, _i8)
# ptr, tool, arg_ptr, param_ptr, par -> ap_sims[k], ap_off[nc]
_SIG_PARAMS = nt.void(_ro_i8, _ro_i8, _ro_i8, _ro_i8, _ro_f4, _f4, _i8)


@numba.njit(_SIG_NEEDS, cache=True, nogil=True)
def _pack_needs(ptr, tool, need_ptr, desc, resp, ex, need_sims, need_off):  # pragma: no cover - compiled
    row = 0
    block = 0  # start of the current text's block in the text-major arrays
    for q in range(ptr.shape[0] - 1):
        nc = ptr[q + 1] - ptr[q]
        nn = need_ptr[q + 1] - need_ptr[q]
        for j in range(nc):
            need_off[ptr[q] + j] = row
            for r in range(nn):
                src = block + r * nc + j
                need_sims[row, 0] = desc[src]
                need_sims[row, 1] = resp[src]
                need_sims[row, 2] = ex[src]
                row += 1
        block += nn * nc


@numba.njit(_SIG_PARAMS, cache=True, nogil=True)
def _pack_params(ptr, tool, arg_ptr, param_ptr, par, ap_sims, ap_off):  # pragma: no cover - compiled
    out = 0
    block = 0
    for q in range(ptr.shape[0] - 1):
        na = arg_ptr[q + 1] - arg_ptr[q]
        width = 0  # parameters of all of q's candidates: one text's block length
        for i in range(ptr[q], ptr[q + 1]):
            width += param_ptr[tool[i] + 1] - param_ptr[tool[i]]
        local = 0
        for i in range(ptr[q], ptr[q + 1]):
            n_par = param_ptr[tool[i] + 1] - param_ptr[tool[i]]
            ap_off[i] = out
            for a in range(na):
                src = block + a * width + local
                for p in range(n_par):
                    ap_sims[out] = par[src + p]
                    out += 1
            local += n_par
        block += na * width


def pack_needs(ptr: np.ndarray, tool: np.ndarray, need_ptr: np.ndarray, desc: np.ndarray, resp: np.ndarray,
               ex: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(need_sims float32[m, 3], need_off int64[nc])`` from text-major field scores.

    Unchecked beyond sizes: the inputs come from the search path itself.
    """
    n_needs = need_ptr[1:] - need_ptr[:-1]
    n_cand = ptr[1:] - ptr[:-1]
    m = int((n_needs * n_cand).sum())
    for name, arr in (("description", desc), ("response", resp), ("examples", ex)):
        if arr.shape[0] != m:
            raise ValueError(f"{name} scores: expected {m} entries, got {arr.shape[0]}")
    need_sims = np.empty((m, 3), dtype=np.float32)
    need_off = np.empty(tool.shape[0], dtype=np.int64)
    _pack_needs(ptr, tool, need_ptr, desc, resp, ex, need_sims, need_off)
    return need_sims, need_off


def pack_params(ptr: np.ndarray, tool: np.ndarray, arg_ptr: np.ndarray, param_ptr: np.ndarray,
                par: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ap_sims float32[k], ap_off int64[nc])`` from text-major parameter-document scores."""
    n_args = arg_ptr[1:] - arg_ptr[:-1]
    n_par = param_ptr[tool + 1] - param_ptr[tool]
    q_of = row_of(ptr)
    k = int((n_args[q_of] * n_par).sum())
    if par.shape[0] != k:
        raise ValueError(f"parameter scores: expected {k} entries, got {par.shape[0]}")
    ap_sims = np.empty(k, dtype=np.float32)
    ap_off = np.empty(tool.shape[0], dtype=np.int64)
    _pack_params(ptr, tool, arg_ptr, param_ptr, par, ap_sims, ap_off)
    return ap_sims, ap_off
