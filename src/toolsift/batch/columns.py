"""Input and output columns of batch scoring, and the errors about them.

Output columns (all ``float32``; null for a row that could not be scored):

==============  ==============================================================
``score``       the MFTR score, exactly what ``ToolIndex.score_pairs`` returns
``description``  S_description: max over the query's tool needs
``parameters``  S_param: per-parameter best argument match, pooled
``response``    S_response: max over the query's tool needs
``examples``    S_examples: max over the query's tool needs
``penalty``     P: the missing-parameter penalty subtracted from the score
``error``       (``on_error="column"`` only) why the row was not scored, else null
==============  ==============================================================

The field scores are the kernel's own breakdown (``toolsift.kernels.BREAKDOWN_COLUMNS``),
so without weight renormalisation ``score == Σ w_f · field_f + bias − penalty``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from ..errors import ToolsiftError

__all__ = ["BatchInputError", "BatchRowError", "ERROR_COLUMN", "RANK_COLUMNS", "SCORE_COLUMNS", "check_string_column",
           "column_index"]

#: Score columns appended to every output batch, in order.
SCORE_COLUMNS: tuple[str, ...] = ("score", "description", "parameters", "response", "examples", "penalty")
#: Name of the per-row error column (``on_error="column"``).
ERROR_COLUMN = "error"
#: Columns of a top-k result: query id, 1-based rank, tool id, then :data:`SCORE_COLUMNS`
#: and ``matched`` (whether some field matched the query, see ``Hit.matched``).
RANK_COLUMNS: tuple[str, ...] = ("query_id", "rank", "tool_id", *SCORE_COLUMNS, "matched")


class BatchInputError(ToolsiftError, ValueError):
    """The input table cannot be scored at all: a missing column, a column of the wrong
    type, an output column name already taken, or a bad option."""


class BatchRowError(ToolsiftError, ValueError):
    """One row cannot be scored (``on_error="raise"``).

    Attributes:
        row: 0-based position of the row in the whole input stream.
        column: The column at fault.
        reason: What is wrong with it.
    """

    def __init__(self, row: int, column: str, reason: str) -> None:
        self.row, self.column, self.reason = row, column, reason
        super().__init__(f"row {row}, column {column!r}: {reason}")


def column_index(schema: pa.Schema, name: str, role: str) -> int:
    """Position of column ``name`` in ``schema``.

    Raises:
        BatchInputError: There is no such column (the message lists the columns there are).
    """
    i = schema.get_field_index(name)
    if i < 0:
        have = ", ".join(repr(n) for n in schema.names) or "none"
        opt = f"{role.replace(' ', '_')}_column"
        raise BatchInputError(f"missing {role} column {name!r} (columns: {have}); name another with "
                              f"{opt}= (--{opt.replace('_', '-')} on the command line)")
    return i


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def check_string_column(schema: pa.Schema, name: str, what: str) -> None:
    """Reject a column that does not hold strings (plain or dictionary-encoded)."""
    t = schema.field(name).type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if not (_is_string(t) or pa.types.is_null(t)):
        raise BatchInputError(f"column {name!r} must hold strings ({what}), got {schema.field(name).type}")


def check_output_names(schema: pa.Schema, keep: Sequence[str], added: Sequence[str]) -> None:
    """Reject kept input columns whose names the output adds."""
    clash = [n for n in keep if n in added]
    if clash:
        raise BatchInputError(f"input column(s) {', '.join(map(repr, clash))} would clash with the output's "
                              f"score columns; drop or rename them, or pass keep=[...] without them")
    missing = [n for n in keep if schema.get_field_index(n) < 0]
    if missing:
        raise BatchInputError(f"keep: no column(s) {', '.join(map(repr, missing))} in the input "
                              f"(columns: {', '.join(map(repr, schema.names))})")
