"""The fused search path for hybrid need fields: one engine call for what the general
path does in five (BM25 candidates, pack, dense gathers, mix, MFTR) plus the ranking.

The dense halves' candidates are found first, as the general path finds them
(:meth:`~.retrievers.FieldRetriever.dense_parts`: an int8 top-n scan, or an IVF probe);
then ``_core.FusedSearcher.search_hybrid`` (cpp/src/fused.cpp) takes every field's BM25
top-n, joins the dense candidates, tops the union up to ``k``, scores every field (a
hybrid field's BM25 score mixed with its int8 cosine by
:meth:`~.retrievers.HybridRetriever.mix`'s float32 operations), combines them by MFTR and
keeps the top ``k``, with the GIL released. The general path stays the reference:
``tests/test_fused_hybrid.py`` compares the two on every query of the five benchmark sets.

Explanations, dense (not hybrid) fields and multi-step requests (:mod:`.needs`) keep the
general path (:func:`usable` says when this one applies).
"""

from __future__ import annotations

import numpy as np

from .. import _core
from ..config import IndexConfig, warn_untrained_penalty
from ..index.state import IndexState
from ..kernels.params import ScoringParams
from ..schema import FIELDS, Query
from .fused import _NEED_FIELDS, _params_tuple, searcher
from .hits import Hit, _plain_hit
from .plan import QueryPlan, plan_queries
from .candidates import lexical_parts, member
from .evidence import dense_evidence
from .retrievers import (Bm25Retriever, DenseRetriever, FieldRetriever, HybridRetriever, _codes, dense_half,
                         merge_csr)

__all__ = ["run_hybrid", "usable"]

#: Whether the loaded core has the call (a core built before it takes the general path).
_ENGINE = hasattr(_core.FusedSearcher, "search_hybrid")


def usable(st: IndexState, fr: dict[str, FieldRetriever], explain: bool | str) -> bool:
    """Whether a search of ``st`` with retrievers ``fr`` takes this path: no explanation,
    a dense field built, every need field BM25 or hybrid (of the plain retrievers) and
    the parameters field BM25."""
    if not _ENGINE or explain or not st.dense or type(fr["parameters"]) is not Bm25Retriever:
        return False
    for f in _NEED_FIELDS:
        r = fr[f]
        if type(r) is HybridRetriever:
            if type(r.bm25) is not Bm25Retriever or type(r.dense) is not DenseRetriever:
                return False
        elif type(r) is not Bm25Retriever:
            return False
    return True


def run_hybrid(st: IndexState, config: IndexConfig, queries: list[Query], fr: dict[str, FieldRetriever], *,
               k: int, params: ScoringParams) -> list[list[Hit]]:
    """The top ``k`` hits of each query (all of one kind, scored with ``params``), as
    :func:`toolsift.search._general` returns them without explanation."""
    plan = plan_queries(st, config, queries)
    if plan.penalize.any():
        warn_untrained_penalty(params)
    n = config.candidates
    extra_ptr, extra_ids, ev_ptr, ev_ids = _dense_candidates(plan, fr, n, k)
    need = [plan.fields[f].terms for f in _NEED_FIELDS]
    par = plan.fields["parameters"]
    ptr, tool, score, found = searcher(st).search_hybrid(
        [t.terms for t in need], [t.offsets for t in need], plan.need_ptr, par.terms.terms, par.terms.offsets,
        plan.arg_ptr, plan.penalize, _params_tuple(params), n, k, config.scale, config.threads,
        [_dense_spec(plan, f, fr[f]) for f in _NEED_FIELDS], extra_ptr, extra_ids)
    catalog = st.catalog
    found = _matched(plan, fr, n, ptr, tool, np.asarray(found, dtype=bool), (extra_ptr, extra_ids), (ev_ptr, ev_ids))
    ptr, tool, score, found = ptr.tolist(), tool.tolist(), score.tolist(), found.tolist()
    return [[_plain_hit(catalog[tool[i]], score[i], i - ptr[q] + 1, found[i], None) for i in range(ptr[q], ptr[q + 1])]
            for q in range(len(queries))]


def _dense_candidates(plan: QueryPlan, fr: dict[str, FieldRetriever], n: int, k: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per query the dense halves' candidates, as :func:`~.candidates.find_candidates`
    adds them, and those of them above their field's null floor (.evidence): two CSR
    ``(ptr, ids)``."""
    parts, evidence = [], []
    for f in FIELDS:
        ft = plan.fields[f]
        if not ft.texts:
            continue
        dense = fr[f].dense_parts(ft, n, k=k)
        parts += dense
        half = dense_half(fr[f])
        if half is not None:
            evidence += [dense_evidence(half, ft, p, t, half.null_floor) for p, t in dense]
    empty = np.zeros(len(plan) + 1, np.int64), np.zeros(0, np.int64)
    ptr, ids = merge_csr(parts) if parts else empty
    ev_ptr, ev_ids = merge_csr(evidence) if evidence else empty
    return (ptr.astype(np.int64, copy=False), ids.astype(np.int64, copy=False),
            ev_ptr.astype(np.int64, copy=False), ev_ids.astype(np.int64, copy=False))


def _matched(plan: QueryPlan, fr: dict[str, FieldRetriever], n: int, ptr: np.ndarray, tool: np.ndarray,
             found: np.ndarray, dense: tuple[np.ndarray, np.ndarray], evidence: tuple[np.ndarray, np.ndarray]
             ) -> np.ndarray:
    """``Hit.matched`` of the engine's hits, as :func:`~.candidates.find_candidates` sets
    it: the engine says which hits were candidates (``found``); a candidate that only a
    dense half found is matched only above its field's null floor. Only when such a
    hit is among the top ``k`` are the BM25 candidates looked up again."""
    if not dense[1].size:
        return found
    ptr = np.asarray(ptr, dtype=np.int64)
    tool = np.asarray(tool, dtype=np.int64)
    suspect = found & member(ptr, tool, *dense) & ~member(ptr, tool, *evidence)
    if not suspect.any():
        return found
    lex = lexical_parts(plan, fr, n)
    in_lex = member(ptr, tool, *merge_csr(lex)) if lex else np.zeros(tool.size, dtype=bool)
    return found & (~suspect | in_lex)


def _dense_spec(plan: QueryPlan, field: str, r: FieldRetriever) -> tuple | None:
    """A need field's dense half as the engine takes it (python/fused.cpp ``dense_args``),
    ``None`` for a BM25 field. The weights are :meth:`HybridRetriever.mix`'s float32s."""
    if type(r) is not HybridRetriever:
        return None
    w_bm, w_cos = float(np.float32(r.weight)), float(np.float32(1.0 - r.weight))
    if r.dense_empty or not plan.fields[field].texts:
        return (None, None, None, None, None, w_bm, w_cos)
    m = r.dense.dn.matrix
    q_codes, q_scales = _codes(plan.fields[field])
    return (m.codes, m.scales, r.dense.tool_ptr, q_codes, q_scales, w_bm, w_cos)
