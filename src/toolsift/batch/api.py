"""The batch functions: score pairs, or rank queries, streaming record batches."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

import pyarrow as pa

from .columns import BatchInputError
from .io import BatchSource, open_source, source_schema
from .rank import Ranker
from .scorer import PairScorer

__all__ = ["load_index", "rank_batches", "rank_table", "score_batches", "score_table"]

#: Default rows per batch: large enough that per-batch work (one kernel call, one
#: dictionary look-up per distinct query) is amortised, small enough to stay in memory.
BATCH_SIZE = 262_144


def load_index(index):
    """``index`` itself, or the index saved at that path (memory-mapped)."""
    if isinstance(index, (str, os.PathLike)):
        from ..toolindex import ToolIndex

        return ToolIndex.load(index)
    if not hasattr(index, "_state"):
        raise BatchInputError(f"expected a ToolIndex or an index directory, got {type(index).__name__}")
    return index


def score_batches(index, pairs: BatchSource, *, query_column: str = "query", tool_column: str = "tool_id",
                  keep: Sequence[str] | None = None, on_error: str = "raise", query_format: str = "auto",
                  batch_size: int = BATCH_SIZE, threads: int | None = None, table_mb: float = 256,
                  max_queries: int = 20_000) -> Iterator[pa.RecordBatch]:
    """Score every (query, tool) row of ``pairs``, one output batch per input batch.

    Args:
        index: A :class:`~toolsift.ToolIndex` or the path of a saved one.
        pairs: A ``pyarrow`` Table, RecordBatch, RecordBatchReader, dataset, an
            iterable of RecordBatches, or a Parquet / Arrow IPC / CSV / JSONL file.
        query_column: Queries: raw text or structured query JSON.
        tool_column: Tool ids.
        keep: Input columns to copy to the output (default: every column but the query).
        on_error: ``"raise"`` (:class:`~toolsift.batch.BatchRowError` naming the row) or
            ``"column"`` (null scores and an ``error`` message for bad rows).
        query_format: ``"auto"`` (``{...}`` is JSON), ``"text"`` or ``"json"``.
        batch_size: Rows per batch read and scored.
        threads: Threads (default: the index's ``config.threads``; 0 = all cores).
        table_mb: Memory for full-catalogue score tables of queries that recur in
            many rows (0: never build them).
        max_queries: Distinct queries remembered across batches.

    Yields:
        Record batches: the kept columns, then ``score``, ``description``,
        ``parameters``, ``response``, ``examples``, ``penalty`` (float32) and, with
        ``on_error="column"``, ``error``.

    Raises:
        BatchInputError: A missing or mistyped column, a bad option or an unreadable file.
        BatchRowError: A bad row with ``on_error="raise"``.
    """
    if not isinstance(batch_size, int) or batch_size < 1:
        raise BatchInputError(f"batch_size must be a positive integer, got {batch_size!r}")
    scorer = PairScorer(load_index(index), query_column=query_column, tool_column=tool_column, keep=keep,
                        on_error=on_error, query_format=query_format, threads=threads, table_mb=table_mb,
                        max_queries=max_queries)
    for batch in open_source(pairs, batch_size=batch_size, dictionary=(query_column, tool_column)):
        yield scorer.score_batch(batch)


def score_table(index, pairs: BatchSource, **options) -> pa.Table:
    """:func:`score_batches` collected into one table (keyword options as there).

    An empty input gives an empty table with the output columns only when its schema
    is known (a Table or a file); raises :class:`BatchInputError` if it is not.
    """
    batches = list(score_batches(index, pairs, **options))
    if batches:
        return pa.Table.from_batches(batches)
    if isinstance(pairs, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)):
        schema = pairs.schema
    elif isinstance(pairs, (str, os.PathLike)):
        schema = source_schema(pairs, dictionary=(options.get("query_column", "query"),
                                                  options.get("tool_column", "tool_id")))
    else:
        raise BatchInputError("no input rows and no schema to build an empty result from")
    keys = ("query_column", "tool_column", "keep", "on_error")
    scorer = PairScorer(load_index(index), **{k: options[k] for k in keys if k in options})
    return scorer.output_schema(schema).empty_table()


def rank_batches(index, queries: BatchSource, *, k: int, query_column: str = "query",
                 query_id_column: str = "query_id", on_error: str = "raise", query_format: str = "auto",
                 batch_size: int = 4096, threads: int | None = None) -> Iterator[pa.RecordBatch]:
    """The top ``k`` tools of every query row, as rows ``(query_id, rank, tool_id,
    score, description, parameters, response, examples, penalty, matched[, error])``.

    Args:
        index: A :class:`~toolsift.ToolIndex` or the path of a saved one.
        queries: Queries, as ``pairs`` in :func:`score_batches`.
        k: Tools per query.
        query_column: Queries (raw text or structured query JSON).
        query_id_column: Ids carried to the output (default: row number if absent).
        on_error: ``"raise"`` or ``"column"``.
        query_format: ``"auto"``, ``"text"`` or ``"json"``.
        batch_size: Queries per batch.
        threads: Threads (default: the index's setting).
    """
    ranker = Ranker(load_index(index), k=k, query_column=query_column, query_id_column=query_id_column,
                    on_error=on_error, query_format=query_format, threads=threads)
    for batch in open_source(queries, batch_size=batch_size):
        yield ranker.rank_batch(batch)


def rank_table(index, queries: BatchSource, *, k: int, **options) -> pa.Table:
    """:func:`rank_batches` collected into one table."""
    batches = list(rank_batches(index, queries, k=k, **options))
    if not batches:
        raise BatchInputError("no input rows")
    return pa.Table.from_batches(batches)
