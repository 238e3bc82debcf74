"""Scoring one Arrow record batch of (query, tool) pairs, columnar from end to end.

Per batch, with no per-row Python:

1. The query column is dictionary-encoded (Parquet files are read that way already), so
   each *distinct* query string is looked up once in the :class:`QueryStore`; tool ids
   go through ``pyarrow.compute.index_in`` against the catalogue ids the same way.
2. Rows whose query has a full-catalogue table (:mod:`toolsift.batch.tables`) are
   answered from it; queries that now qualify get their table built.
3. The other rows are grouped into distinct pairs, CSR by query
   (:func:`~toolsift.batch.pairs.group_pairs`), scored by the search path's pack and
   the engine's MFTR (:mod:`toolsift.batch.compute`) and scattered back to row order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..kernels.launch import using_threads
from .arrays import float32_column, int_values, string_array, valid_mask
from .columns import (ERROR_COLUMN, SCORE_COLUMNS, BatchInputError, BatchRowError, check_output_names,
                      check_string_column, column_index)
from .compute import VALUES, fill_rows, score_grouped, score_whole
from .pairs import group_pairs
from .queries import QueryStore
from .tables import TableCache

__all__ = ["ON_ERROR", "PairScorer"]

#: ``raise``: a bad row raises :class:`BatchRowError` naming it; ``column``: it gets null
#: scores and a message in the ``error`` column.
ON_ERROR = ("raise", "column")

_NULL, _UNKNOWN = -1, -2


def _indices(dcol: pa.DictionaryArray) -> np.ndarray:
    """Dictionary indices as NumPy (zero-copy when there are no nulls); a null row
    points one past the dictionary, where the look-up arrays hold their null marker."""
    if len(dcol.dictionary) >= 2**31 - 1:
        raise BatchInputError(f"a dictionary of {len(dcol.dictionary):,} distinct values is too large")
    # int32, as Parquet and Arrow write them (zero-copy): the row pass reads 4 bytes a key.
    return int_values(dcol.indices, null=len(dcol.dictionary)).astype(np.int32, copy=False)


class PairScorer:
    """Scores record batches of pairs against one index; keeps the distinct queries
    (parsed, analysed, and for frequent ones their full-catalogue scores) across batches.

    Args:
        index: A :class:`~toolsift.ToolIndex`.
        query_column: Column of queries: raw text or structured query JSON.
        tool_column: Column of tool ids.
        keep: Input columns copied to the output (default: all but ``query_column``).
        on_error: See :data:`ON_ERROR`.
        query_format: ``auto``, ``text`` or ``json`` (see :data:`~toolsift.batch.queries.QUERY_FORMATS`).
        threads: Threads for the engine and kernels (default: the index's setting; 0 =
            all cores).
        max_queries: Distinct queries remembered before starting afresh.
        table_mb: Memory for full-catalogue tables of frequent queries (0: none).
        table_share: Rows seen, as a share of the catalogue size, before a query gets a table.
        max_pairs: Pairs per kernel call (bounds the per-call similarity arrays).
        expected_rows: Rows the whole input holds, when known (a file's row count): a
            query's rows so far are then projected over the input, so a query that will
            recur in many rows gets its table in the first batches instead of being scored
            pair by pair until its count reaches the threshold. Any value gives the same
            scores (tables and pairs are bit-identical); only the work differs.
    """

    def __init__(self, index, *, query_column: str = "query", tool_column: str = "tool_id",
                 keep: Sequence[str] | None = None, on_error: str = "raise", query_format: str = "auto",
                 threads: int | None = None, max_queries: int = 20_000, table_mb: float = 256,
                 table_share: float = 0.25, max_pairs: int = 262_144, expected_rows: int | None = None) -> None:
        if on_error not in ON_ERROR:
            raise BatchInputError(f"on_error must be one of {', '.join(ON_ERROR)}, got {on_error!r}")
        if max_pairs < 1 or max_queries < 1 or table_mb < 0 or table_share <= 0:
            raise BatchInputError("max_pairs and max_queries must be >= 1, table_mb >= 0 and table_share > 0")
        self.st = index._state  # one immutable index version for the whole job
        self.config = index.config if threads is None else replace(index.config, threads=threads)
        self.query_column, self.tool_column, self.on_error = query_column, tool_column, on_error
        self._keep = None if keep is None else list(keep)
        self.store = QueryStore(self.st, self.config, query_format=query_format, max_queries=max_queries)
        self.tables = TableCache(len(self.st.catalog), len(VALUES), budget_mb=table_mb, share=table_share)
        self.max_pairs = max_pairs
        self._ids = string_array(self.st.catalog.ids)
        self._schema: pa.Schema | None = None
        self._memo: dict[str, tuple] = {}
        self.rows_done = 0
        self.expected_rows = expected_rows

    # ---------------------------------------------------------------- schema
    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        """The schema of the batches :meth:`score_batch` returns for input ``schema``."""
        self._check(schema)
        fields = [schema.field(n) for n in self._kept(schema)]
        # With on_error="raise" no output row lacks scores: the columns are declared
        # non-nullable, so Parquet writes them REQUIRED, without definition levels
        # (~0.15 of ~0.5 CPU-seconds of writing 10M rows).
        nullable = self.on_error == "column"
        fields += [pa.field(n, pa.float32(), nullable=nullable) for n in SCORE_COLUMNS]
        if self.on_error == "column":
            fields.append(pa.field(ERROR_COLUMN, pa.string()))
        return pa.schema(fields)

    def _kept(self, schema: pa.Schema) -> list[str]:
        return [n for n in schema.names if n != self.query_column] if self._keep is None else self._keep

    def _check(self, schema: pa.Schema) -> None:
        if self._schema is not None and schema.equals(self._schema):
            return
        column_index(schema, self.query_column, "query")
        column_index(schema, self.tool_column, "tool")
        check_string_column(schema, self.query_column, "query text or structured query JSON")
        check_string_column(schema, self.tool_column, "tool ids")
        added = list(SCORE_COLUMNS) + ([ERROR_COLUMN] if self.on_error == "column" else [])
        check_output_names(schema, self._kept(schema), added)
        self._schema = schema

    # ----------------------------------------------------------------- batch
    def score_batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Score every row of ``batch``; the output has one row per input row, in order.

        Raises:
            BatchInputError: A missing or mistyped column.
            BatchRowError: A bad row, with ``on_error="raise"``.
        """
        self._check(batch.schema)
        n = batch.num_rows
        tcol = batch.column(self.tool_column)
        with using_threads(self.config.threads):
            # Per dictionary entry (slot / catalogue position, null marker last) and per
            # row (entry index): nothing per row is looked up but the entry index.
            qd, qi = self._query_slots(batch.column(self.query_column))
            td, ti = self._tool_positions(tcol)
            valid = self._valid_rows(qd, qi, td, ti)
            if valid is not None and self.on_error == "raise":
                i = int(np.flatnonzero(~valid)[0])
                col, why = self._reason(i, qd[qi], td[ti], tcol)
                raise BatchRowError(self.rows_done + i, col, why)
            values = self._score_valid(qd, qi, td, ti, valid)
        self.rows_done += n
        out = [batch.column(c) for c in self._kept(batch.schema)]
        out += [float32_column(values[c], valid) for c in range(len(VALUES))]
        if self.on_error == "column":
            out.append(self._error_column(n, valid, qd, qi, td, ti, tcol))
        return pa.RecordBatch.from_arrays(out, schema=self.output_schema(batch.schema))

    def _valid_rows(self, qd: np.ndarray, qi: np.ndarray, td: np.ndarray, ti: np.ndarray) -> np.ndarray | None:
        """``bool[rows]``: rows with a parsed query and a known tool; ``None`` when every
        row is (decided on the dictionary entries the batch uses, not per row)."""
        q_ok = qd >= 0
        bad = self.store.bad()
        if bad.any():
            q_ok &= ~bad[np.maximum(qd, 0)]
        t_ok = td >= 0
        # The last entries are the null markers: no row points there unless it is null.
        if q_ok[:-1].all() and t_ok[:-1].all() and qi.max(initial=-1) < qd.size - 1 \
                and ti.max(initial=-1) < td.size - 1:
            return None
        valid = q_ok[qi] & t_ok[ti]
        return None if valid.all() else valid

    def _score_valid(self, qd: np.ndarray, qi: np.ndarray, td: np.ndarray, ti: np.ndarray,
                     valid: np.ndarray | None) -> np.ndarray:
        st, store, tables = self.st, self.store, self.tables
        # Rows per slot: counted per dictionary entry, then summed per slot (two entries
        # may hold the same string).
        per_entry = np.bincount(qi if valid is None else qi[valid], minlength=qd.size)
        used_e = np.flatnonzero(per_entry)
        counts = np.bincount(qd[used_e], weights=per_entry[used_e], minlength=len(store)).astype(np.int64)
        store.rows_seen += counts
        used = np.flatnonzero(counts)
        seen: np.ndarray = store.rows_seen
        done = self.rows_done + qi.size
        if self.expected_rows is not None and self.expected_rows > done:
            # Each query's rows projected over the whole input (uniform spread assumed;
            # a query whose rows come later is promoted then, as without a forecast).
            seen = seen * (self.expected_rows / done)
        new_slots, new_rows = tables.promote(used, seen, used)
        if new_slots.size:
            score_whole(st, self.config, store, new_slots, tables.tables, new_rows, max_pairs=self.max_pairs)
        table_of = tables.rows_for(qd)
        if (table_of[used_e] >= 0).all():  # every row has a table (the steady state of a long job)
            return fill_rows(qi, ti, table_of, td, tables.tables, threads=self.config.threads)
        # The rest: distinct pairs of the rows without a table, CSR by query.
        q, t = qd[qi], td[ti]
        rest = table_of[qi] < 0
        if valid is not None:
            rest &= valid
        local = np.full(len(store), -1, np.int64)
        sparse = np.unique(q[rest])
        local[sparse] = np.arange(sparse.size)
        lq = np.where(rest, local[np.maximum(q, 0)], -1)
        ptr, tools, inverse = group_pairs(lq, np.maximum(t, 0), sparse.size, len(st.catalog))
        grouped = score_grouped(st, self.config, store, sparse, ptr, tools, max_pairs=self.max_pairs) \
            if tools.size else np.zeros((0, len(VALUES)), np.float32)
        return fill_rows(qi, ti, table_of, td, tables.tables, inverse, grouped, threads=self.config.threads)

    # --------------------------------------------------------------- columns
    def _dictionary(self, col: pa.Array) -> pa.DictionaryArray:
        if pa.types.is_dictionary(col.type):
            return col
        if pa.types.is_null(col.type):
            return pa.DictionaryArray.from_arrays(pa.nulls(len(col), pa.int32()), pa.array([], pa.string()))
        return pc.dictionary_encode(col)

    def _memoised(self, kind: str, d: pa.Array, compute):
        # Batches of one Parquet row group share their dictionary buffers, and the row
        # groups of one writer usually repeat the same dictionary: map it once. The memo
        # holds the dictionary itself, so its buffers stay allocated and no other
        # dictionary can turn up at the same addresses while the entry lives; a
        # different address is checked by content (a memcmp, ~1 MB for 1,000 queries,
        # where looking the strings up again cost a few ms per batch).
        bufs = d.buffers()
        key = (self.store.generation, len(d), d.offset, *(b.address if b is not None else 0 for b in bufs))
        got = self._memo.get(kind)
        if got is not None and (got[0] == key or (got[0][0] == key[0] and got[2].equals(d))):
            if got[0] != key:
                self._memo[kind] = (key, got[1], d)
            return got[1]
        value = compute(d)
        self._memo[kind] = (key, value, d)
        return value

    def _query_slots(self, col: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """``(slots, entry)``: the slot of each dictionary entry (``-1`` appended for
        null), and each row's entry."""
        dcol = self._dictionary(col)
        d = dcol.dictionary
        if self.store.make_room(len(d)):
            self.tables.reset()
            self._memo.clear()
        slots = self._memoised("query", d, lambda x: np.append(self.store.slots(x.to_pylist()), -1))
        return slots, _indices(dcol)

    def _tool_positions(self, col: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, entry)``: the catalogue position of each dictionary entry
        (``_UNKNOWN``, or ``_NULL`` appended for null), and each row's entry."""
        dcol = self._dictionary(col)
        d = dcol.dictionary

        def positions(x: pa.Array) -> np.ndarray:
            pos = int_values(pc.index_in(x, value_set=self._ids), null=_UNKNOWN).astype(np.int64)
            valid = valid_mask(x)
            if valid is not None:
                pos[~valid] = _NULL
            return np.append(pos, _NULL)

        return self._memoised("tool", d, positions), _indices(dcol)

    # ---------------------------------------------------------------- errors
    def _reason(self, i: int, q: np.ndarray, t: np.ndarray, tcol: pa.Array) -> tuple[str, str]:
        if q[i] < 0:
            return self.query_column, "the query is null"
        err = self.store.errors[q[i]]
        if err is not None:
            return self.query_column, err
        if t[i] == _NULL:
            return self.tool_column, "the tool id is null"
        return self.tool_column, f"unknown tool id {tcol[i].as_py()!r}"

    def _error_column(self, n: int, valid: np.ndarray | None, qd: np.ndarray, qi: np.ndarray, td: np.ndarray,
                      ti: np.ndarray, tcol: pa.Array) -> pa.Array:
        if valid is None:
            return pa.nulls(n, pa.string())
        q, t = qd[qi], td[ti]
        msgs = np.full(n, None, dtype=object)
        for i in np.flatnonzero(~valid):
            col, why = self._reason(int(i), q, t, tcol)
            msgs[i] = f"{col}: {why}"
        return pa.array(msgs, type=pa.string())
