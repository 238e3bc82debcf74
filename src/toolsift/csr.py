"""Small helpers for CSR layouts (a pointer array over a flat values array)."""

from __future__ import annotations

import numpy as np

__all__ = ["ptr_from_counts", "ranges", "row_of", "sorted_unique"]


def ptr_from_counts(counts: np.ndarray) -> np.ndarray:
    """``int64[len(counts) + 1]`` row pointer of rows with ``counts`` entries."""
    out = np.zeros(np.size(counts) + 1, np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, s + c)`` for each (s, c), vectorised."""
    total = int(counts.sum())
    if not total:
        return np.zeros(0, np.int64)
    offsets = np.zeros(counts.size, np.int64)
    np.cumsum(counts[:-1], out=offsets[1:])
    return np.repeat(starts - offsets, counts) + np.arange(total, dtype=np.int64)


def row_of(ptr: np.ndarray) -> np.ndarray:
    """``int64[ptr[-1]]``: the row of every entry of a CSR layout with pointer ``ptr``."""
    if ptr.size == 2:
        # One row (a single search): a repeat over one row costs more than the zeros.
        return np.zeros(int(ptr[1] - ptr[0]), np.int64)
    return np.repeat(np.arange(ptr.size - 1, dtype=np.int64), ptr[1:] - ptr[:-1])


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of a 1-D integer array, by a sort: 3-13x faster than its hash
    table on int64 keys from a few hundred to 300k, and it never imports ``numpy.ma``
    (which ``np.unique`` does on first call, ~20 ms of a fresh process's first search)."""
    keys = np.sort(values)
    if keys.size < 2:
        return keys
    first = np.empty(keys.size, dtype=bool)
    first[0] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    return keys[first]
