"""Scoring grouped pairs with the search path's own pack and MFTR kernel.

:func:`score_grouped` takes queries (store slots) and, per query, a strictly increasing
list of tools, and returns for every pair the score and the kernel's breakdown
(:data:`~toolsift.kernels.mftr.BREAKDOWN_COLUMNS`) as one ``float32[pairs, 6]`` array.
It runs :func:`~toolsift.search.candidates.pack` and
:func:`~toolsift.search.score.score` -- the exact code a search runs -- on chunks of at
most ``max_pairs`` pairs, so the per-field similarity arrays of one call stay within a
few hundred megabytes whatever the batch size.

:func:`score_whole` fills per-query full-catalogue tables (see
:mod:`toolsift.batch.tables`) with the same field scores and kernel, packed without a
per-candidate loop since every query lists every tool in order. :func:`fill_rows` then
writes each row's six values from a table or from the grouped results, in row order.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types as nt

from ..config import IndexConfig, warn_untrained_penalty
from ..index.state import IndexState
from ..search import retrievers
from ..search.retrievers import Bm25Retriever, FieldRetriever
from ..kernels.pack import pack_needs, pack_params_every_tool
from ..search.candidates import NEED_FIELDS, Candidates, pack
from ..search.query import is_raw
from ..search.score import score
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


def score_grouped(st: IndexState, config: IndexConfig, store: QueryStore, slots: np.ndarray, ptr: np.ndarray,
                  tools: np.ndarray, *, max_pairs: int) -> np.ndarray:
    """``float32[ptr[-1], 6]``: :data:`VALUES` of query ``slots[q]`` against
    ``tools[ptr[q]:ptr[q+1]]`` for every ``q``."""
    out = np.empty((int(ptr[-1]), len(VALUES)), np.float32)
    fr = retrievers(st, config)
    nq = slots.size
    a = 0
    while a < nq:
        # As many queries as fit in max_pairs (at least one, whatever its size).
        b = int(np.searchsorted(ptr, ptr[a] + max_pairs, side="right")) - 1
        b = min(max(b, a + 1), nq)
        lo, hi = int(ptr[a]), int(ptr[b])
        if hi > lo:
            plan = _plan(store, config, slots[a:b])
            cands = pack(st, plan, fr, ptr[a:b + 1] - lo, tools[lo:hi])
            _score_into(st, config, plan, cands, out[lo:hi])
        a = b
    return out


def score_whole(st: IndexState, config: IndexConfig, store: QueryStore, slots: np.ndarray, out: np.ndarray,
                rows: np.ndarray, *, max_pairs: int) -> None:
    """``out[rows[j]] = `` :data:`VALUES` of query ``slots[j]`` against every tool of the
    catalogue, in catalogue order (``out``: ``float32[n, tools, 6]``): what
    :func:`score_grouped` returns for those pairs, bit for bit (same field scores, same
    kernel). Written straight into ``out``: a batch-sized array in between cost a
    second pass over ~86 MB per 1,000 queries."""
    nt = len(st.catalog)
    fr = {f: _WholeCatalogue(r) if type(r) is Bm25Retriever else r for f, r in retrievers(st, config).items()}
    step = max(1, max_pairs // max(nt, 1))
    every = np.arange(nt, dtype=np.int64)
    for a in range(0, slots.size, step):
        s = slots[a:a + step]
        plan = _plan(store, config, s)
        ptr = np.arange(s.size + 1, dtype=np.int64) * nt
        cands = _pack_every_tool(st, plan, fr, ptr, np.tile(every, s.size))
        score_s, terms = _score_mixed(st, config, plan, cands)
        _interleave(score_s, terms, np.ascontiguousarray(rows[a:a + step], dtype=np.int64), out)


def _plan(store: QueryStore, config: IndexConfig, slots: np.ndarray):
    plan = store.plan(slots)
    if plan.penalize.any():  # as score_pairs does (it warns once per process)
        for q, pen in zip(plan.queries, plan.penalize):
            if pen:
                warn_untrained_penalty(config.params_for(not is_raw(q)))
    return plan


def _score_mixed(st: IndexState, config: IndexConfig, plan, cands: Candidates):
    """Kernel scores and terms of ``cands``, each query's with its own parameters
    (:meth:`IndexConfig.params_for`): one kernel call unless raw and structured queries
    with different parameters share the batch."""
    structured = np.fromiter((not is_raw(q) for q in plan.queries), dtype=bool, count=len(plan.queries))
    raw_p, st_p = config.params, config.structured_scoring
    if raw_p == st_p or structured.all() or not structured.any():
        return score(st, cands, st_p if structured.any() else raw_p, breakdown=True)
    s_raw, t_raw = score(st, cands, raw_p, breakdown=True)
    s_st, t_st = score(st, cands, st_p, breakdown=True)
    pick = structured[cands.query]
    assert t_st is not None and t_raw is not None  # breakdown=True
    return np.where(pick, s_st, s_raw), np.where(pick[:, None], t_st, t_raw)


def _score_into(st: IndexState, config: IndexConfig, plan, cands: Candidates, out: np.ndarray) -> None:
    s, terms = _score_mixed(st, config, plan, cands)
    _interleave(s, terms, np.zeros(1, np.int64), out.reshape(1, -1, len(VALUES)))


def _pack_every_tool(st: IndexState, plan, fr: dict[str, FieldRetriever], ptr: np.ndarray,
                     tool: np.ndarray) -> Candidates:
    """:func:`~toolsift.search.candidates.pack` for queries that list every tool in
    catalogue order: each query's parameter block is then the same permutation of its
    text-major scores, and the candidates' parameter documents are simply every document."""
    need_ptr, arg_ptr, param_ptr = plan.need_ptr, plan.arg_ptr, st.param_ptr
    sims = [fr[f].gather(plan.fields[f], ptr, tool, docs=False) for f in NEED_FIELDS]
    need_sims, need_off = pack_needs(ptr, tool, need_ptr, *sims)
    n_args = arg_ptr[1:] - arg_ptr[:-1]
    nq = ptr.size - 1
    if arg_ptr[-1]:
        width = int(param_ptr[-1] - param_ptr[0])
        doc_ptr = np.arange(nq + 1, dtype=np.int64) * width
        par_r = fr["parameters"]
        # The whole-catalogue BM25 field ignores the ids; other retrievers read them.
        doc_ids = np.zeros(0, np.int64) if isinstance(par_r, _WholeCatalogue) else \
            np.tile(np.arange(param_ptr[0], param_ptr[-1], dtype=np.int64), nq)
        par = par_r.gather(plan.fields["parameters"], doc_ptr, doc_ids, docs=True)
        ap_sims, ap_off = pack_params_every_tool(n_args, param_ptr, par)
    else:
        ap_sims, ap_off = np.zeros(0, np.float32), np.zeros(tool.size, np.int64)
    return Candidates(ptr, tool, need_ptr[1:] - need_ptr[:-1], n_args, plan.penalize, need_sims, need_off,
                      ap_sims, ap_off)


