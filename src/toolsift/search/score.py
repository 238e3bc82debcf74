"""Scoring: the one MFTR kernel over packed :class:`Candidates`."""

from __future__ import annotations

import numpy as np

from ..index.state import IndexState
from ..kernels import score_candidates
from ..kernels.params import ScoringParams
from .candidates import Candidates

__all__ = ["score"]


def score(st: IndexState, cands: Candidates, params: ScoringParams, *,
          breakdown: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """MFTR scores of every candidate, and with ``breakdown`` the per-candidate terms
    ``float32[nc, 5]`` (description, parameters, response, examples, penalty)."""
    args = (cands.query, cands.tool, cands.need_off, cands.ap_off, cands.n_needs, cands.n_args,
            cands.penalize, cands.need_sims, cands.ap_sims, st.param_ptr, st.param_required, params)
    # Similarities come from the engine and the int8 kernels: finite by construction.
    if breakdown:
        return score_candidates(*args, tool_fields=st.tool_bits, breakdown=True, check_finite=False)
    return score_candidates(*args, tool_fields=st.tool_bits, check_finite=False), None
