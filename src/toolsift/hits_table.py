"""The ranked table ``toolsift search`` and ``toolsift demo`` print: per hit its score, the
per-field breakdown (``-`` for a term whose weight is 0 for the query) and the reason.
Its own module so that the CLI and the demo both use it without importing each other."""

from __future__ import annotations

import json
from typing import Any, TextIO

from .schema import FIELDS

__all__ = ["print_hits", "query_params"]


def query_params(index, query: Any):
    """The scoring parameters ``index`` gives ``query`` (raw text and structured differ)."""
    from .search.query import as_query, is_raw

    return index.config.params_for(not is_raw(as_query(query, "query")))


def print_hits(query: Any, hits, ms: float, out: TextIO, params, *, dense: bool = False) -> None:
    """The ranked table. A term whose weight is 0 for this query moves no score: its
    column shows ``-``, not a similarity the score does not use. ``dense``: the index has
    dense fields (the no-match hint then does not suggest them)."""
    label = query if isinstance(query, str) else json.dumps(query)[:100] + "..."
    print(f"\nquery: {label}   ({ms:.2f} ms)", file=out)
    if not any(h.matched for h in hits):
        from .no_match import NO_MATCH_HINT, NO_MATCH_HINT_DENSE

        print(f"  {NO_MATCH_HINT_DENSE if dense else NO_MATCH_HINT}", file=out)
        return
    weighted = [w != 0 for w in params.weights] + [params.w_req != 0 or params.w_opt != 0]
    name_w = max(12, max(len(h.name) for h in hits))
    print(f"  {'#':>2}  {'tool':<{name_w}}  {'score':>7}  {'desc':>5} {'param':>5} {'resp':>5} {'exmp':>5} {'pen':>5}  why",
          file=out)
    for h in hits:
        f = h.fields or {}
        values = [*(f.get(name, 0) for name in FIELDS), h.penalty or 0]
        cells = " ".join(f"{v:>5.2f}" if on else f"{'-':>5}" for v, on in zip(values, weighted))
        print(f"  {h.rank:>2}  {h.name:<{name_w}}  {h.score:>7.4f}  {cells}  {h.why}", file=out)
