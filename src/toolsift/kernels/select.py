"""Numba kernel: the best ``n`` keys of a scored row, a key scoring as its best entry.

A dense field's candidates are, per query text, the ``n`` tools with the highest positive
cosine, where a tool with several documents scores as its best one. In NumPy that is a
mask, two fancy indexings, an ``argpartition`` over every document and, for grouped
fields, a sort and ``unique``: about 0.1 ms for 6,000 documents, as much as the scan
that produced the scores. One pass with a bounded heap does it in a few microseconds.

Ties are broken by the lower key, so the selection is deterministic (the NumPy twin in
``tests/test_select.py`` uses the same rule). Like every kernel here it has an explicit
signature with read-only inputs, is cached on disk and releases the GIL.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types as nt

__all__ = ["SIG_TOP_POSITIVE", "top_positive", "top_positive_kernel", "top_positive_trusted"]

_ro_f4 = nt.Array(nt.float32, 1, "C", readonly=True)
_ro_i8 = nt.Array(nt.int64, 1, "C", readonly=True)

#: ``top_positive_kernel(scores, rows, groups, n, best, out) -> count``.
SIG_TOP_POSITIVE = nt.int64(_ro_f4, _ro_i8, _ro_i8, nt.int64, nt.float32[::1], nt.int64[::1])


@numba.njit(cache=True, nogil=True, inline="always")
def _worse(s1, k1, s2, k2):
    return s1 < s2 or (s1 == s2 and k1 > k2)


@numba.njit(cache=True, nogil=True)
def _sift_down(hs, hk, i, size):
    # Min-heap on "worse": the root is the worst of the kept keys.
    while True:
        c = 2 * i + 1
        if c >= size:
            return
        if c + 1 < size and _worse(hs[c + 1], hk[c + 1], hs[c], hk[c]):
            c += 1
        if not _worse(hs[c], hk[c], hs[i], hk[i]):
            return
        hs[i], hs[c] = hs[c], hs[i]
        hk[i], hk[c] = hk[c], hk[i]
        i = c


@numba.njit(cache=True, nogil=True)
def _top_rows(scores, rows, n, out):
    # Every row is its own key, so no key can score twice: the heap takes the entries
    # as they come, with no per-key best to gather first (a scatter into an n_keys
    # scratch and a second pass cost 4x the heap on 6,000 rows).
    hs = np.empty(n, np.float32)
    hk = np.empty(n, np.int64)
    size = 0
    for i in range(scores.shape[0]):
        s = scores[i]
        if s > 0:
            key = rows[i]
            if size < n:
                # Sift up: the root stays the worst kept entry.
                c = size
                size += 1
                hs[c] = s
                hk[c] = key
                while c > 0:
                    p = (c - 1) // 2
                    if not _worse(hs[c], hk[c], hs[p], hk[p]):
                        break
                    hs[c], hs[p] = hs[p], hs[c]
                    hk[c], hk[p] = hk[p], hk[c]
                    c = p
            elif _worse(hs[0], hk[0], s, key):
                hs[0] = s
                hk[0] = key
                _sift_down(hs, hk, 0, n)
    for j in range(size):
        out[j] = hk[j]
    return size


@numba.njit(SIG_TOP_POSITIVE, cache=True, nogil=True)
def top_positive_kernel(scores, rows, groups, n, best, out):
    """Write the best ``min(n, #keys)`` keys with a positive score to ``out`` (unordered)
    and return how many (unchecked).

    Entry ``i`` belongs to key ``groups[rows[i]]``, or ``rows[i]`` when ``groups`` is
    empty (``rows`` then distinct). ``best`` is a zeroed ``float32[n_keys]`` scratch,
    zeroed again on return (unused without groups).
    """
    m = scores.shape[0]
    if groups.shape[0] == 0:
        return _top_rows(scores, rows, n, out)
    touched = np.empty(m, np.int64)
    cnt = 0
    grouped = True
    for i in range(m):
        s = scores[i]
        if s > 0:
            key = groups[rows[i]] if grouped else rows[i]
            b = best[key]
            if b == 0:
                touched[cnt] = key
                cnt += 1
            if s > b:
                best[key] = s
    if cnt <= n:
        for j in range(cnt):
            out[j] = touched[j]
            best[touched[j]] = 0
        return cnt
    hs = np.empty(n, np.float32)
    hk = np.empty(n, np.int64)
    for j in range(n):
        hk[j] = touched[j]
        hs[j] = best[touched[j]]
    for j in range(n // 2 - 1, -1, -1):
        _sift_down(hs, hk, j, n)
    for j in range(n, cnt):
        key = touched[j]
        s = best[key]
        if _worse(hs[0], hk[0], s, key):
            hs[0] = s
            hk[0] = key
            _sift_down(hs, hk, 0, n)
    for j in range(cnt):
        best[touched[j]] = 0
    for j in range(n):
        out[j] = hk[j]
    return n


_NO_GROUPS = np.zeros(0, np.int64)


def top_positive(scores: np.ndarray, rows: np.ndarray, groups: np.ndarray | None, n_keys: int,
                 n: int) -> np.ndarray:
    """The best ``n`` keys with a positive score, unordered (ties: the lower key).

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
    made; checking them again cost a pass over every document per search."""
    n = min(n, n_keys)  # a search's k can exceed the keys: size the heap by what exists
    if n <= 0:
        return np.zeros(0, np.int64)
    out = np.empty(n, np.int64)
    # The per-key scratch only matters with groups (zeroing 6,000 floats per call is not free).
    best = np.zeros(n_keys if groups.shape[0] else 0, np.float32)
    count = top_positive_kernel(scores, rows, groups, n, best, out)
    return out[:count]
