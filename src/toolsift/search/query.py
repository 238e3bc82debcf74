"""What a caller may pass as a query, and turning it into a :class:`Query`.

The structured query's wire form (``{"tool_needs": [...], "extracted_arguments": {...}}``)
is defined once, by :class:`StructuredQuery`; the JSON Schema ``find_tools`` advertises
is generated from it (:func:`structured_query_schema`).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, Field

from ..errors import QueryError
from ..schema import Query

__all__ = ["NO_MATCH_HINT", "NO_MATCH_NOTE", "QueryLike", "StructuredQuery", "ToolNeedSpec", "as_query",
           "check_k", "is_raw", "structured_query_schema"]


class ToolNeedSpec(BaseModel):
    """One tool the request needs, described from three angles."""

    user_intent: str = Field("", description="What the user wants done.")
    tool_description: str = Field("", description="What a fitting tool's description would say.")
    expected_response: str = Field("", description="What a fitting tool would return.")


class StructuredQuery(BaseModel):
    """Structured form: the tools you need and the argument roles you already know."""

    tool_needs: Annotated[list[ToolNeedSpec], Field(min_length=1)]
    extracted_arguments: dict[str, str] = Field(
        default_factory=dict, description="Argument roles found in the request: {name: what it is}.")


def _inline(schema: Any, defs: Mapping[str, Any]) -> Any:
    """``schema`` with ``$ref``s to ``defs`` inlined and pydantic's titles dropped: tool
    hosts handle self-contained schemas best."""
    if isinstance(schema, list):
        return [_inline(s, defs) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return _inline(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    out = {}
    for key, value in schema.items():
        if key in ("title", "$defs"):
            continue
        if key == "properties":  # keys here are property names, not keywords
            out[key] = {name: _inline(sub, defs) for name, sub in value.items()}
        else:
            out[key] = _inline(value, defs)
    return out


@functools.cache
def _schema() -> dict[str, Any]:
    raw = StructuredQuery.model_json_schema()
    return _inline(raw, raw.get("$defs", {}))


def structured_query_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`StructuredQuery` (self-contained, a fresh copy)."""
    return copy.deepcopy(_schema())

#: Said when no tool shares a word with a query (every hit has ``matched=False``; the
#: library reports it through that attribute rather than a warning per query).
NO_MATCH_HINT = ("no tool matches any word of this query: the BM25 retriever matches words, not meanings. "
                 "A dense or hybrid retriever matches by meaning: build the index with "
                 "IndexConfig(retrievers={f: \"hybrid\" for f in FIELDS}) (pip install \"toolsift[dense]\").")

#: The same, as the note ``find_tools`` returns to a model when nothing matched.
NO_MATCH_NOTE = ("No tool matched any word of the query. Rephrase it with the words a tool's description "
                 "would use (e.g. 'send email' rather than 'let my boss know'), or drop tag filters. "
                 "(Operators: a dense or hybrid retriever matches by meaning.)")

#: Raw text, a :class:`Query`, or its dict form (``{"tool_needs": [...], "extracted_arguments": {...}}``).
QueryLike = str | Query | Mapping[str, Any]


def as_query(q: Any, where: str) -> Query:
    """Parse one query; errors name ``where`` (e.g. ``queries[3]``)."""
    try:
        if isinstance(q, Query):
            return q
        if isinstance(q, str):
            return Query.from_text(q)
        if isinstance(q, Mapping):
            return Query.from_dict(q, where=where)
    except QueryError as exc:
        if exc.where.startswith(where):
            raise
        raise QueryError(where, str(exc)) from None
    raise QueryError(where, f"expected text, a Query or a dict, got {type(q).__name__}")


def is_raw(q: Query) -> bool:
    """Whether ``q`` came from plain text (one need, all three texts the text)."""
    return bool(q.text) and len(q.needs) == 1 and \
        q.needs[0].user_intent == q.needs[0].tool_description == q.needs[0].expected_response == q.text


def check_k(k: int) -> None:
    """Reject a result count that is not a positive integer."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise QueryError("k", f"must be an integer >= 1, got {k!r}")
