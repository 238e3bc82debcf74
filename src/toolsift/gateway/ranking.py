"""The gateway's searches: one search with its tag filter and routing (:func:`rank`), over
a wider pool fitted to a token budget (:func:`rank_within`), or completed into a tool set
(:func:`rank_complete`). :class:`~toolsift.gateway.core.Gateway` runs them off the event
loop or inline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import QueryError
from ..schema import Query
from ..search.budget import depth, fit_budget
from ..search.complete import fetch_depth
from ..tokens import TokenizerUnavailable
from .config import RoutingRule
from .errors import GatewayError
from .sessions import IndexState

if TYPE_CHECKING:  # importing ToolIndex loads the compiled core
    from ..toolindex import Hit

__all__ = ["rank", "rank_complete", "rank_within"]

# Filters and routing look past the first `limit` hits so they do not starve results.
_MIN_FETCH = 50


def rank_within(state: IndexState, routing: Sequence[RoutingRule], query: str | Query, text: str, limit: int,
                tags: tuple[str, ...], budget: int, fmt: str) -> list[Hit]:
    """:func:`rank` over a wider pool, then the best that fit ``budget`` tokens."""
    pool = rank(state, routing, query, text, depth(limit, len(state.index.catalog)), tags)
    try:
        return fit_budget(pool, token_budget=budget, k=limit, format=fmt)
    except TokenizerUnavailable as exc:
        raise GatewayError("bad_request", f"token_budget is not available on this gateway: {exc}") from None

def rank_complete(state: IndexState, routing: Sequence[RoutingRule], query: str | Query, text: str,
                  limit: int, tags: tuple[str, ...], budget: int | None, fmt: str) -> list[Hit]:
    """:func:`rank` over twice ``limit`` (tags and routing applied), completed into a
    tool set from that pool, then fitted to ``budget``."""
    index = state.index
    pool = rank(state, routing, query, text, fetch_depth(limit, len(index.catalog)), tags)
    hits = index.complete(query, pool, k=limit)
    if budget is None:
        return hits
    try:
        return fit_budget(hits, token_budget=budget, k=limit, format=fmt)
    except TokenizerUnavailable as exc:
        raise GatewayError("bad_request", f"token_budget is not available on this gateway: {exc}") from None

def rank(state: IndexState, routing: Sequence[RoutingRule], query: str | Query, text: str, limit: int,
         tags: tuple[str, ...]) -> list[Hit]:
    """Search, filter by tags, then move routed tools first (``routing``: the
    gateway's rules); runs in a worker thread or inline (``Gateway._off_loop``)."""
    rules = [r for r in routing if r.matches(text)]
    n_tools = len(state.index.catalog)
    fetch = limit if not (tags or rules) else min(n_tools, max(4 * limit, _MIN_FETCH))
    while True:
        try:
            # An answer carries only the reason of each hit, not the breakdown.
            hits = state.index.search(query, k=fetch, explain="why")
        except QueryError as exc:
            raise GatewayError("bad_request", f"malformed query: {exc}") from None
        # Tools no field matched only fill k for library callers; an agent is
        # better served by fewer schemas than by unrelated ones.
        kept = [h for h in hits if h.matched and all(t in h.tool.tags for t in tags)]
        # Stop once enough survive, or the index has no further candidates.
        if (len(kept) >= limit or fetch >= n_tools or len(hits) < fetch or not tags
                or not hits[-1].matched):
            break
        fetch = min(n_tools, fetch * 4)
    if rules:
        def group(hit: Hit) -> int:
            for i, rule in enumerate(rules):
                if any(t in hit.tool.tags for t in rule.tags):
                    return i
            return len(rules)

        kept.sort(key=group)  # stable: score order kept inside each group
    return kept[:limit]
