"""Scoring grouped pairs with the search path's field scores and the engine's MFTR.

:func:`score_grouped` takes queries (store slots) and, per query, a strictly increasing
list of tools, and returns for every pair the score and the kernel's breakdown
(:data:`~toolsift.kernels.mftr.BREAKDOWN_COLUMNS`) as one ``float32[pairs, 6]`` array.
It packs the pairs with :func:`~toolsift.search.candidates.pack` -- the exact field
scores a search computes -- and combines them with the C++ engine's MFTR
(``_core.score_packed_pairs``, the function the fused search calls; the Numba kernel and
its NumPy twin stay the references the tests compare with), on chunks of at most
``max_pairs`` pairs, so the per-field similarity arrays of one call stay within a few
hundred megabytes whatever the batch size.

:func:`score_whole` fills per-query full-catalogue tables (see
:mod:`toolsift.batch.tables`) with the same field scores, combined by the engine straight
into the tables (``_core.score_whole_catalogue``: no packed copy in between).
:func:`fill_rows` then writes each row's six values from a table or from the grouped
results, in row order (``_core.fill_pair_rows``). Nothing here imports Numba: a
``toolsift score`` process starts without it.
"""

from __future__ import annotations

import numpy as np

from .. import _core
from ..config import IndexConfig, warn_untrained_penalty
from ..index.state import IndexState
from ..search import retrievers
from ..search.retrievers import Bm25Retriever, FieldRetriever, HybridRetriever
from ..search.candidates import NEED_FIELDS, pack
from ..search.fused import _params_tuple
from ..search.query import is_raw
from .queries import QueryStore

__all__ = ["VALUES", "fill_rows", "score_grouped", "score_whole"]

#: Columns of the arrays this module returns: the score, then the kernel's breakdown.
VALUES = ("score", "description", "parameters", "response", "examples", "penalty")


class _WholeCatalogue(FieldRetriever):
    """A BM25 field asked for every tool (or every document) of the catalogue: the
    engine's dense scoring, which accumulates exactly as ``gather`` does (same floats,
    see cpp/src/gather.cpp) without building a slot map per text."""

    def __init__(self, inner: Bm25Retriever) -> None:
        self.inner = inner

    def gather(self, ft, ptr, ids, *, docs):
        fi = self.inner.fi
        score = fi.score_docs if docs else fi.score_tools
        return score(ft.terms, scale=self.inner.scale, threads=self.inner.threads).ravel()


class _WholeHybrid(FieldRetriever):
    """A hybrid field asked for every tool: its BM25 half through :class:`_WholeCatalogue`,
    mixed with the dense half's cosines by :meth:`HybridRetriever.mix` (the one
    definition of the hybrid score), as ``HybridRetriever.gather`` does."""

    def __init__(self, inner: HybridRetriever) -> None:
        self.inner = inner
        self.bm25 = _WholeCatalogue(inner.bm25)

    def gather(self, ft, ptr, ids, *, docs):
        r = self.inner
        bm = self.bm25.gather(ft, ptr, ids, docs=docs).astype(np.float32, copy=False)
        r.mix(bm, None if r.dense_empty else r.dense.gather(ft, ptr, ids, docs=docs))
        return bm


def _whole(r: FieldRetriever) -> FieldRetriever:
    if type(r) is Bm25Retriever:
        return _WholeCatalogue(r)
    if type(r) is HybridRetriever and type(r.bm25) is Bm25Retriever:
        return _WholeHybrid(r)
    return r


class _Tools:
    """The catalogue's parameter table as the engine takes it, made once per state."""

    def __init__(self, st: IndexState) -> None:
        self.param_ptr = np.ascontiguousarray(st.param_ptr, dtype=np.int64)
        self.required = np.ascontiguousarray(st.param_required, dtype=np.uint8)
        self.bits = np.ascontiguousarray(st.tool_bits, dtype=np.uint8)


def _tools(st: IndexState) -> _Tools:
    key = ("batch-tools",)
    got = st.retrievers.get(key)
    if got is None:
        got = st.retrievers[key] = _Tools(st)
    return got


def _structured(store: QueryStore, slots: np.ndarray) -> np.ndarray:
    return np.fromiter((not is_raw(store.queries[s]) for s in slots), dtype=bool, count=slots.size)


def _by_params(config: IndexConfig, structured: np.ndarray):
    """``(mask, params)`` per parameter set the queries need (raw text and structured
    queries are scored with their own, :meth:`IndexConfig.params_for`)."""
    raw_p, st_p = config.params, config.structured_scoring
    if raw_p == st_p or structured.all() or not structured.any():
        yield None, (st_p if structured.any() else raw_p)
        return
    yield structured, st_p
    yield ~structured, raw_p


