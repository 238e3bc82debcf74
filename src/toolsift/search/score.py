"""Scoring: the one MFTR kernel over packed :class:`Candidates`.

The search path calls the kernel unchecked: every array here was built by the search
path itself with the kernel's exact dtypes (``score_candidates``' validation, meant for
callers' arrays, cost a fifth of a single search). ``tests/test_index.py`` checks the
scores of whole searches against the kernel's NumPy twin.
"""

from __future__ import annotations

import numpy as np

from ..index.state import IndexState
from ..kernels.launch import launch
from ..kernels.params import ScoringParams
from .candidates import Candidates

__all__ = ["score"]


def score(st: IndexState, cands: Candidates, params: ScoringParams, *,
          breakdown: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """MFTR scores of every candidate, and with ``breakdown`` the per-candidate terms
    ``float32[nc, 5]`` (description, parameters, response, examples, penalty)."""
    nc = len(cands)
    out = np.empty(nc, dtype=np.float32)
    terms = np.empty((nc if breakdown else 0, 5), dtype=np.float32)
    if nc:
        # Numba, imported with the first score: the fused BM25 path never gets here.
        from ..kernels.mftr import score_kernel

        launch(score_kernel, cands.query, cands.tool, cands.need_off, cands.ap_off, cands.n_needs,
               cands.n_args, cands.penalize, cands.need_sims, cands.ap_sims, st.param_ptr,
               st.param_required, st.tool_bits, params.weights_array(), params.bias, params.alpha,
               params.tau, params.w_req, params.w_opt, params.param_max_share, params.renormalize,
               out, terms, work=nc)
    return out, (terms if breakdown else None)
