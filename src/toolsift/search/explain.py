"""Explanations of the hits an engine call ranked: the breakdown of the ``k`` hits only.

The fused paths (:mod:`.fused`, :mod:`.fused_hybrid`) rank in C++ and return the top
``k`` tools with their MFTR scores. An explained search takes the same call and then
explains just those ``k`` tools: every field scores them (:func:`.candidates.pack`, the
general path's packing: the same similarities) and the MFTR terms -- the four field
similarities and the missing-parameter penalty -- come from the plain-NumPy formula
(:func:`toolsift.kernels.reference.score_candidates_reference`). A few candidates need no
compiled kernel, so an explained search (``toolsift search``, the demo, the gateway's
reasons) neither imports Numba nor compiles it. The hits keep the engine's scores;
``tests/test_explain.py`` checks every explanation against the general path's (the
Numba kernel's breakdown) on the benchmark sets.

A raw request asking only for reasons (``explain="why"``) skips this module: the engine
call returns its hits' MFTR terms and :func:`.hits.reasons_of` makes the reasons from them
(:func:`toolsift.search._why_text`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..csr import ptr_from_counts, row_of
from ..index.state import IndexState
from ..kernels.params import ScoringParams
from ..kernels.reference import score_candidates_reference
from .candidates import pack
from .hits import Hit, _explain, _reasons
from .plan import QueryPlan
from .retrievers import FieldRetriever

__all__ = ["explain_hits", "explain_ranked"]


def explain_ranked(st: IndexState, plan: QueryPlan, fr: dict[str, FieldRetriever], params: ScoringParams,
                   ptr: np.ndarray, tool: np.ndarray, score: np.ndarray, found: np.ndarray, *,
                   why_only: bool = False) -> list[list[Hit]]:
    """The hits of an engine call, explained: CSR by query in rank order, ``tool``
    catalogue positions, ``score`` their MFTR scores, ``found`` their ``matched`` flags.
    ``why_only`` fills only each hit's reason (as :func:`.hits.rank` does)."""
    ptr = np.asarray(ptr, dtype=np.int64)
    tool = np.asarray(tool, dtype=np.int64)
    # pack() takes each query's tools in catalogue order; remember where each hit went.
    order = np.lexsort((tool, row_of(ptr)))
    cands = pack(st, plan, fr, ptr, tool[order])
    _, terms = score_candidates_reference(
        cands.query, cands.tool, cands.need_off, cands.ap_off, cands.n_needs, cands.n_args, cands.penalize,
        cands.need_sims, cands.ap_sims, st.param_ptr, st.param_required, params, tool_fields=st.tool_bits,
        breakdown=True)
    at = np.empty_like(order)
    at[order] = np.arange(order.size)  # hit i (rank order) is candidate at[i]
    tools, scores, matched = tool.tolist(), np.asarray(score).tolist(), np.asarray(found).tolist()
    explain = _reasons if why_only else _explain
    results = []
    for q in range(ptr.size - 1):
        lo, hi = int(ptr[q]), int(ptr[q + 1])
        top = zip(tools[lo:hi], scores[lo:hi], matched[lo:hi])
        results.append(explain(st, plan, cands, q, at[lo:hi], top, terms, params))
    return results


def explain_hits(st: IndexState, plan: QueryPlan, fr: dict[str, FieldRetriever], params: ScoringParams,
                 ranked: Sequence[Sequence[Hit]], *, why_only: bool = False) -> list[list[Hit]]:
    """:func:`explain_ranked` for hits already made (one list per query of ``plan``)."""
    ptr = ptr_from_counts(np.array([len(hits) for hits in ranked], dtype=np.int64))
    flat = [h for hits in ranked for h in hits]
    position = st.catalog.position
    tool = np.fromiter((position(h.id) for h in flat), dtype=np.int64, count=len(flat))
    score = np.fromiter((h.score for h in flat), dtype=np.float64, count=len(flat))
    found = np.fromiter((h.matched for h in flat), dtype=bool, count=len(flat))
    return explain_ranked(st, plan, fr, params, ptr, tool, score, found, why_only=why_only)
