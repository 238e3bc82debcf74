"""One query over the pooled catalogue: shared by :mod:`.pooled`, which loads them, and
:mod:`.stress`, which joins them into multi-step requests (neither imports the other)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PooledQuery"]


@dataclass(frozen=True, slots=True)
class PooledQuery:
    """One query over the pooled catalogue.

    Attributes:
        id: Query id (the set's own id for ``pooled``; ``stress_q<n>`` for ``stress``).
        text: The raw request.
        labels: Relevant tool ids.
        source: The shared set the query (or every part of a request) comes from.
        parts: For a stress request, the ids of the queries it joins; else ``()``.
        template: For a stress request, the name of its joining template; else ``""``.
    """

    id: str
    text: str
    labels: tuple[str, ...]
    source: str
    parts: tuple[str, ...] = ()
    template: str = ""
