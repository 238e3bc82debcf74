"""Grouping a batch's rows into the search path's CSR layout, and back.

A batch of pairs arrives in arbitrary row order: the same query recurs in scattered
rows, and a (query, tool) pair may repeat. The engine's ``gather`` wants, per query, a
strictly increasing list of tools. :func:`group_pairs` builds that CSR in two linear
passes (a counting sort by query, then per query a tool marker array) and returns, for
every row, which CSR entry holds its score, so each distinct pair is scored once and
the results are scattered back to row order with one take. The passes are the C++
engine's (``_core.group_pairs``).
"""

from __future__ import annotations

import numpy as np

from .. import _core

__all__ = ["group_pairs"]


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
    # The engine's two passes (cpp/src/pair_scores.cpp); it checks every index first.
    return _core.group_pairs(query, tool, int(n_queries), int(n_tools))
