"""The best ``n`` keys of a scored row, a key scoring as its best entry (the C++ core's).

A dense field's candidates are, per query text, the ``n`` tools with the highest positive
cosine, where a tool with several documents scores as its best one. In NumPy that is a
mask, two fancy indexings, an ``argpartition`` over every document and, for grouped
fields, a sort and ``unique``: about 0.1 ms for 6,000 documents, as much as the scan
that produced the scores. One pass over the row with a per-key best (and a partial
selection when more than ``n`` keys score) does it in a few microseconds
(``toolsift/group_top.h``), without Numba on the search path.

Ties are broken by the lower key, so the selection is deterministic (the NumPy twin in
``tests/test_select.py`` uses the same rule). Keys come back in ascending order.
"""

from __future__ import annotations

import numpy as np

from .. import _core

__all__ = ["top_positive", "top_positive_trusted"]


_NO_GROUPS = np.zeros(0, np.int64)


def top_positive(scores: np.ndarray, rows: np.ndarray, groups: np.ndarray | None, n_keys: int,
                 n: int) -> np.ndarray:
    """The best ``n`` keys with a positive score, ascending (ties: the lower key).

    Args:
        scores: ``float32[m]`` scores of entries.
        rows: ``int64[m]``: the row each entry is (distinct when ``groups`` is ``None``:
            a row is then a key, and a key is one entry).
        groups: ``int64[rows]``: the key of each row, or ``None`` (a row is its own key).
        n_keys: Number of keys (every key is below it).
        n: How many keys to return at most (>= 1).

    Raises:
        ValueError: Mismatched lengths, ``n`` < 1, a key outside ``0..n_keys-1``, or
            a repeated row without ``groups``.
    """
    scores = np.ascontiguousarray(scores, dtype=np.float32)
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    if scores.ndim != 1 or rows.shape != scores.shape:
        raise ValueError(f"scores and rows must be 1-D of one length, got {scores.shape} and {rows.shape}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    g = _NO_GROUPS if groups is None else np.ascontiguousarray(groups, dtype=np.int64)
    if rows.size:
        lo, hi = int(rows.min()), int(rows.max())
        limit = g.shape[0] if groups is not None else n_keys
        if lo < 0 or hi >= limit:
            raise ValueError(f"rows must lie in 0..{limit - 1}, got {lo}..{hi}")
        if groups is not None and g.size and (int(g.min()) < 0 or int(g.max()) >= n_keys):
            raise ValueError(f"groups must lie in 0..{n_keys - 1}")
        if groups is None and np.unique(rows).size != rows.size:
            raise ValueError("rows must be distinct when there are no groups (each row is a key)")
    return top_positive_trusted(scores, rows, g, n_keys, n)


def top_positive_trusted(scores: np.ndarray, rows: np.ndarray, groups: np.ndarray, n_keys: int,
                         n: int) -> np.ndarray:
    """:func:`top_positive` without the checks, for the search path: ``rows`` and
    ``groups`` (``int64``, empty for none) are a dense field's own, checked when it was
    made (the core still checks their range, a C++ loop of microseconds)."""
    if min(n, n_keys) <= 0:  # a search's k can exceed the keys: nothing to select from none
        return np.zeros(0, np.int64)
    return _core.top_positive(scores, rows, groups, n_keys, n)
