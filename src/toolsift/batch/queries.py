"""Distinct queries of a batch job: parsed and analysed once, however often they recur.

A pairs file names the same query in many scattered rows. :class:`QueryStore` gives
every distinct query string a slot the first time it is seen, parses it (raw text or
structured query JSON), plans it with the search path's own :func:`plan_queries` (one
call per batch for all new queries, so dense fields embed them in one encoder call) and
keeps the analysed texts in flat growable arrays. A batch then asks for the plan of the
slots it needs; :meth:`QueryStore.plan` slices it out of the arrays without
re-analysing anything.

Memory is bounded: past ``max_queries`` distinct queries the store starts afresh (the
caller is told, so it can drop what it keyed by slot).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from ..config import IndexConfig
from ..csr import ptr_from_counts, ranges
from ..errors import QueryError, ToolsiftError
from ..index.state import IndexState
from ..schema import FIELDS, Query
from ..search.plan import FieldTexts, QueryPlan, plan_queries
from ..search.query import as_query
from ..analyze import TermBatch

__all__ = ["QUERY_FORMATS", "QueryStore", "error_text", "parse_query", "query_json"]

#: How the query column is read: ``auto`` (a value starting with ``{`` is structured
#: query JSON, anything else raw text), ``text`` or ``json``.
QUERY_FORMATS = ("auto", "text", "json")


def query_json(query: Query) -> str:
    """The structured-query JSON of ``query`` (what :func:`parse_query` reads back)."""
    return json.dumps(query.to_dict(), ensure_ascii=False)


def error_text(exc: QueryError) -> str:
    """The message of a query error, without the ``query:`` prefix the column name
    already gives (nested locations such as ``query.tool_needs[0]`` are kept)."""
    text = str(exc)
    return text[len("query: "):] if exc.where == "query" and text.startswith("query: ") else text


def parse_query(value: str, query_format: str) -> Query:
    """One query cell as a :class:`Query`.

    Raises:
        QueryError: Malformed JSON, a JSON value that is not a structured query, or an
            empty query.
    """
    structured = query_format == "json" or (query_format == "auto" and value.lstrip().startswith("{"))
    if not structured:
        return as_query(value, "query")
    try:
        data = json.loads(value)
    except json.JSONDecodeError as exc:
        raise QueryError("query", f"malformed structured query JSON: {exc.msg} at character {exc.pos}") from None
    except RecursionError:
        raise QueryError("query", "structured query JSON is nested too deeply to read") from None
    if not isinstance(data, dict):
        raise QueryError("query", f"structured query JSON must be an object, got {type(data).__name__}")
    return as_query(data, "query")


class _Buffer:
    """A growable 1-D or 2-D array (capacity doubles, so appends are amortised O(1))."""

    def __init__(self, dtype, width: int | None = None) -> None:
        shape = (64,) if width is None else (64, width)
        self._a = np.empty(shape, dtype=dtype)
        self.n = 0

    def append(self, values: np.ndarray) -> None:
        need = self.n + len(values)
        if need > len(self._a):
            grown = np.empty((max(need, 2 * len(self._a)),) + self._a.shape[1:], self._a.dtype)
            grown[: self.n] = self._a[: self.n]
            self._a = grown
        self._a[self.n:need] = values
        self.n = need

    @property
    def view(self) -> np.ndarray:
        return self._a[: self.n]


class _FieldStore:
    """One field's texts of every stored query, CSR by slot."""

    def __init__(self, dense_dim: int | None) -> None:
        self.texts: list[str] = []
        self.text_ptr = _Buffer(np.int64)
        self.text_ptr.append(np.zeros(1, np.int64))
        self.term_start = _Buffer(np.int64)
        self.term_len = _Buffer(np.int64)
        self.terms = _Buffer(np.int32)
        self.vectors = _Buffer(np.float32, dense_dim) if dense_dim else None

    def add(self, ft: FieldTexts) -> None:
        base_text = len(self.texts)
        self.texts.extend(ft.texts)
        self.text_ptr.append(ft.ptr[1:] + base_text)
        offs = ft.terms.offsets
        self.term_start.append(offs[:-1] + self.terms.n)
        self.term_len.append(np.diff(offs))
        self.terms.append(ft.terms.terms)
        if self.vectors is not None:
            self.vectors.append(np.asarray(ft.vectors, dtype=np.float32))

    def select(self, slots: np.ndarray) -> FieldTexts:
        tp = self.text_ptr.view
        counts = tp[slots + 1] - tp[slots]
        tidx = ranges(tp[slots], counts)
        lens = self.term_len.view[tidx]
        terms = self.terms.view[ranges(self.term_start.view[tidx], lens)]
        vectors = self.vectors.view[tidx] if self.vectors is not None else None
        return FieldTexts([self.texts[i] for i in tidx], ptr_from_counts(counts),
                          TermBatch(np.ascontiguousarray(terms, dtype=np.int32), ptr_from_counts(lens)), vectors)


