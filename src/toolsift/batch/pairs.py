"""Grouping a batch's rows into the search path's CSR layout, and back.

A batch of pairs arrives in arbitrary row order: the same query recurs in scattered
rows, and a (query, tool) pair may repeat. The engine's ``gather`` wants, per query, a
strictly increasing list of tools. :func:`group_pairs` builds that CSR in two linear
passes (a counting sort by query, then per query a tool marker array) and returns, for
every row, which CSR entry holds its score, so each distinct pair is scored once and
the results are scattered back to row order with one take.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types as nt

__all__ = ["group_pairs"]

_ro_i8 = nt.Array(nt.int64, 1, "C", readonly=True)
_i8 = nt.int64[::1]

# query, tool, n_queries, n_tools -> ptr[nq + 1], tools[m] (m <= rows), inverse[rows]; returns m
_SIG = nt.int64(_ro_i8, _ro_i8, nt.int64, nt.int64, _i8, _i8, _i8)


@numba.njit(_SIG, cache=True, nogil=True)
def _group(query, tool, n_queries, n_tools, ptr, tools, inverse):  # pragma: no cover - compiled
    n = query.shape[0]
    # Counting sort of the valid rows by query.
    start = np.zeros(n_queries + 1, np.int64)
    for i in range(n):
        if query[i] >= 0:
            start[query[i] + 1] += 1
    for q in range(n_queries):
        start[q + 1] += start[q]
    order = np.empty(start[n_queries], np.int64)
    fill = start[:-1].copy()
    for i in range(n):
        q = query[i]
        if q >= 0:
            order[fill[q]] = i
            fill[q] += 1
        else:
            inverse[i] = -1
    # Per query: its distinct tools, ascending, and each row's entry. ``slot`` maps a
    # tool to its entry for the current query and is reset after each query, so the
    # work is linear in the rows plus, for queries that name many tools, the catalogue.
    slot = np.full(n_tools, -1, np.int64)
    m = 0
    ptr[0] = 0
    for q in range(n_queries):
        lo, hi = start[q], start[q + 1]
        first = m
        for j in range(lo, hi):
            t = tool[order[j]]
            if slot[t] < 0:
                slot[t] = 0
                tools[m] = t
                m += 1
        k = m - first
        if k * 16 > n_tools:
            # Many tools: read them back off the marker array in order (no sort).
            w = first
            for t in range(n_tools):
                if slot[t] >= 0:
                    tools[w] = t
                    slot[t] = w
                    w += 1
        else:
            tools[first:m].sort()
            for w in range(first, m):
                slot[tools[w]] = w
        for j in range(lo, hi):
            inverse[order[j]] = slot[tool[order[j]]]
        for w in range(first, m):
            slot[tools[w]] = -1
        ptr[q + 1] = m
    return m


def group_pairs(query: np.ndarray, tool: np.ndarray, n_queries: int, n_tools: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (query, tool) pairs of a batch as CSR by query, and each row's entry.

    Args:
        query: ``int64[rows]``: each row's query (``0..n_queries-1``), or ``-1`` for a
            row that is not scored (its ``inverse`` is ``-1``).
        tool: ``int64[rows]``: each row's tool (``0..n_tools-1``; read only where
            ``query >= 0``).
        n_queries: Number of queries.
        n_tools: Catalogue size.

    Returns:
        ``(ptr int64[n_queries + 1], tools int64[m], inverse int64[rows])``: query ``q``
        scores ``tools[ptr[q]:ptr[q+1]]`` (strictly increasing), and row ``i``'s score is
        entry ``inverse[i]``.
    """
    query = np.ascontiguousarray(query, dtype=np.int64)
    tool = np.ascontiguousarray(tool, dtype=np.int64)
    if query.shape != tool.shape:
        raise ValueError(f"query has {query.size} rows, tool has {tool.size}")
    valid = query >= 0
    if valid.any():
        if int(query.max()) >= n_queries:
            raise ValueError(f"query index {int(query.max())} out of range for {n_queries} queries")
        tv = tool[valid]
        if int(tv.min()) < 0 or int(tv.max()) >= n_tools:
            raise ValueError(f"tool index out of range for {n_tools} tools")
    ptr = np.empty(n_queries + 1, np.int64)
    tools = np.empty(query.size, np.int64)
    inverse = np.empty(query.size, np.int64)
    m = _group(query, tool, n_queries, n_tools, ptr, tools, inverse)
    return ptr, tools[:m], inverse
