"""The fused search path for hybrid need fields: one engine call for what the general
path does in five (BM25 candidates, pack, dense gathers, mix, MFTR) plus the ranking.

The dense halves' candidates are found first, as the general path finds them
(:meth:`~.retrievers.FieldRetriever.dense_parts`: an int8 top-n scan, or an IVF probe);
then ``_core.FusedSearcher.search_hybrid`` (cpp/src/fused.cpp) takes every field's BM25
top-n, joins the dense candidates, tops the union up to ``k``, scores every field (a
hybrid field's BM25 score mixed with its int8 cosine by
:meth:`~.retrievers.HybridRetriever.mix`'s float32 operations), combines them by MFTR and
keeps the top ``k``, with the GIL released. It also returns each hit's evidence (whether a
BM25 field had it as a candidate, and the cosine of every need field whose dense half added
it), so ``Hit.matched`` follows :mod:`.evidence`'s null-floor rule with no second pass over
the candidates. The general path stays the reference:
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
from ..schema import Query
from .fused import _NEED_FIELDS, _params_tuple, searcher
from .hits import Hit, _plain_hit
from .plan import QueryPlan, plan_queries
from .evidence import hit_evidence
from .retrievers import Bm25Retriever, DenseRetriever, FieldRetriever, HybridRetriever, _codes, dense_half, merge_csr

__all__ = ["run_hybrid", "usable"]

#: Whether the loaded core has the call with the hits' evidence (an older core takes the
#: general path).
_ENGINE = getattr(_core, "FUSED_HYBRID_VERSION", 0) >= 2


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
    need = [plan.fields[f].terms for f in _NEED_FIELDS]
    par = plan.fields["parameters"]
    ptr, tool, score, found, lexical, cos = searcher(st).search_hybrid(
        [t.terms for t in need], [t.offsets for t in need], plan.need_ptr, par.terms.terms, par.terms.offsets,
        plan.arg_ptr, plan.penalize, _params_tuple(params), n, k, config.scale, config.threads,
        [_dense_spec(plan, f, fr[f]) for f in _NEED_FIELDS], _dense_candidates(plan, fr, n, k))
    catalog = st.catalog
    found = hit_evidence(found, lexical, cos, [dense_half(fr[f]) for f in _NEED_FIELDS])
    ptr, tool, score = ptr.tolist(), tool.tolist(), score.tolist()
    return [[_plain_hit(catalog[tool[i]], score[i], i - ptr[q] + 1, found[i], None) for i in range(ptr[q], ptr[q + 1])]
            for q in range(len(queries))]


def _dense_candidates(plan: QueryPlan, fr: dict[str, FieldRetriever], n: int, k: int
                      ) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """Per need field the candidates its dense half adds, as
    :func:`~.candidates.find_candidates` adds them: CSR ``(ptr, ids)`` by query, or
    ``None`` (a BM25 field, or a dense half that adds none). The parameters field is BM25
    on this path (:func:`usable`)."""
    out: list[tuple[np.ndarray, np.ndarray] | None] = []
    for f in _NEED_FIELDS:
        ft = plan.fields[f]
        parts = fr[f].dense_parts(ft, n, k=k) if ft.texts else []
        out.append(merge_csr(parts) if parts else None)
    return out


def _dense_spec(plan: QueryPlan, field: str, r: FieldRetriever) -> tuple | None:
    """A need field's dense half as the engine takes it (python/fused.cpp ``dense_args``),
    ``None`` for a BM25 field. The weights are :meth:`HybridRetriever.mix`'s float32s."""
    if type(r) is not HybridRetriever:
        return None
    half = r.__dict__.get("_engine_half")
    if half is None:
        # What does not change between searches, made once per retriever.
        w_bm, w_cos = float(np.float32(r.weight)), float(np.float32(1.0 - r.weight))
        m = r.dense.dn.matrix
        half = r.__dict__["_engine_half"] = (m.codes, m.scales, r.dense.tool_rows, w_bm, w_cos)
    if r.dense_empty or not plan.fields[field].texts:
        return (None, None, None, None, None, half[3], half[4])
    q_codes, q_scales = _codes(plan.fields[field])
    return (half[0], half[1], half[2], q_codes, q_scales, half[3], half[4])
