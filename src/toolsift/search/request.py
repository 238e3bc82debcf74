"""A search request past the common call: a token budget, another schema format, a tool
set (``complete``), or a batch. :class:`toolsift.ToolIndex` checks the arguments and
hands the request here; everything below runs inside the search package, top-down:
:func:`toolsift.search.run` ranks, :mod:`.complete` turns a ranking into a tool set,
:mod:`.budget` fits schemas into tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..config import IndexConfig
from ..index.state import IndexState
from ..progress import progress_bar
from ..schema import Query
from . import run
from .hits import Hit

if TYPE_CHECKING:
    from ..index.graph import ToolGraph

__all__ = ["complete_ranking", "graph_of", "search_many", "search_one"]

#: Queries per engine call in a batch: big enough to amortise, small enough that the
#: packed candidates of one step stay small.
CHUNK = 256


def graph_of(st: IndexState, config: IndexConfig) -> ToolGraph:
    """The state's tool graph, built on first use for an index saved without one."""
    if st.graph is None:
        from ..index.graph import ToolGraph

        st.graph = ToolGraph.build(st.catalog, config.analyzer)
    return st.graph


def complete_ranking(st: IndexState, config: IndexConfig, q: Query, hits: list[Hit], k: int) -> list[Hit]:
    """``hits`` (a ranking, best first) completed into a tool set of at most ``k``
    (:func:`.complete.complete_hits` on the state's graph)."""
    from .complete import complete_hits  # the tool-set rules: loaded by the first tool set
    return complete_hits(hits, query=q, k=k, graph=graph_of(st, config), catalog=st.catalog,
                         analyzer=config.analyzer)


def search_one(st: IndexState, config: IndexConfig, q: Query, *, k: int, explain: bool | str,
               token_budget: int | None, format: str, complete: bool) -> list[Hit]:
    """One query with a budget, another format, or as a tool set (arguments checked)."""
    from .budget import check_format, fit_budget, search_within_budget

    check_format(format)  # a typo fails even without a budget, rather than being ignored
    if complete:
        from .complete import fetch_depth
        ranked = run(st, config, [q], k=fetch_depth(k, len(st.catalog)), explain=explain)[0]
        hits = complete_ranking(st, config, q, ranked, k)
        return hits if token_budget is None else fit_budget(hits, token_budget=token_budget, k=k, format=format)
    if token_budget is None:
        return run(st, config, [q], k=k, explain=explain)[0]
    return search_within_budget(lambda n: run(st, config, [q], k=n, explain=explain)[0],
                                n_tools=len(st.catalog), k=k, token_budget=token_budget, format=format)


def search_many(st: IndexState, config: IndexConfig, queries: Sequence[Query], *, k: int, explain: bool | str,
                token_budget: int | None, format: str, complete: bool, progress: bool) -> list[list[Hit]]:
    """Every query of a batch (arguments checked), as :func:`search_one` would answer it."""
    show = progress and len(queries) > CHUNK
    if token_budget is not None:
        # The budget walk asks for more hits until the schemas fill it: per query.
        return [search_one(st, config, q, k=k, explain=explain, token_budget=token_budget, format=format,
                           complete=complete)
                for q in progress_bar(queries, show, "search")]
    out: list[list[Hit]] = []
    chunks = range(0, len(queries), CHUNK)
    if complete:
        from .complete import fetch_depth
    n = fetch_depth(k, len(st.catalog)) if complete else k
    for start in progress_bar(chunks, show, "search", total=len(chunks)):
        part = list(queries[start:start + CHUNK])
        got = run(st, config, part, k=n, explain=explain)
        if complete:
            got = [complete_ranking(st, config, q, h, k) for q, h in zip(part, got)]
        out.extend(got)
    return out