def score_grouped(st: IndexState, config: IndexConfig, store: QueryStore, slots: np.ndarray, ptr: np.ndarray,
                  tools: np.ndarray, *, max_pairs: int) -> np.ndarray:
    """``float32[ptr[-1], 6]``: :data:`VALUES` of query ``slots[q]`` against
    ``tools[ptr[q]:ptr[q+1]]`` for every ``q``."""
    out = np.empty((int(ptr[-1]), len(VALUES)), np.float32)
    fr = retrievers(st, config)
    tt = _tools(st)
    nq = slots.size
    a = 0
    while a < nq:
        # As many queries as fit in max_pairs (at least one, whatever its size).
        b = int(np.searchsorted(ptr, ptr[a] + max_pairs, side="right")) - 1
        b = min(max(b, a + 1), nq)
        lo, hi = int(ptr[a]), int(ptr[b])
        if hi > lo:
            plan = _plan(store, config, slots[a:b])
            c = pack(st, plan, fr, ptr[a:b + 1] - lo, tools[lo:hi])
            structured = _structured(store, slots[a:b])
            for mask, params in _by_params(config, structured):
                sel = slice(None) if mask is None else np.flatnonzero(mask[c.query])
                out[lo:hi][sel] = _core.score_packed_pairs(
                    c.query[sel], c.tool[sel], c.need_off[sel], c.ap_off[sel], c.n_needs, c.n_args, c.penalize,
                    c.need_sims, c.ap_sims, tt.param_ptr, tt.required, tt.bits, _params_tuple(params),
                    config.threads)
        a = b
    return out


def score_whole(st: IndexState, config: IndexConfig, store: QueryStore, slots: np.ndarray, out: np.ndarray,
                rows: np.ndarray, *, max_pairs: int) -> None:
    """``out[rows[j]] = `` :data:`VALUES` of query ``slots[j]`` against every tool of the
    catalogue, in catalogue order (``out``: ``float32[n, tools, 6]``): what
    :func:`score_grouped` returns for those pairs, bit for bit (same field scores, same
    combination), written by the engine straight into ``out``."""
    nt = len(st.catalog)
    fr = {f: _whole(r) for f, r in retrievers(st, config).items()}
    tt = _tools(st)
    step = max(1, max_pairs // max(nt, 1))
    every = np.arange(nt, dtype=np.int64)
    width = int(st.param_ptr[-1] - st.param_ptr[0])
    rows = np.asarray(rows, dtype=np.int64)
    structured = _structured(store, slots)
    for mask, params in _by_params(config, structured):
        g_slots, g_rows = (slots, rows) if mask is None else (slots[mask], rows[mask])
        for a in range(0, g_slots.size, step):
            s = g_slots[a:a + step]
            plan = _plan(store, config, s)
            ptr = np.arange(s.size + 1, dtype=np.int64) * nt
            tool = np.tile(every, s.size)
            need = [fr[f].gather(plan.fields[f], ptr, tool, docs=False).reshape(-1, nt) for f in NEED_FIELDS]
            par = _whole_params(st, plan, fr["parameters"], width)
            _core.score_whole_catalogue(need, plan.need_ptr, par, plan.arg_ptr, plan.penalize, g_rows[a:a + step],
                                        tt.param_ptr, tt.required, tt.bits, _params_tuple(params), config.threads,
                                        out)


def _whole_params(st: IndexState, plan, par_r: FieldRetriever, width: int) -> np.ndarray:
    """``float32[argument texts, parameter documents]``: every argument text's score of
    every parameter document (text-major, as the engine's table call reads it)."""
    nq = len(plan)
    if not plan.arg_ptr[-1]:
        return np.zeros((0, width), np.float32)
    doc_ptr = np.arange(nq + 1, dtype=np.int64) * width
    # The whole-catalogue BM25 field ignores the ids; other retrievers read them.
    doc_ids = np.zeros(0, np.int64) if isinstance(par_r, _WholeCatalogue) else \
        np.tile(np.arange(st.param_ptr[0], st.param_ptr[-1], dtype=np.int64), nq)
    return par_r.gather(plan.fields["parameters"], doc_ptr, doc_ids, docs=True).reshape(-1, width)


def _plan(store: QueryStore, config: IndexConfig, slots: np.ndarray):
    plan = store.plan(slots)
    if plan.penalize.any():  # as score_pairs does (it warns once per process)
        for q, pen in zip(plan.queries, plan.penalize):
            if pen:
                warn_untrained_penalty(config.params_for(not is_raw(q)))
    return plan


def fill_rows(qkey: np.ndarray, tkey: np.ndarray, table_of: np.ndarray, tool_of: np.ndarray, tables: np.ndarray,
              inverse: np.ndarray | None = None, grouped: np.ndarray | None = None, *, threads: int = 1) -> np.ndarray:
    """``float32[6, rows]``: row ``i``'s :data:`VALUES`, with ``r = table_of[qkey[i]]``
    and ``t = tool_of[tkey[i]]``, from ``tables[r, t]`` when both are ``>= 0``, else from
    ``grouped[inverse[i]]``, else NaN (a row that was not scored).

    The keys are the rows' dictionary indices and ``table_of`` / ``tool_of`` map
    dictionary entries, so one pass answers a batch without per-row index arrays.
    """
    inverse = np.zeros(0, np.int64) if inverse is None else inverse
    grouped = np.zeros((0, len(VALUES)), np.float32) if grouped is None else grouped
    return _core.fill_pair_rows(qkey, tkey, table_of, tool_of, tables, inverse, grouped, threads)
