"""Caps on a structured query's structure, enforced by the library and the gateway.

A query's text is capped by length (the gateway's ``max_query_chars``), but a structured
query's cost also grows with its structure: every tool need is scored against every
tool (MFTR takes the max over needs), every argument against every parameter. Without a
cap, a 5 MB query with 200,000 ``tool_needs`` was accepted. The caps are far above what
a request needs (the LLM rewrite emits 1-5 needs and a few arguments):

* :data:`MAX_NEEDS` tool needs;
* :data:`MAX_ARGUMENTS` extracted arguments;
* :data:`MAX_DEPTH` levels of nesting of the query object (a query object, its
  ``tool_needs`` list, a need object, its texts: 3; anything deeper is malformed anyway,
  and is refused before it is walked).

Going over one is a :class:`~toolsift.errors.QueryError` that names the cap.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import QueryError

__all__ = ["MAX_ARGUMENTS", "MAX_DEPTH", "MAX_NEEDS", "check_counts", "check_depth", "check_structure"]

#: Most tool needs in one structured query.
MAX_NEEDS = 64
#: Most extracted arguments in one structured query.
MAX_ARGUMENTS = 256
#: Deepest nesting of a structured query object (the object itself is level 1).
MAX_DEPTH = 4


def check_counts(needs: int, arguments: int, where: str = "query") -> None:
    """Raise :class:`QueryError` if there are more needs or arguments than the caps allow."""
    if needs > MAX_NEEDS:
        raise QueryError(f"{where}.tool_needs", f"{needs} tool needs; at most {MAX_NEEDS} (MAX_NEEDS)")
    if arguments > MAX_ARGUMENTS:
        raise QueryError(f"{where}.extracted_arguments",
                         f"{arguments} arguments; at most {MAX_ARGUMENTS} (MAX_ARGUMENTS)")


def check_depth(data: Any, where: str = "query") -> None:
    """Raise :class:`QueryError` if ``data`` nests lists/objects deeper than :data:`MAX_DEPTH`.

    Iterative and stops at the first level too deep, so a hostile value is not walked
    (and cannot exhaust the stack).
    """
    level = [data]
    for depth in range(1, MAX_DEPTH + 2):
        inner: list[Any] = []
        for value in level:
            if isinstance(value, Mapping):
                inner.extend(value.values())
            elif isinstance(value, (list, tuple)):
                inner.extend(value)
        if not inner:
            return
        if depth == MAX_DEPTH and any(isinstance(v, (Mapping, list, tuple)) for v in inner):
            raise QueryError(where, f"nested more than {MAX_DEPTH} levels deep; at most {MAX_DEPTH} (MAX_DEPTH)")
        level = inner


def check_structure(data: Mapping[str, Any], needs: Any, where: str = "query") -> None:
    """The caps on a query object (``Query.from_dict`` input, the gateway's structured
    query) before any part of it is walked: counts first, then nesting."""
    args = data.get("extracted_arguments", data.get("arguments"))
    check_counts(len(needs) if isinstance(needs, (list, tuple)) else 0,
                 len(args) if isinstance(args, Mapping) else 0, where)
    check_depth(data, where)
