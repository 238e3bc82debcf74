"""The fused search path: one engine call per request when every field is BM25.

The C++ engine (``_core.FusedSearcher``, cpp/src/fused.cpp) does what
:func:`toolsift.search.run` does through candidates -> pack -> score -> rank: every
field's top-``candidates`` tools, their union topped up to ``k``, every field's scores of
them, the MFTR combination and the top ``k`` with the same tie rule, with the GIL
released. Python only analyses the texts (a raw query's words, or :func:`plan_queries`
for structured ones) and wraps the hits. The general path stays the reference:
``tests/test_fused.py`` compares the two on every query of the five benchmark sets.

Hybrid or dense fields keep the general path (:func:`usable` says when this one
applies); an explained search ranks here too and :mod:`.explain` explains its ``k`` hits,
except a raw text's reasons alone (:func:`why_text`: from the terms the engine returns).
"""

from __future__ import annotations

import numpy as np

from .. import _core
from ..config import IndexConfig, warn_untrained_penalty
from ..index.state import IndexState
from ..kernels.params import ScoringParams
from ..schema import Catalog, Query
from .hits import Hit, _plain_hit, reasons_of
from .plan import QueryPlan, plan_queries

__all__ = ["hit_args", "rank_fused", "run_fused", "search_text", "searcher", "teach", "term_ids", "usable", "why_text"]

#: The key of the fused searcher in ``IndexState.retrievers`` (it depends on no setting).
_KEY = ("fused-bm25",)
_TEXT_KEY = ("fused-text",)
_NEED_FIELDS = ("description", "response", "examples")
#: A plain hit's attributes (:func:`toolsift.search.hits._plain_hit`); the engine's
#: FusedText sets tool, score, rank and matched on a copy per hit.
_HIT_TEMPLATE = {"tool": None, "score": 0.0, "rank": 0, "matched": True, "fields": None, "penalty": None,
                 "parameters": None, "why": None, "tokens": None}


def usable(st: IndexState, config: IndexConfig, explain: bool | str) -> bool:
    """Whether a search of ``st`` with ``config`` takes the fused path unexplained: every
    field BM25 (and no dense field built, whose multi-step readings the general path
    handles) and no explanation asked for (``explain=False`` asks only about the fields:
    an explained search ranks here too, :mod:`.explain`)."""
    return not explain and not config.uses_dense and not st.dense


def searcher(st: IndexState) -> _core.FusedSearcher:
    """The engine's fused searcher of ``st``, made once per index state (it copies the
    tool table: parameters per tool, required flags, field presence)."""
    got = st.retrievers.get(_KEY)
    if got is None:
        got = st.retrievers[_KEY] = _core.FusedSearcher(
            [st.fields[f].core for f in _NEED_FIELDS], st.fields["parameters"].core, st.param_ptr,
            st.param_required.astype(np.uint8, copy=False), st.tool_bits.astype(np.uint8, copy=False))
    return got


def search_text(st: IndexState, config: IndexConfig, text: str, k: int) -> list[Hit] | None:
    """The hits of one raw-text query (already checked) in one engine call, or ``None``
    when the fused path does not apply (a field that is not BM25)."""
    got = _text_engine(st, config)
    if got is None:
        return None
    fused, tokenize, ids = got
    hits = fused.search_text(text, k)
    while type(hits) is tuple:
        teach(fused, hits, tokenize, ids)
        hits = fused.search_text(text, k)
    if hits is None:  # not ASCII: analysed here
        hits = fused.search(term_ids(text, tokenize, ids), k)
    return hits


def teach(engine, words, tokenize, ids) -> None:
    """Teaches ``engine`` (a ``FusedText`` or ``HybridText``) the words of a text it has not
    met: each word's term ids from this analyzer (``tokenize``) and vocabulary (``ids``), so
    its own analysis of raw text gives what the Python path's would (a stop word has no id,
    a stem one, a stem with its exact form two)."""
    for word in words:
        engine.learn(word, term_ids(word, tokenize, ids))


def term_ids(text: str, tokenize, ids) -> list[int]:
    """``text``'s BM25 term ids by this analyzer and vocabulary (-1: a term the index never
    saw), as the Python path's query plan has them."""
    return [ids(t, -1) for t in tokenize(text)]