_W = len(VALUES)  # a compile-time width: with out.shape[0] as the bound the row copy ran 2x slower
_ro_i8 = nt.Array(nt.int64, 1, "C", readonly=True)
_ro_f4 = nt.Array(nt.float32, 1, "C", readonly=True)
_ro_f4_2d = nt.Array(nt.float32, 2, "C", readonly=True)
_ro_f4_3d = nt.Array(nt.float32, 3, "C", readonly=True)
_SIG_INTERLEAVE = nt.void(_ro_f4, _ro_f4_2d, _ro_i8, nt.float32[:, :, ::1])


@numba.njit(_SIG_INTERLEAVE, cache=True, nogil=True)
def _interleave(score, terms, rows, out):  # pragma: no cover - compiled
    # out[rows[j], i] = (score, *terms) of pair j * block + i, in one pass: two NumPy
    # strided copies per table (out[:, 0] = score; out[:, 1:] = terms) took ~3x longer
    # (0.024 vs 0.008 CPU-s per 1,000 full-catalogue tables).
    block = out.shape[1]
    for j in range(rows.shape[0]):
        r = rows[j]
        for i in range(block):
            k = j * block + i
            out[r, i, 0] = score[k]
            for c in range(_W - 1):
                out[r, i, c + 1] = terms[k, c]
_ro_i4 = nt.Array(nt.int32, 1, "C", readonly=True)
_SIG_FILL = nt.void(_ro_i4, _ro_i4, _ro_i8, _ro_i8, _ro_f4_3d, _ro_i8, _ro_f4_2d, nt.float32[:, ::1])


@numba.njit(_SIG_FILL, cache=True, nogil=True)
def _fill(qkey, tkey, table_of, tool_of, tables, inverse, grouped, out):  # pragma: no cover - compiled
    has_inverse = inverse.shape[0] > 0
    for i in range(qkey.shape[0]):
        r = table_of[qkey[i]]
        t = tool_of[tkey[i]]
        if r >= 0 and t >= 0:
            for c in range(_W):
                out[c, i] = tables[r, t, c]
        else:
            j = inverse[i] if has_inverse else -1
            if j >= 0:
                for c in range(_W):
                    out[c, i] = grouped[j, c]
            else:
                for c in range(_W):
                    out[c, i] = np.nan


def fill_rows(qkey: np.ndarray, tkey: np.ndarray, table_of: np.ndarray, tool_of: np.ndarray, tables: np.ndarray,
              inverse: np.ndarray | None = None, grouped: np.ndarray | None = None) -> np.ndarray:
    """``float32[6, rows]``: row ``i``'s :data:`VALUES`, with ``r = table_of[qkey[i]]``
    and ``t = tool_of[tkey[i]]``, from ``tables[r, t]`` when both are ``>= 0``, else from
    ``grouped[inverse[i]]``, else NaN (a row that was not scored).

    The keys are the rows' dictionary indices and ``table_of`` / ``tool_of`` map
    dictionary entries, so one pass answers a batch without per-row index arrays.
    """
    out = np.empty((_W, qkey.size), np.float32)
    inverse = np.zeros(0, np.int64) if inverse is None else np.ascontiguousarray(inverse, dtype=np.int64)
    grouped = np.zeros((0, _W), np.float32) if grouped is None else np.ascontiguousarray(grouped, dtype=np.float32)
    # One thread: ~20 ns a row. Two threads did not shorten it on the 2-core machine
    # (the reader and writer threads use the other core) and cost ~60% more CPU.
    _fill(np.ascontiguousarray(qkey, dtype=np.int32), np.ascontiguousarray(tkey, dtype=np.int32),
           np.ascontiguousarray(table_of, dtype=np.int64), np.ascontiguousarray(tool_of, dtype=np.int64),
           np.ascontiguousarray(tables, dtype=np.float32), inverse, grouped, out)
    return out
