"""The fused engine call against the general search path (candidates -> pack -> Numba
MFTR kernel -> rank), which is its reference: the same tools in the same order, the same
scores (to 1e-6) and ``matched`` flags, on every query of the five benchmark sets, raw
and structured, one at a time and as batches."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from toolsift import IndexConfig, Query, ToolIndex
from toolsift.analyze import Analyzer
from toolsift.kernels.params import ScoringParams
from toolsift.search import _general, fused, is_raw
from toolsift.search.plan import plan_queries

from ._fused_cases import MFTR, assert_fused_equals_general, assert_same_hits
from ._fused_cases import mftr as _mftr
from ._fused_cases import ultratool as _ultratool

def _same(index: ToolIndex, queries: list, k: int) -> int:
    """Assert the fused path answers every query as the general path does, one query at a
    time and as one batch per kind, and ``ToolIndex.search(text)`` (the engine's own word
    split and word memo) each raw one; returns the number of hits compared."""
    st, cfg = index._state, index.config
    assert fused.usable(st, cfg, False)
    pairs = assert_fused_equals_general(st, cfg, queries, k,
                                        lambda batch, params: fused.run_fused(st, cfg, batch, k=k, params=params))
    for q, w in pairs:
        if is_raw(q):
            assert_same_hits(index.search(q.text, k=k), w, q.text)
    return sum(len(w) for _, w in pairs)


@pytest.mark.parametrize("name", MFTR)
def test_fused_equals_general_path_mftr(name):
    tools, raw, structured = _mftr(name)
    index = ToolIndex.build(tools, preset="bm25")  # the fused path serves BM25 indexes
    assert _same(index, raw + structured, k=10) > 0


@pytest.mark.slow
def test_fused_equals_general_path_ultratool():
    tools, raw, structured = _ultratool()
    index = ToolIndex.build(tools, preset="bm25")
    assert _same(index, raw + structured, k=10) > 0


def test_fused_equals_general_path_ultratool_longest_plans():
    """The fast tier's share of the whole-UltraTool check above (slow: 2,000 queries): on
    the whole catalogue, the 50 questions with the most plan steps (up to 30 needs; the
    MFTR rewrites above have at most 9), structured and raw."""
    tools, _, structured = _ultratool()
    longest = sorted(structured, key=lambda q: -len(q.needs))[:50]
    assert len(longest[0].needs) > 9
    index = ToolIndex.build(tools, preset="bm25")
    assert _same(index, [q.text for q in longest] + longest, k=10) > 0


@pytest.mark.parametrize("scale", ["bounded", "linear", "raw"])
def test_fused_equals_general_path_settings(scale):
    """Other scales, a small candidate cut (more top-up), deep k, renormalised weights,
    the penalty with arguments, and no intent in the parameters field."""
    tools, raw, structured = _mftr("apibank")
    params = ScoringParams(weights=(0.5, 0.2, 0.1, 0.2), bias=0.05, w_req=0.2, w_opt=0.05, param_max_share=0.3,
                           renormalize=True)
    for cfg in (IndexConfig(scale=scale, candidates=3), IndexConfig(scale=scale, params=params,
                                                                    structured_params=params),
                IndexConfig(scale=scale, no_argument_params="zero", candidates=7)):
        index = ToolIndex.build(tools, config=cfg)
        for k in (1, 25, len(tools) + 3):
            assert _same(index, raw[:40] + structured[:40], k=k) > 0


def test_fused_sum_rows_equal_postings_path():
    """Small fields sum each text's postings into one dense row; large ones (over 2**17
    documents) take the index's top-n and gather instead. Forced here on a small
    catalogue: both give the same hits."""
    tools, raw, structured = _mftr("toolink")
    for cfg in (IndexConfig(), IndexConfig(candidates=5, scale="linear")):
        index = ToolIndex.build(tools, config=cfg)
        st = index._state
        plan = plan_queries(st, cfg, [Query.from_text(t) for t in raw[:100]] + structured[:100])
        need = [plan.fields[f].terms for f in ("description", "response", "examples")]
        par = plan.fields["parameters"]
        args = ([t.terms for t in need], [t.offsets for t in need], plan.need_ptr, par.terms.terms, par.terms.offsets,
                plan.arg_ptr, plan.penalize, fused._params_tuple(cfg.structured_scoring), cfg.candidates, 10, cfg.scale, 1)
        rows = fused.searcher(st).search(*args)
        postings = fused.searcher(st).search(*args, sum_docs=0)
        for a, b in zip(rows, postings):
            assert np.array_equal(a, b)


def test_fused_is_what_search_returns(apibank_tools):
    """``ToolIndex.search`` takes the fused path for a BM25 index without explanation,
    and the general one with it: the hits agree."""
    index = ToolIndex.build(apibank_tools, preset="bm25")
    for text in ("send an email to my boss", "weather tomorrow in Paris", "zzyzx"):
        plain = index.search(text, k=5)
        explained = index.search(text, k=5, explain=True)
        assert [h.id for h in plain] == [h.id for h in explained]
        assert [h.score for h in plain] == pytest.approx([h.score for h in explained], abs=1e-6, rel=0)
        assert all(h.fields is None for h in plain)


@pytest.mark.parametrize("analyzer", [Analyzer(), Analyzer(stopwords=None, lowercase=False),
                                      Analyzer(stemmer="english", exact_forms=True)], ids=repr)
def test_fused_word_analysis_equals_analyzer(apibank_tools, analyzer):
    """The engine splits ASCII requests itself and maps each word to the terms the Python
    analyzer gives it (taught once per word); other text is analysed in Python. Every
    request below answers as the general path answers it."""
    index = ToolIndex.build(apibank_tools, config=IndexConfig(analyzer=analyzer))
    texts = ["Send_Email to BOB@example.com, twice!", "weather in Paris (tomorrow)", "x y z", "running runs RAN",
             "café crème in Zürich", "meeting: book 3 rooms; cancel the 4th", "e-mail\tme\x1cnow"]
    for text in texts * 2:  # the second time every word is known
        got = index.search(text, k=7)
        (want,) = _general(index._state, index.config, [Query.from_text(text)], k=7, explain=False,
                           params=index.config.params)
        assert [h.id for h in got] == [h.id for h in want], text
        assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-6, rel=0)


def test_fused_not_used_for_dense_or_explain(apibank_tools):
    st = ToolIndex.build(apibank_tools, preset="bm25")._state
    assert not fused.usable(st, IndexConfig(), True)
    assert not fused.usable(st, IndexConfig(), "why")
    assert fused.usable(st, IndexConfig(), False)
    hybrid = replace(IndexConfig(), retrievers=(("description", "hybrid"), ("parameters", "bm25"),
                                                ("response", "bm25"), ("examples", "bm25")))
    assert not fused.usable(st, hybrid, False)


def test_fused_concurrent_searches_agree():
    """Threads searching one index at once (the engine runs without the GIL, sharing the
    searcher's scratch pool and word memo) get what one thread gets."""
    import threading

    tools, raw, structured = _mftr("apibank")
    index = ToolIndex.build(tools, preset="bm25")
    want = {t: [(h.id, h.score) for h in index.search(t, k=10)] for t in raw}
    want_s = [[(h.id, h.score) for h in index.search(q, k=10)] for q in structured[:30]]
    index = ToolIndex.build(tools, preset="bm25")  # a fresh one: the threads also teach it its words
    errors: list[str] = []

    def work(seed: int) -> None:
        texts = raw[seed::4] + raw
        for t in texts:
            if [(h.id, h.score) for h in index.search(t, k=10)] != want[t]:
                errors.append(t)
        for q, w in zip(structured[:30], want_s):
            if [(h.id, h.score) for h in index.search(q, k=10)] != w:
                errors.append(q.text)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not any(th.is_alive() for th in threads)
    assert errors == []
