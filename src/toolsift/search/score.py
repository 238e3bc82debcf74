"""Scoring: the MFTR combination over packed :class:`Candidates`.

The engine's ``mftr_score`` (cpp/src/fused.cpp, the combination every fused search uses)
scores the packed candidates through ``_core.score_packed_pairs`` (cpp/src/pair_scores.cpp),
with the GIL released: the general and multi-step paths import no Numba. It is the Numba
kernel's float64 arithmetic operation by operation (:func:`toolsift.kernels.score_candidates`
stays the public kernel and the tests' reference; ``tests/test_index.py`` checks whole
searches against its NumPy twin). Every array here was built by the search path itself.
"""

from __future__ import annotations

import numpy as np

from .. import _core
from ..index.state import IndexState
from ..kernels.launch import SERIAL_WORK, current_threads
from ..kernels.params import ScoringParams
from .candidates import Candidates
from .fused import _params_tuple

__all__ = ["score"]


def score(st: IndexState, cands: Candidates, params: ScoringParams, *,
          breakdown: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """MFTR scores of every candidate, and with ``breakdown`` the per-candidate terms
    ``float32[nc, 5]`` (description, parameters, response, examples, penalty)."""
    nc = len(cands)
    if not nc:
        return np.empty(0, np.float32), (np.empty((0, 5), np.float32) if breakdown else None)
    # A single search's few hundred candidates stay on the calling thread.
    threads = 1 if nc < SERIAL_WORK else current_threads()
    values = _core.score_packed_pairs(cands.query, cands.tool, cands.need_off, cands.ap_off, cands.n_needs,
                                      cands.n_args, cands.penalize, cands.need_sims, cands.ap_sims, st.param_ptr,
                                      st.param_required, st.tool_bits, _params_tuple(params), threads)
    # Columns: the score, then the breakdown (description, parameters, response, examples, penalty).
    return np.ascontiguousarray(values[:, 0]), (np.ascontiguousarray(values[:, 1:]) if breakdown else None)
