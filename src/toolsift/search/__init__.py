"""The search path, in the order a query walks it.

``plan`` (analyse and embed the query's texts) -> ``candidates`` (each field's top-N
tools from the engine, their union, then every field's scores of exactly those tools,
packed as one CSR structure) -> ``score`` (the MFTR kernel) -> ``hits`` (rank, explain).
:func:`run` strings them together; :class:`toolsift.ToolIndex` calls it. BM25 and hybrid
need fields take one engine call instead (:mod:`.fused`, :mod:`.fused_hybrid`), and an
explained search explains their ``k`` hits (:mod:`.explain`).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ..config import IndexConfig, warn_untrained_penalty
from ..index.state import IndexState
from ..kernels.launch import using_threads
from ..schema import FIELDS, Query, query_text
from .candidates import Candidates, find_candidates, pack
from . import fused, fused_hybrid
from .explain import explain_hits, explain_ranked
from .hybrid_text import text_searcher
from .hits import Hit, rank
from .plan import QueryPlan, plan_queries
from .query import QueryLike, as_query, check_explain, check_k, is_raw
from .evidence import null_floor, saved_floors
from .retrievers import FieldRetriever, dense_half, retriever_for
from .score import score

__all__ = ["Candidates", "Hit", "all_field_scores", "QueryLike", "QueryPlan", "as_query", "check_explain", "check_k", "is_raw", "retrievers",
           "run", "score_tools", "search_text"]


def __getattr__(name: str):
    # Exhaustive field scores (evaluation, training) load with their first use.
    if name == "all_field_scores":
        from .exhaustive import all_field_scores

        return all_field_scores
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def retrievers(st: IndexState, config: IndexConfig) -> dict[str, FieldRetriever]:
    """The retriever of every field of ``st``, made once per state and retriever settings
    (a dense retriever's tool -> rows map costs a pass over every document)."""
    # config.retrievers is the (field, kind) tuple itself: no per-search dict to build.
    key = (config.scale, config.threads, config.hybrid_weight, config.ivf_nprobe, config.dense_candidates,
           config.dense_candidates_from, config.retrievers)
    got = st.retrievers.get(key)
    if got is None:
        # Concurrent first searches may both build it: same value, last one kept.
        got = {f: retriever_for(f, st.fields[f], st.dense.get(f), config) for f in FIELDS}
        saved = saved_floors(st, config)
        for f, r in got.items():
            half = dense_half(r)
            if half is not None:
                # What a dense candidate's cosine must beat to count as matched (.evidence):
                # the one the index was saved with, else made when a search first needs it.
                if f in saved:
                    half.null_floor = saved[f]
                else:
                    half.floor_source = partial(null_floor, half, st, config)
        st.retrievers[key] = got
    return got


def search_text(st: IndexState, config: IndexConfig, text: str, k: int) -> list[Hit]:
    """``run(st, config, [Query.from_text(text)], k=k, explain=False)[0]``: the hits of
    one raw-text query. On BM25 fields, and for a request on a hybrid index (with or
    without steps), one engine call with no :class:`Query` made; a request that splits
    into steps is split once, here.

    Raises:
        QueryError: ``text`` is not a valid query (:func:`~toolsift.schema.query_text`).
    """
    text = query_text(text)
    hits = fused.search_text(st, config, text, k)
    if hits is not None:
        return hits
    steps = None
    if st.dense:
        from .needs import readings_of, text_steps

        steps = text_steps(st, config, text)
        search = text_searcher(st, config, retrievers(st, config))
        if search is not None:
            # A request with steps in one engine call too (.hybrid_text, TextSearch.steps).
            got = search(text, k) if steps is None else search.steps(readings_of(text, steps), k)
            if got is not None:
                return got
    return _run(st, config, [Query.from_text(text)], k=k, explain=False, params=config.params, steps=[steps])[0]


def run(st: IndexState, config: IndexConfig, queries: list[Query], *, k: int,
        explain: bool | str) -> list[list[Hit]]:
    """Search: the top ``k`` hits of each query, each scored with its own parameters
    (:meth:`IndexConfig.params_for`: raw text and structured queries differ).
    ``explain="why"`` fills only each hit's ``why`` (see :func:`~.hits.rank`)."""
    steps = None
    if len(queries) == 1 and explain == "why" and is_raw(queries[0]):
        # The gateway's find_tools asks for reasons: the engine returns its k hits' MFTR
        # terms, so the reasons need no second packing (.hits.reasons_of).
        hits = _why_text(st, config, queries[0], k)
        if hits is not None:
            return [hits]
    if len(queries) == 1 and not explain and is_raw(queries[0]):
        # The usual call: one raw-text query on BM25 fields, one engine call.
        hits = fused.search_text(st, config, queries[0].text, k)
        if hits is not None:
            return [hits]
        # On a hybrid index, a request in one engine call too (.hybrid_text), with or
        # without steps; the split is kept for _run when the engine does not take it.
        if st.dense:
            from .needs import readings_of, request_steps

            steps = request_steps(st, config, queries)
            search = text_searcher(st, config, retrievers(st, config))
            if search is not None:
                text = queries[0].text
                hits = search(text, k) if steps[0] is None else search.steps(readings_of(text, steps[0]), k)
                if hits is not None:
                    return [hits]
    structured = [not is_raw(q) for q in queries]
    # One kind of query (a single search always is) resolves only its own parameters
    # (structured_scoring compares the params with the shipped ones).
    if not any(structured):
        return _run(st, config, queries, k=k, explain=explain, params=config.params, steps=steps)
    raw_p, st_p = config.params, config.structured_scoring
    if all(structured) or raw_p == st_p:
        return _run(st, config, queries, k=k, explain=explain, params=st_p)
    # A mixed batch: each kind as one batch with its parameters, results back in order.
    out: list[list[Hit]] = [[] for _ in queries]
    for kind, params in ((False, raw_p), (True, st_p)):
        idx = [i for i, s in enumerate(structured) if s == kind]
        for i, hits in zip(idx, _run(st, config, [queries[i] for i in idx], k=k, explain=explain, params=params)):
            out[i] = hits
    return out


def _why_text(st: IndexState, config: IndexConfig, query: Query, k: int) -> list[Hit] | None:
    """One raw query's hits with their reasons from one engine call (BM25 fields, or a
    request on a hybrid index, with or without steps), or ``None`` when the engine does
    not take it."""
    hits = fused.why_text(st, config, query.text, k)
    if hits is not None or not st.dense:
        return hits
    from .needs import readings_of, text_steps

    search = text_searcher(st, config, retrievers(st, config))
    if search is None:
        return None
    steps = text_steps(st, config, query.text)
    return search.why(query.text, k) if steps is None else search.steps_why(readings_of(query.text, steps), k)


def _run(st: IndexState, config: IndexConfig, queries: list[Query], *, k: int, explain: bool | str,
         params, steps: list[list[str] | None] | None = None) -> list[list[Hit]]:
    if fused.usable(st, config, False):
        # Every field BM25: one engine call (the same hits; tests/test_fused.py), and with
        # an explanation the k hits explained without the Numba kernel (tests/test_explain.py).
        if not explain:
            return fused.run_fused(st, config, queries, k=k, params=params)
        plan, ranked = fused.rank_fused(st, config, queries, k=k, params=params)
        return explain_ranked(st, plan, retrievers(st, config), params, *ranked, why_only=explain == "why")
    # Multi-step requests (.needs: the step splitter's regular expressions are compiled
    # at import) load with the first search off the fused BM25 path.
    from .needs import request_steps, run_steps, shares_bm25

    if steps is None:  # (run() may have split the request already)
        steps = request_steps(st, config, queries)
    if any(s is not None for s in steps):
        # Raw requests that split into steps search their dense halves per step (.needs);
        # the others take the general path unchanged. Results come back in order.
        split = {i: s for i, s in enumerate(steps) if s is not None}
        multi = list(split)
        single = [i for i, s in enumerate(steps) if s is None]
        out: list[list[Hit]] = [[] for _ in queries]
        fr = retrievers(st, config)
        # BM25 packed once per request when every reading shares it, else the first implementation.
        if shares_bm25(fr):
            by_steps = run_steps
        else:
            from .needs_reference import run_steps_reference as by_steps
        with using_threads(config.threads):
            got = by_steps(st, config, [queries[i] for i in multi], list(split.values()), fr, k=k,
                           explain=explain, params=params)
        for i, hits in zip(multi, got):
            out[i] = hits
        if single:
            for i, hits in zip(single, _one_step(st, config, [queries[i] for i in single], k=k, explain=explain,
                                                 params=params)):
                out[i] = hits
        return out
    return _one_step(st, config, queries, k=k, explain=explain, params=params)


def _one_step(st: IndexState, config: IndexConfig, queries: list[Query], *, k: int, explain: bool | str,
              params) -> list[list[Hit]]:
    """Requests searched as one step: hybrid need fields in one engine call (the same
    hits; tests/test_fused_hybrid.py; an explanation is then computed for the k hits,
    .explain), anything else by :func:`_general`."""
    fr = retrievers(st, config)
    if fused_hybrid.usable(st, fr, False):
        with using_threads(config.threads):
            if explain and len(queries) == 1 and params is config.params and is_raw(queries[0]):
                # An explained raw request (the gateway's find_tools asks for "why"): its
                # hits from the one-call engine path, then the k hits explained.
                search = text_searcher(st, config, fr)
                got = None if search is None else search(queries[0].text, k)
                if got is not None:
                    return explain_hits(st, plan_queries(st, config, queries), fr, params, [got],
                                        why_only=explain == "why")
            hits = fused_hybrid.run_hybrid(st, config, queries, fr, k=k, params=params)
            if not explain:
                return hits
            return explain_hits(st, plan_queries(st, config, queries), fr, params, hits, why_only=explain == "why")
    return _general(st, config, queries, k=k, explain=explain, params=params)


def _general(st: IndexState, config: IndexConfig, queries: list[Query], *, k: int, explain: bool | str,
             params) -> list[list[Hit]]:
    """:func:`_run` through the packed candidates and the Numba MFTR kernel: every
    retriever the engine does not take (and their explanations), and the reference the
    fused paths and :mod:`.explain` are tested against."""
    with using_threads(config.threads):
        plan = plan_queries(st, config, queries)
        if plan.penalize.any():  # field_scores() does not warn: it applies no params
            warn_untrained_penalty(params)
        fr = retrievers(st, config)
        ptr, tool, matched = find_candidates(st, plan, fr, n=config.candidates, k=k)
        cands = pack(st, plan, fr, ptr, tool)
        scores, terms = score(st, cands, params, breakdown=bool(explain))
        return rank(st, plan, cands, scores, terms, matched, k, params, why_only=explain == "why")


def score_tools(st: IndexState, config: IndexConfig, query: Query, tools: np.ndarray) -> np.ndarray:
    """MFTR scores of one query against the given catalogue positions, in that order
    (duplicates allowed; no candidate cut-off)."""
    params = config.params_for(not is_raw(query))
    with using_threads(config.threads):
        plan = plan_queries(st, config, [query])
        if plan.penalize.any():
            warn_untrained_penalty(params)
        uniq, inverse = np.unique(tools, return_inverse=True)
        ptr = np.array([0, uniq.size], dtype=np.int64)
        cands = pack(st, plan, retrievers(st, config), ptr, uniq.astype(np.int64))
        scores, _ = score(st, cands, params)
        return scores[inverse]
