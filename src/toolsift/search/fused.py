"""The fused search path: one engine call per request when every field is BM25.

The C++ engine (``_core.FusedSearcher``, cpp/src/fused.cpp) does what
:func:`toolsift.search.run` does through candidates -> pack -> score -> rank: every
field's top-``candidates`` tools, their union topped up to ``k``, every field's scores of
them, the MFTR combination and the top ``k`` with the same tie rule, with the GIL
released. Python only analyses the texts (a raw query's words, or :func:`plan_queries`
for structured ones) and wraps the hits. The general path stays the reference:
``tests/test_fused.py`` compares the two on every query of the five benchmark sets.

Explanations, hybrid or dense fields and the tool-set and budget features keep the
general path (:func:`usable` says when this one applies).
"""

from __future__ import annotations

import numpy as np

from .. import _core
from ..config import IndexConfig, warn_untrained_penalty
from ..index.state import IndexState
from ..kernels.params import ScoringParams
from ..schema import Query
from .hits import Hit, _plain_hit
from .plan import plan_queries
from .query import is_raw

__all__ = ["run_fused", "searcher", "usable"]

#: The key of the fused searcher in ``IndexState.retrievers`` (it depends on no setting).
_KEY = ("fused-bm25",)
_NEED_FIELDS = ("description", "response", "examples")


def usable(config: IndexConfig, explain: bool | str) -> bool:
    """Whether a search with ``config`` takes the fused path: every field BM25 and no
    explanation asked for."""
    return not explain and not config.uses_dense


def searcher(st: IndexState) -> _core.FusedSearcher:
    """The engine's fused searcher of ``st``, made once per index state (it copies the
    tool table: parameters per tool, required flags, field presence)."""
    got = st.retrievers.get(_KEY)
    if got is None:
        got = st.retrievers[_KEY] = _core.FusedSearcher(
            [st.fields[f].core for f in _NEED_FIELDS], st.fields["parameters"].core, st.param_ptr,
            st.param_required.astype(np.uint8, copy=False), st.tool_bits.astype(np.uint8, copy=False))
    return got


def _params_tuple(params: ScoringParams) -> tuple:
    w = params.weights
    return (float(w[0]), float(w[1]), float(w[2]), float(w[3]), float(params.bias), float(params.alpha),
            float(params.tau), float(params.w_req), float(params.w_opt), float(params.param_max_share),
            bool(params.renormalize))


def run_fused(st: IndexState, config: IndexConfig, queries: list[Query], *, k: int,
              params: ScoringParams) -> list[list[Hit]]:
    """The top ``k`` hits of each query (all of one kind, scored with ``params``), as
    :func:`toolsift.search.run` returns them without explanation."""
    fs = searcher(st)
    catalog = st.catalog
    if len(queries) == 1 and is_raw(queries[0]):
        # The usual single search: one text, the same terms in every field.
        terms = st.vocab.encode(config.analyzer.tokenize(queries[0].text))
        tools, scores, matched = fs.search_text(terms, config.no_argument_params == "intent", _params_tuple(params),
                                                config.candidates, k, config.scale)
        return [[_plain_hit(catalog[t], s, r, m, None) for r, (t, s, m) in enumerate(zip(tools, scores, matched), 1)]]
    plan = plan_queries(st, config, queries)
    if plan.penalize.any():
        warn_untrained_penalty(params)
    need = [plan.fields[f].terms for f in _NEED_FIELDS]
    par = plan.fields["parameters"]
    ptr, tool, score, found = fs.search(
        [t.terms for t in need], [t.offsets for t in need], plan.need_ptr, par.terms.terms, par.terms.offsets,
        plan.arg_ptr, plan.penalize, _params_tuple(params), config.candidates, k, config.scale, config.threads)
    ptr, tool, score, found = ptr.tolist(), tool.tolist(), score.tolist(), found.tolist()
    return [[_plain_hit(catalog[tool[i]], score[i], i - ptr[q] + 1, found[i], None) for i in range(ptr[q], ptr[q + 1])]
            for q in range(len(queries))]

