"""Top-k over a table of queries: every query's ``k`` best tools as rows.

Each input row is one query; the output has ``min(k, tools)`` rows per query
(:data:`~toolsift.batch.columns.RANK_COLUMNS`), ranked by the search path itself
(candidate generation, the MFTR kernel, score descending then catalogue order), so the
rows equal ``ToolIndex.search(query, k=k, explain=True)``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa

from .. import search as _search
from ..errors import QueryError
from ..kernels.launch import using_threads
from ..search.query import check_k
from .columns import ERROR_COLUMN, SCORE_COLUMNS, BatchInputError, BatchRowError, check_string_column, column_index
from .queries import QUERY_FORMATS, error_text, parse_query
from .scorer import ON_ERROR

__all__ = ["Ranker"]

# Queries per search call: the search path's own batch size.
_CHUNK = 256


class Ranker:
    """Ranks record batches of queries against one index.

    Args:
        index: A :class:`~toolsift.ToolIndex`.
        k: Tools per query.
        query_column: Column of queries (raw text or structured query JSON).
        query_id_column: Column of query ids copied to the output; if the input has no
            such column, the 0-based row number (``int64``) is the id.
        on_error: ``raise`` or ``column`` (see :data:`~toolsift.batch.scorer.ON_ERROR`);
            with ``column`` a bad query gives one row with null rank, tool and scores.
        query_format: ``auto``, ``text`` or ``json``.
        threads: Threads (default: the index's setting).
    """

    def __init__(self, index, *, k: int, query_column: str = "query", query_id_column: str = "query_id",
                 on_error: str = "raise", query_format: str = "auto", threads: int | None = None) -> None:
        try:
            check_k(k)
        except QueryError as exc:
            raise BatchInputError(str(exc)) from None
        if on_error not in ON_ERROR:
            raise BatchInputError(f"on_error must be one of {', '.join(ON_ERROR)}, got {on_error!r}")
        if query_format not in QUERY_FORMATS:
            raise BatchInputError(f"query_format must be one of {', '.join(QUERY_FORMATS)}, got {query_format!r}")
        self.st = index._state
        self.config = index.config if threads is None else replace(index.config, threads=threads)
        self.k, self.query_column, self.id_column = k, query_column, query_id_column
        self.on_error, self.query_format = on_error, query_format
        self.rows_done = 0

    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        """The schema of :meth:`rank_batch`'s output for input ``schema``."""
        column_index(schema, self.query_column, "query")
        check_string_column(schema, self.query_column, "query text or structured query JSON")
        i = schema.get_field_index(self.id_column)
        id_type = schema.field(i).type if i >= 0 else pa.int64()
        if pa.types.is_dictionary(id_type):
            id_type = id_type.value_type
        fields = [pa.field("query_id", id_type), pa.field("rank", pa.int32()), pa.field("tool_id", pa.string())]
        fields += [pa.field(n, pa.float32()) for n in SCORE_COLUMNS] + [pa.field("matched", pa.bool_())]
        if self.on_error == "column":
            fields.append(pa.field(ERROR_COLUMN, pa.string()))
        return pa.schema(fields)

    def rank_batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The top-k rows of every query of ``batch``, query by query in input order."""
        schema = self.output_schema(batch.schema)
        n = batch.num_rows
        texts = batch.column(self.query_column).to_pylist()
        i = batch.schema.get_field_index(self.id_column)
        ids = batch.column(i).to_pylist() if i >= 0 else list(range(self.rows_done, self.rows_done + n))
        parsed, errors = [], {}
        for r, v in enumerate(texts):
            try:
                if v is None:
                    raise QueryError("query", "the query is null")
                parsed.append((r, parse_query(v, self.query_format)))
            except QueryError as exc:
                if self.on_error == "raise":
                    raise BatchRowError(self.rows_done + r, self.query_column, error_text(exc)) from None
                errors[r] = f"{self.query_column}: {error_text(exc)}"
        hits: dict[int, list] = {}
        with using_threads(self.config.threads):
            for a in range(0, len(parsed), _CHUNK):
                part = parsed[a:a + _CHUNK]
                got = _search.run(self.st, self.config, [q for _, q in part], k=self.k, explain=True)
                hits.update((r, h) for (r, _), h in zip(part, got))
        cols: dict[str, list] = {f.name: [] for f in schema}
        for r in range(n):
            if r in errors:
                for name in cols:
                    cols[name].append(None)
                cols["query_id"][-1] = ids[r]
                cols[ERROR_COLUMN][-1] = errors[r]
                continue
            for h in hits[r]:
                cols["query_id"].append(ids[r])
                cols["rank"].append(h.rank)
                cols["tool_id"].append(h.id)
                cols["score"].append(h.score)
                for f, v in h.fields.items():
                    cols[f].append(v)
                cols["penalty"].append(h.penalty)
                cols["matched"].append(h.matched)
                if ERROR_COLUMN in cols:
                    cols[ERROR_COLUMN].append(None)
        self.rows_done += n
        arrays = [pa.array(np.asarray(cols[f.name], dtype=np.float32) if f.type == pa.float32() and
                           not any(v is None for v in cols[f.name]) else cols[f.name], type=f.type)
                  for f in schema]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)
