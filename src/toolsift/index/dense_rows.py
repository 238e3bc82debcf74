"""Which rows a dense field keeps: a mostly-empty need field is stored as its non-empty
documents and the tool of each (a row map), not one row per document.

An empty document (a tool without a response text or example intents) gets a zero row,
which scores 0 against every query and is in no IVF list: it is no evidence, exactly as
a tool with no rows at all is (a tool's score is the max over its rows, 0 when it has
none). So dropping zero rows changes no score; it only changes the layout. At a million
tools the hybrid preset's response field has 294,823 non-empty documents: one row per
tool made a 366 MB matrix whose non-empty rows touched nearly every page (108 MB of
content), and an examples field with no intent at all was 366 MB on disk
(docs/results/scale-1M-2026-11-28c.md).

The parameters field keeps every row: its dense rows are addressed by BM25 document id
(``gather(docs=True)``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["COMPACT_SHARE", "compacts", "expand_rows", "kept_rows", "owners"]

#: A need field is stored compactly when at most this share of its documents is non-empty
#: (above it the row map and a grouped gather cost more than the zero rows they save, and
#: a field with a row per tool keeps the IVF's one-pass probe).
COMPACT_SHARE = 0.5


def compacts(name: str, n_kept: int, n_docs: int) -> bool:
    """Whether field ``name`` with ``n_kept`` non-empty of ``n_docs`` documents is stored
    as its non-empty rows only."""
    return name != "parameters" and n_kept <= COMPACT_SHARE * n_docs


def kept_rows(texts: Sequence[str]) -> np.ndarray:
    """``int64``: positions of the non-blank texts (blank texts get zero rows)."""
    return np.fromiter((i for i, t in enumerate(texts) if t.strip()), np.int64)


def owners(counts: np.ndarray | None, n_tools: int) -> np.ndarray:
    """``int64``: the tool of each document (``counts``: documents per tool, ``None``:
    one each)."""
    if counts is None:
        return np.arange(n_tools, dtype=np.int64)
    return np.repeat(np.arange(n_tools, dtype=np.int64), counts)


def expand_rows(codes: np.ndarray, scales: np.ndarray, pos: np.ndarray, *, chunk: int = 16_384) -> None:
    """In place: rows ``0..len(pos)-1`` of ``codes``/``scales`` (written compactly) move
    to rows ``pos`` (ascending, ``pos[i] >= i``), and the rows left in between become
    zero rows. Chunks from the back, so no source row is overwritten before it moves and
    no copy of the whole matrix is made."""
    k = pos.size
    for hi in range(k, 0, -chunk):
        lo = max(hi - chunk, 0)
        c, s = codes[lo:hi].copy(), scales[lo:hi].copy()
        codes[pos[lo:hi]], scales[pos[lo:hi]] = c, s
    if k:
        blank = np.ones(int(pos[-1]) + 1, bool)
        blank[pos] = False
        gone = np.flatnonzero(blank[:k])  # rows once written that now hold no document
        codes[gone], scales[gone] = 0, 0.0