class QueryStore:
    """Slots for distinct query strings, with their parse errors and analysed texts.

    Args:
        st: The index state queries are planned against.
        config: The index configuration (analyzer, encoder, penalty options).
        query_format: See :data:`QUERY_FORMATS`.
        max_queries: Distinct queries kept before the store starts afresh.
    """

    def __init__(self, st: IndexState, config: IndexConfig, *, query_format: str = "auto",
                 max_queries: int = 20_000) -> None:
        if query_format not in QUERY_FORMATS:
            raise ToolsiftError(f"query_format must be one of {', '.join(QUERY_FORMATS)}, got {query_format!r}")
        self.st, self.config, self.query_format, self.max_queries = st, config, query_format, max_queries
        self.generation = 0
        self._reset()

    def _reset(self) -> None:
        self._slot: dict[str, int] = {}
        self.errors: list[str | None] = []
        self.queries: list[Query | None] = []
        self._planned = np.zeros(0, np.int64)  # slot -> position among planned queries, -1 if none
        self._plan_pos: list[int] = []
        self._arg_names: list[list[str | None]] = []
        self._penalize = _Buffer(np.uint8)
        self._fields: dict[str, _FieldStore] | None = None
        self.rows_seen = np.zeros(0, np.int64)
        self.generation += 1

    def __len__(self) -> int:
        return len(self.errors)

    def make_room(self, incoming: int) -> bool:
        """Start afresh if ``incoming`` more queries could exceed ``max_queries``;
        returns whether it did (slots from before are then invalid)."""
        if len(self) and len(self) + incoming > self.max_queries:
            self._reset()
            return True
        return False

    def slots(self, values: Sequence[str | None]) -> np.ndarray:
        """``int64[len(values)]``: the slot of each query string (``-1`` for ``None``),
        adding and parsing new ones (parse errors are kept in :attr:`errors`)."""
        out = np.empty(len(values), np.int64)
        new: list[int] = []
        for i, v in enumerate(values):
            if v is None:
                out[i] = -1
                continue
            s = self._slot.get(v)
            if s is None:
                s = self._slot[v] = len(self.errors)
                try:
                    self.queries.append(parse_query(v, self.query_format))
                    self.errors.append(None)
                except QueryError as exc:
                    self.queries.append(None)
                    self.errors.append(error_text(exc))
                new.append(s)
            out[i] = s
        if new:
            self.rows_seen = np.concatenate([self.rows_seen, np.zeros(len(new), np.int64)])
            self._planned = np.concatenate([self._planned, np.full(len(new), -1, np.int64)])
        return out

    def bad(self) -> np.ndarray:
        """``bool[len(self)]``: slots whose query did not parse."""
        return np.fromiter((e is not None for e in self.errors), dtype=bool, count=len(self.errors))

    def plan(self, slots: np.ndarray) -> QueryPlan:
        """The plan of ``slots`` (valid queries), in that order, analysing only those
        never planned before."""
        slots = np.asarray(slots, dtype=np.int64)
        todo = np.unique(slots[self._planned[slots] < 0])
        if todo.size:
            fresh = plan_queries(self.st, self.config, [self.queries[s] for s in todo])
            if self._fields is None:
                dims = {f: None if (v := fresh.fields[f].vectors) is None else v.shape[1] for f in FIELDS}
                self._fields = {f: _FieldStore(dims[f]) for f in FIELDS}
            for f in FIELDS:
                self._fields[f].add(fresh.fields[f])
            self._penalize.append(fresh.penalize)
            self._arg_names.extend(fresh.arg_names)
            start = len(self._plan_pos)
            self._plan_pos.extend(todo.tolist())
            self._planned[todo] = np.arange(start, start + todo.size)
        pos = self._planned[slots]
        if self._fields is None:  # nothing planned yet and nothing asked for
            return plan_queries(self.st, self.config, [])
        fields = {f: self._fields[f].select(pos) for f in FIELDS}
        return QueryPlan([self.queries[s] for s in slots], fields, [self._arg_names[p] for p in pos],
                         np.ascontiguousarray(self._penalize.view[pos]))
