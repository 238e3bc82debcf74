"""Batch scoring of (query, tool) pairs and top-k ranking over Arrow data.

Score a table, a stream or a file of pairs against a saved index, batch by batch::

    from toolsift.batch import score_batches
    for out in score_batches("index/", "pairs.parquet", on_error="column"):
        ...  # pyarrow.RecordBatch: input columns + score, description, ..., penalty, error

Input columns: ``query`` (raw text, or structured query JSON
``{"tool_needs": [...], "extracted_arguments": {...}}``), ``tool_id``, and any others
(``query_id``, labels ...), which are carried through. Output columns are listed in
:mod:`toolsift.batch.columns`. Rows come out in input order, one per input row; a row
that cannot be scored raises :class:`BatchRowError` naming it (``on_error="raise"``) or
gets null scores and a message in the ``error`` column (``on_error="column"``): nothing
is dropped. :func:`rank_batches` is the top-k variant over a table of queries.
``toolsift.distributed`` runs the same scorer on Ray Data; ``toolsift score`` and
``toolsift rank`` are the command-line front ends. See docs/batch.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

# Names resolve on first use (PEP 562): the command line imports toolsift.batch.cli to
# register ``score`` and ``rank``, and the scorer pulls in pyarrow and the compiled kernels.
_EXPORTS = {
    "rank_batches": "api", "rank_table": "api", "score_batches": "api", "score_table": "api",
    "ERROR_COLUMN": "columns", "RANK_COLUMNS": "columns", "SCORE_COLUMNS": "columns",
    "BatchInputError": "columns", "BatchRowError": "columns",
    "ON_ERROR": "scorer", "PairScorer": "scorer",
}

__all__ = ["BatchInputError", "BatchRowError", "ERROR_COLUMN", "ON_ERROR", "PairScorer", "RANK_COLUMNS",
           "SCORE_COLUMNS", "rank_batches", "rank_table", "score_batches", "score_table"]

if TYPE_CHECKING:
    from .api import rank_batches, rank_table, score_batches, score_table
    from .columns import ERROR_COLUMN, RANK_COLUMNS, SCORE_COLUMNS, BatchInputError, BatchRowError
    from .scorer import ON_ERROR, PairScorer


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