def why_text(st: IndexState, config: IndexConfig, text: str, k: int) -> list[Hit] | None:
    """:func:`search_text`'s hits with their reasons (``explain="why"``), from the MFTR
    terms the engine returns for its ``k`` hits (:func:`.hits.reasons_of`), or ``None``
    when this path does not apply (a field that is not BM25, a text that is not ASCII)."""
    got = _text_engine(st, config)
    if got is None:
        return None
    fused, tokenize, ids = got
    found = fused.search_terms(text, k)
    while type(found) is list:
        teach(fused, found, tokenize, ids)
        found = fused.search_terms(text, k)
    if found is None:
        return None
    tool, score, matched, terms = found
    return reasons_of(st.catalog, tool, score, matched.tolist(), terms, config.params)


def _text_engine(st: IndexState, config: IndexConfig) -> tuple | None:
    """``(FusedText, tokenize, term id lookup)`` for ``st`` and ``config``, or ``None``
    when the fused path does not apply (a field that is not BM25)."""
    got = st.retrievers.get(_TEXT_KEY)
    if got is None or got[0] is not config:
        if not usable(st, config, False):
            return None
        got = _text_searcher(st, config)
    return got[1]


def _text_searcher(st: IndexState, config: IndexConfig) -> tuple:
    """``(config, (FusedText, tokenize, term id lookup))`` for raw-text searches of
    ``st`` with ``config`` (raw text is scored with ``config.params``), made once and kept
    with the state while the same configuration searches it."""
    text = _core.FusedText(searcher(st), _params_tuple(config.params), config.candidates, config.scale,
                           config.no_argument_params == "intent", *hit_args(st), config.analyzer.lowercase)
    got = st.retrievers[_TEXT_KEY] = (config, (text, config.analyzer.tokenize, st.vocab.lookup))
    return got


def hit_args(st: IndexState) -> tuple:
    """``(hit_type, tools, hit_template)``: how an engine object makes ``st``'s hits as
    :func:`~.hits._plain_hit` does (python/hit_maker.h)."""
    catalog = st.catalog
    # A plain catalogue's list indexes faster than its __getitem__; a stored one decodes
    # tools on access and is indexed as it is.
    tools = catalog._tools if type(catalog) is Catalog else catalog
    return Hit, tools, dict(_HIT_TEMPLATE)


def _params_tuple(params: ScoringParams) -> tuple:
    w = params.weights
    return (float(w[0]), float(w[1]), float(w[2]), float(w[3]), float(params.bias), float(params.alpha),
            float(params.tau), float(params.w_req), float(params.w_opt), float(params.param_max_share),
            bool(params.renormalize))


def run_fused(st: IndexState, config: IndexConfig, queries: list[Query], *, k: int,
              params: ScoringParams) -> list[list[Hit]]:
    """The top ``k`` hits of each query (all of one kind, scored with ``params``), as
    :func:`toolsift.search.run` returns them without explanation."""
    _, (ptr, tool, score, found) = rank_fused(st, config, queries, k=k, params=params)
    catalog = st.catalog
    ptr, tool, score, found = ptr.tolist(), tool.tolist(), score.tolist(), found.tolist()
    return [[_plain_hit(catalog[tool[i]], score[i], i - ptr[q] + 1, found[i], None) for i in range(ptr[q], ptr[q + 1])]
            for q in range(len(queries))]


def rank_fused(st: IndexState, config: IndexConfig, queries: list[Query], *, k: int,
               params: ScoringParams) -> tuple[QueryPlan, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The queries' plan and the engine's top ``k`` of each: CSR ``(ptr, tool, score,
    found)`` in rank order (what :func:`run_fused` wraps, and :mod:`.explain` explains)."""
    fs = searcher(st)
    plan = plan_queries(st, config, queries)
    if plan.penalize.any():
        warn_untrained_penalty(params)
    need = [plan.fields[f].terms for f in _NEED_FIELDS]
    par = plan.fields["parameters"]
    ranked = fs.search(
        [t.terms for t in need], [t.offsets for t in need], plan.need_ptr, par.terms.terms, par.terms.offsets,
        plan.arg_ptr, plan.penalize, _params_tuple(params), config.candidates, k, config.scale, config.threads)
    return plan, ranked
