"""Fit ranked hits into a token budget.

Rule: walk the ranking best first; take a tool if its schema (in the requested format,
counted by :func:`toolsift.tokens.schema_tokens`) fits in what is left of the budget,
otherwise skip it and go on; stop at ``k`` tools or ``max(4 k, 50)`` places down the
ranking (:func:`depth`). Skipping rather than stopping at the first misfit means one
oversized schema at rank 2 does not leave the rest of the budget empty, while everything
taken is still in rank order. A tool larger than the whole budget is skipped, never
truncated: a cut schema is a broken one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from ..adapters.writers import check_format, to_format
from ..errors import QueryError
from ..tokens import DEFAULT_ENCODING, schema_tokens
from .hits import Hit

__all__ = ["check_budget", "check_format", "depth", "fit_budget", "search_within_budget"]

_MIN_DEPTH = 50


def check_budget(token_budget: object) -> int:
    """``token_budget`` if it is an integer >= 1.

    Raises:
        QueryError: Naming ``token_budget`` and the bad value (zero, negative, not an int).
    """
    if not isinstance(token_budget, int) or isinstance(token_budget, bool) or token_budget < 1:
        raise QueryError("token_budget", f"must be an integer >= 1 (tokens), got {token_budget!r}")
    return token_budget


def fit_budget(hits: Iterable[Hit], *, token_budget: int, k: int, format: str,
               encoding_name: str = DEFAULT_ENCODING) -> list[Hit]:
    """The hits, in order, whose schemas fit together in ``token_budget`` tokens.

    Args:
        hits: Ranked hits, best first.
        token_budget: Total tokens allowed for the schemas taken (>= 1).
        k: Most hits to take.
        format: Schema format counted (:data:`~toolsift.adapters.writers.WRITE_FORMATS`).
        encoding_name: Tokenizer encoding (:data:`toolsift.tokens.ENCODINGS`).

    Returns:
        Copies of the hits taken, ``rank`` renumbered 1.. and ``tokens`` set.

    Raises:
        QueryError: Bad ``token_budget``. FormatError: unknown ``format``.
        TokenizerUnavailable: The ``tokens`` extra is missing.
    """
    left = check_budget(token_budget)
    check_format(format)
    out: list[Hit] = []
    for hit in hits:
        if len(out) >= k:
            break
        n = schema_tokens(to_format(hit.tool, format), encoding_name=encoding_name)
        if n <= left:
            left -= n
            out.append(dataclasses.replace(hit, rank=len(out) + 1, tokens=n))
    return out


def depth(k: int, n_tools: int) -> int:
    """How far down the ranking a budgeted search looks: ``max(4 k, 50)`` tools.

    Tools ranked lower are rarely what the query needs, and counting the whole catalogue
    for a small budget would cost seconds on a few thousand tools.
    """
    return min(n_tools, max(4 * k, _MIN_DEPTH))


def search_within_budget(search: Callable[[int], list[Hit]], *, n_tools: int, k: int, token_budget: int,
                         format: str, encoding_name: str = DEFAULT_ENCODING) -> list[Hit]:
    """:func:`fit_budget` over a ranking fetched in growing prefixes.

    ``search(n)`` returns the top ``n`` hits. The first prefix is ``k`` long, which is
    all that is needed whenever the top ``k`` fit; when tools were skipped the prefix
    grows fourfold until ``k`` fit, the budget is spent or :func:`depth` tools were seen.
    """
    check_budget(token_budget)
    check_format(format)
    fetch, deepest = min(k, n_tools), depth(k, n_tools)
    while True:
        hits = search(fetch)
        taken = fit_budget(hits, token_budget=token_budget, k=k, format=format, encoding_name=encoding_name)
        spent = sum(h.tokens or 0 for h in taken)
        if len(taken) >= k or len(hits) < fetch or fetch >= deepest or spent >= token_budget:
            return taken
        fetch = min(deepest, fetch * 4)
