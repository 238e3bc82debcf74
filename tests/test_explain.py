"""Explained searches rank with the engine and explain its ``k`` hits with the plain-NumPy
MFTR formula (toolsift.search.explain). Their reference is the general path, whose
breakdown comes from the Numba kernel: the same tools, ranks, ``matched`` flags and
reasons, the same scores, field similarities, penalties and parameter matches (to 1e-6),
on every query of the benchmark sets, raw and structured, one at a time and as batches."""

from __future__ import annotations

import pytest

from toolsift import Query, ToolIndex
from toolsift.presets import preset_config
from toolsift.search import _general, fused, fused_hybrid, is_raw, retrievers, run
from toolsift.search.needs import request_steps

from ._fused_cases import MFTR, mftr as _mftr


def _assert_same_explanations(got, want, label) -> None:
    assert [h.id for h in got] == [h.id for h in want], label
    assert [(h.rank, h.matched, h.why) for h in got] == [(h.rank, h.matched, h.why) for h in want], label
    assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-6, rel=0)
    for g, w in zip(got, want):
        if w.fields is None:  # explain="why"
            assert g.fields is None and g.parameters is None and g.penalty is None
            continue
        assert list(g.fields) == list(w.fields)
        assert list(g.fields.values()) == pytest.approx(list(w.fields.values()), abs=1e-6, rel=0), label
        assert g.penalty == pytest.approx(w.penalty, abs=1e-6, rel=0)
        assert {p: a for p, (a, _) in g.parameters.items()} == {p: a for p, (a, _) in w.parameters.items()}
        assert [s for _, s in g.parameters.values()] == pytest.approx([s for _, s in w.parameters.values()],
                                                                      abs=1e-6, rel=0)


def _same(index, queries: list, k: int) -> int:
    """Assert that ``index.search`` / ``search_batch`` explain every query as the general
    path does, for ``explain=True`` and ``"why"``; returns the number of hits compared."""
    st, cfg = index._state, index.config
    parsed = [q if isinstance(q, Query) else Query.from_text(q) for q in queries]
    compared = 0
    for explain in (True, "why"):
        for structured in (False, True):
            # One-step requests only: a request split into steps keeps the general path.
            batch = [q for q in parsed if (not is_raw(q)) == structured and request_steps(st, cfg, [q]) == [None]]
            if not batch:
                continue
            want = _general(st, cfg, batch, k=k, explain=explain, params=cfg.params_for(structured))
            got_batch = index.search_batch(batch, k=k, explain=explain)
            for q, w, gb in zip(batch, want, got_batch):
                _assert_same_explanations(gb, w, q.text)
                _assert_same_explanations(index.search(q, k=k, explain=explain), w, q.text)
                compared += len(w)
    return compared


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n == "apibank" else pytest.mark.slow) for n in MFTR])
def test_explained_bm25_equals_general_path(name):
    tools, raw, structured = _mftr(name)
    index = ToolIndex.build(tools, preset="bm25")
    assert fused.usable(index._state, index.config, False)
    assert _same(index, raw + structured, k=10) > 0


def test_explained_bm25_deep_k_and_top_up(apibank_tools):
    """k past the catalogue (every tool, the tail filled in catalogue order and not
    matched) and a query no tool matches."""
    index = ToolIndex.build(apibank_tools, preset="bm25")
    queries = ["send an email to my boss", "zzyzx qqq", "weather tomorrow in Paris"]
    for k in (1, len(apibank_tools) + 3):
        assert _same(index, queries, k=k) > 0
    (hits,) = index.search_batch(["zzyzx qqq"], k=3, explain=True)
    assert not any(h.matched for h in hits) and all(h.why == "no field matches" for h in hits)


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n == "apibank" else pytest.mark.slow) for n in MFTR])
def test_explained_hybrid_equals_general_path(name):
    """Also holds the engine's reasons (explain="why" on a raw one-step request: the MFTR
    terms of its k hits from the engine call, hits.reasons_of) to the general path's."""
    tools, raw, structured = _mftr(name)
    index = ToolIndex.build(tools, config=preset_config("hybrid"))
    assert fused_hybrid.usable(index._state, retrievers(index._state, index.config), False)
    assert _same(index, raw + structured, k=10) > 0
    # A small candidate cut: more tools filled in, still explained alike.
    st, cfg = index._state, preset_config("hybrid", candidates=3)

    one_step = [q for q in map(Query.from_text, raw[:40]) if request_steps(st, cfg, [q]) == [None]]
    assert len(one_step) >= 10
    for q in one_step:
        (w,) = _general(st, cfg, [q], k=7, explain=True, params=cfg.params)
        (g,) = run(st, cfg, [q], k=7, explain=True)
        _assert_same_explanations(g, w, q.text)


def test_explained_search_does_not_score_with_the_kernel(apibank_tools, monkeypatch):
    """The explained BM25 and hybrid searches never call the Numba scorer."""
    import toolsift.search as search

    def no_kernel(*args, **kwargs):
        raise AssertionError("the Numba MFTR kernel was called")

    monkeypatch.setattr(search, "score", no_kernel)
    for preset in ("bm25", "hybrid"):
        index = ToolIndex.build(apibank_tools, preset=preset)
        hits = index.search("send an email to my boss", k=5, explain=True)
        assert hits[0].fields is not None and hits[0].why


@pytest.mark.parametrize("preset", ["bm25", "hybrid"])
def test_engine_terms_equal_the_reference_breakdown(apibank_tools, preset):
    """The MFTR terms the engine returns with its hits (FusedOptions::breakdown: the
    formula's float64 values before rounding) are the NumPy reference's breakdown of the
    same hits (explain=True packs them again and scores them with it), and the reasons
    made from them are the same."""
    from toolsift.schema import FIELDS
    from toolsift.search import _why_text

    index = ToolIndex.build(apibank_tools, preset=preset)
    st, cfg = index._state, index.config
    _, raw, _ = _mftr("apibank")
    compared = 0
    for text in raw[:60]:
        q = Query.from_text(text)
        if request_steps(st, cfg, [q]) != [None]:  # multi-step: tests/test_needs_engine.py
            continue
        got = _why_text(st, cfg, q, 10)
        full = index.search(q, k=10, explain=True)
        assert [(h.id, h.score, h.matched, h.why) for h in got] == [(h.id, h.score, h.matched, h.why) for h in full]
        engine = _engine_terms(st, cfg, text, preset)
        for row, h in zip(engine.tolist(), full):
            assert row[:4] == pytest.approx([h.fields[f] for f in FIELDS], abs=1e-12, rel=0), text
            assert row[4] == 0.0  # a raw query has no missing-parameter penalty
            compared += 1
    assert compared >= 300


def _engine_terms(st, cfg, text: str, preset: str):
    from toolsift.search import fused, retrievers
    from toolsift.search.hybrid_text import text_searcher

    if preset == "bm25":
        fused.search_text(st, cfg, text, 10)  # teaches the engine the text's words
        return fused._text_engine(st, cfg)[0].search_terms(text, 10)[3]
    search = text_searcher(st, cfg, retrievers(st, cfg))
    search(text, 10)
    return search.engine.search_text(text, 10, True)[5]
