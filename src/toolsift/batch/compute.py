"""Scoring grouped pairs with the search path's own pack and MFTR kernel.

:func:`score_grouped` takes queries (store slots) and, per query, a strictly increasing
list of tools, and returns for every pair the score and the kernel's breakdown
(:data:`~toolsift.kernels.mftr.BREAKDOWN_COLUMNS`) as one ``float32[pairs, 6]`` array.
It runs :func:`~toolsift.search.candidates.pack` and
:func:`~toolsift.search.score.score` -- the exact code a search runs -- on chunks of at
most ``max_pairs`` pairs, so the per-field similarity arrays of one call stay within a
few hundred megabytes whatever the batch size.

:func:`fill_rows` then writes each row's six values from those results (or from a
per-query full-catalogue table, see :mod:`toolsift.batch.tables`) in row order.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types as nt

from ..config import IndexConfig, warn_untrained_penalty
from ..index.state import IndexState
from ..kernels.launch import launch
from ..search import retrievers
from ..search.retrievers import Bm25Retriever, FieldRetriever
from ..search.candidates import pack
from ..search.score import score
from .queries import QueryStore

__all__ = ["VALUES", "fill_rows", "score_grouped"]

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
                  tools: np.ndarray, *, max_pairs: int, whole: bool = False) -> np.ndarray:
    """``float32[ptr[-1], 6]``: :data:`VALUES` of query ``slots[q]`` against
    ``tools[ptr[q]:ptr[q+1]]`` for every ``q``; ``whole`` says each query lists every
    tool of the catalogue, in order."""
    out = np.empty((int(ptr[-1]), len(VALUES)), np.float32)
    fr = retrievers(st, config)
    if whole:
        fr = {f: _WholeCatalogue(r) if type(r) is Bm25Retriever else r for f, r in fr.items()}
    nq = slots.size
    a = 0
    while a < nq:
        # As many queries as fit in max_pairs (at least one, whatever its size).
        b = int(np.searchsorted(ptr, ptr[a] + max_pairs, side="right")) - 1
        b = min(max(b, a + 1), nq)
        lo, hi = int(ptr[a]), int(ptr[b])
        if hi > lo:
            plan = store.plan(slots[a:b])
            if plan.penalize.any():  # as score_pairs does (it warns once per process)
                warn_untrained_penalty(config.params)
            cands = pack(st, plan, fr, ptr[a:b + 1] - lo, tools[lo:hi])
            s, terms = score(st, cands, config.params, breakdown=True)
            out[lo:hi, 0] = s
            out[lo:hi, 1:] = terms
        a = b
    return out


_ro_i8 = nt.Array(nt.int64, 1, "C", readonly=True)
_ro_f4_2d = nt.Array(nt.float32, 2, "C", readonly=True)
_ro_f4_3d = nt.Array(nt.float32, 3, "C", readonly=True)
_SIG_FILL = nt.void(_ro_i8, _ro_i8, _ro_f4_3d, _ro_i8, _ro_f4_2d, nt.float32[:, ::1])


@numba.njit(_SIG_FILL, cache=True, nogil=True, parallel=True)
def _fill(table_row, tool, tables, inverse, grouped, out):  # pragma: no cover - compiled
    width = out.shape[0]
    for i in numba.prange(tool.shape[0]):
        r = table_row[i]
        if r >= 0:
            t = tool[i]
            for c in range(width):
                out[c, i] = tables[r, t, c]
        else:
            j = inverse[i]
            if j >= 0:
                for c in range(width):
                    out[c, i] = grouped[j, c]
            else:
                for c in range(width):
                    out[c, i] = np.nan


def fill_rows(table_row: np.ndarray, tool: np.ndarray, tables: np.ndarray, inverse: np.ndarray,
              grouped: np.ndarray) -> np.ndarray:
    """``float32[6, rows]``: row ``i``'s :data:`VALUES` from ``tables[table_row[i],
    tool[i]]`` when ``table_row[i] >= 0``, else from ``grouped[inverse[i]]``, else NaN
    (a row that was not scored)."""
    out = np.empty((len(VALUES), tool.size), np.float32)
    # Memory-bound (one random table read per row): threads overlap the cache misses.
    launch(_fill, np.ascontiguousarray(table_row, dtype=np.int64), np.ascontiguousarray(tool, dtype=np.int64),
          np.ascontiguousarray(tables, dtype=np.float32), np.ascontiguousarray(inverse, dtype=np.int64),
          np.ascontiguousarray(grouped, dtype=np.float32), out, work=tool.size)
    return out
