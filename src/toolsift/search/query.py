"""What a caller may pass as a query, and turning it into a :class:`Query`.

The structured query's wire form and JSON Schema live in :mod:`toolsift.query_schema`
(re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import QueryError
from ..lazy import lazy_exports
from ..schema import Query

if TYPE_CHECKING:
    from ..no_match import NO_MATCH_HINT, NO_MATCH_NOTE
    from ..query_schema import StructuredQuery, ToolNeedSpec, structured_query_schema

__all__ = ["NO_MATCH_HINT", "NO_MATCH_NOTE", "QueryLike", "StructuredQuery", "ToolNeedSpec", "as_query",
           "check_explain", "check_k", "is_raw", "structured_query_schema"]

# The wire form's re-exports load with their first use: its pydantic models cost more to
# define than a search of a loaded index.
__getattr__, __dir__ = lazy_exports(__name__, {
    "NO_MATCH_HINT": "..no_match", "NO_MATCH_NOTE": "..no_match",
    "StructuredQuery": "..query_schema", "ToolNeedSpec": "..query_schema",
    "structured_query_schema": "..query_schema",
}, globals())


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


def check_explain(explain: object) -> None:
    """Reject an ``explain`` that is neither a truth value nor ``"why"``: any other
    string (a typo of ``"why"``) would otherwise count as ``True``."""
    if isinstance(explain, str) and explain != "why":
        raise QueryError("explain", f"must be true, false or 'why', got {explain!r}")


def check_k(k: int) -> None:
    """Reject a result count that is not a positive integer."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise QueryError("k", f"must be an integer >= 1, got {k!r}")
