"""Full-catalogue score tables for queries that recur in many rows.

When a query has been paired with many tools (at least ``share`` x the catalogue size,
counting rows over the whole stream), scoring it once against every tool costs no more
than scoring its rows, and every later row of that query becomes one table look-up. The
table holds exactly what the kernel returns for those pairs (same gather, same kernel,
candidate by candidate), so a row answered from a table is bit-identical to the same row
scored on its own.

Memory is bounded by ``budget_mb``: tables live in one ``float32[capacity, tools, 6]``
array whose pages the OS commits only when written, and the least recently used table
makes room for a new one.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TableCache"]


class TableCache:
    """Per-query full-catalogue tables (see the module docstring).

    Args:
        n_tools: Catalogue size.
        width: Values per pair.
        budget_mb: Memory for tables, in MiB (0 disables them).
        share: Rows seen per query, as a share of the catalogue size, before its table
            is built.
    """

    def __init__(self, n_tools: int, width: int, *, budget_mb: float, share: float) -> None:
        self.n_tools, self.share = n_tools, share
        per = n_tools * width * 4
        self.capacity = int(budget_mb * 2**20 // per) if per else 0
        self.tables = np.empty((self.capacity, n_tools, width), np.float32) if self.capacity else \
            np.zeros((1, 1, width), np.float32)
        self.reset()

    def reset(self) -> None:
        """Forget every table (slots they were keyed by are no longer valid)."""
        self.slot_of_row = np.full(self.capacity, -1, np.int64)
        self.last_used = np.full(self.capacity, -1, np.int64)
        self.row_of_slot = np.zeros(0, np.int64)
        self.clock = 0

    def rows_for(self, slots: np.ndarray) -> np.ndarray:
        """``int64[len(slots)]``: each slot's table row, ``-1`` if it has none."""
        self._cover(int(slots.max()) + 1 if slots.size else 0)
        if not slots.size or slots.min() >= 0:
            return self.row_of_slot[slots]
        out = np.full(slots.size, -1, np.int64)
        ok = slots >= 0
        out[ok] = self.row_of_slot[slots[ok]]
        return out

    def promote(self, candidates: np.ndarray, rows_seen: np.ndarray, in_use: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Give tables to the ``candidates`` slots (without one) that have been seen in
        enough rows, most-seen first, evicting tables not in ``in_use`` (slots the
        current batch reads). Returns ``(slots, rows)`` of the new tables, still to fill."""
        self.clock += 1
        if not self.capacity or not candidates.size:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        self._cover(int(max(candidates.max(), in_use.max(initial=-1))) + 1)
        want = candidates[(rows_seen[candidates] >= self.share * self.n_tools) & (self.row_of_slot[candidates] < 0)]
        if not want.size:
            self._touch(in_use)
            return want, want
        want = want[np.argsort(-rows_seen[want], kind="stable")]
        self._touch(in_use)
        # Free rows first, then the least recently used ones not read by this batch.
        free = np.flatnonzero(self.slot_of_row < 0)
        busy = np.flatnonzero((self.slot_of_row >= 0) & (self.last_used < self.clock))
        busy = busy[np.argsort(self.last_used[busy], kind="stable")]
        rows = np.concatenate([free, busy])[: want.size]
        want = want[: rows.size]
        old = self.slot_of_row[rows]
        self.row_of_slot[old[old >= 0]] = -1
        self.slot_of_row[rows] = want
        self.row_of_slot[want] = rows
        self.last_used[rows] = self.clock
        return want, rows

    def _touch(self, slots: np.ndarray) -> None:
        r = self.row_of_slot[slots[slots >= 0]]
        self.last_used[r[r >= 0]] = self.clock

    def _cover(self, n: int) -> None:
        if n > self.row_of_slot.size:
            self.row_of_slot = np.concatenate([self.row_of_slot, np.full(n - self.row_of_slot.size, -1, np.int64)])
