"""The checks every text of a tool or a query passes (length, type, UTF-8), in a module
below :mod:`toolsift.schema` and :mod:`toolsift.query_types`, which both use them."""

from __future__ import annotations

import math
from typing import Any

from .errors import QueryError, SchemaError
from .jsoncheck import no_surrogates

__all__ = ["MAX_TEXT_CHARS", "check_finite", "check_text", "query_text"]

#: Longest text accepted in any single field. Longer text is almost always a mistake
#: (a whole spec pasted into a description) and would dominate BM25 length statistics.
MAX_TEXT_CHARS = 100_000



def check_text(value: Any, where: str, *, allow_empty: bool = True,
          error: type[SchemaError] = SchemaError) -> str:
    """``value`` as a field text (``None`` is empty): a string within
    :data:`MAX_TEXT_CHARS`, encodable as UTF-8, not blank unless ``allow_empty``.

    Raises:
        SchemaError: (or ``error``) naming ``where``.
    """
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise error(where, f"expected a string, got {type(value).__name__}")
    if len(value) > MAX_TEXT_CHARS:
        raise error(
            where, f"text is {len(value):,} characters long; the limit is {MAX_TEXT_CHARS:,}"
        )
    if not allow_empty and not value.strip():
        raise error(where, "must be a non-empty string")
    no_surrogates(value, where, error)
    return value


def query_text(text: Any) -> str:
    """``text``, checked as a raw-text query (:meth:`Query.from_text`): a string, not
    blank, within the length limit, encodable as UTF-8.

    Raises:
        QueryError: Naming ``query``.
    """
    if not isinstance(text, str):
        raise QueryError("query", f"expected a string, got {type(text).__name__}")
    if not text.strip():
        raise QueryError("query", "the query is empty")
    return check_text(text, "query", error=QueryError)


def check_finite(value: float, where: str) -> float:
    """Return ``value`` as float, raising :class:`SchemaError` if it is not finite."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise SchemaError(where, f"expected a number, got {value!r}") from None
    if not math.isfinite(f):
        raise SchemaError(where, f"expected a finite number, got {value!r}")
    return f
