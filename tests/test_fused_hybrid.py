"""The fused hybrid engine call against the general search path (candidates -> pack ->
dense gathers and mix -> Numba MFTR kernel -> rank), which is its reference: the same
tools in the same order, the same scores (to 1e-6) and ``matched`` flags, on every query
of the five benchmark sets with the hybrid preset, raw and structured, one at a time
and as batches."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from toolsift import Query, ToolIndex
from toolsift.presets import preset_config
from toolsift.search import _general, fused_hybrid, is_raw, retrievers
from toolsift.search.needs import request_steps
from toolsift.search.retrievers import HybridRetriever

from .test_fused import MFTR, _mftr, _ultratool


def _same(index: ToolIndex, queries: list, k: int, *, via_search: int = 0) -> int:
    """Assert the fused hybrid call answers every query as the general path does, one
    query at a time and as one batch per kind; ``via_search``: also check that many raw
    one-step texts through ``ToolIndex.search``. Returns the number of hits compared."""
    st, cfg = index._state, index.config
    fr = retrievers(st, cfg)
    assert fused_hybrid.usable(st, fr, False)
    compared = 0
    parsed = [q if isinstance(q, Query) else Query.from_text(q) for q in queries]
    for structured in (False, True):
        batch = [q for q in parsed if (not is_raw(q)) == structured]
        if not batch:
            continue
        params = cfg.params_for(structured)
        want = _general(st, cfg, batch, k=k, explain=False, params=params)
        got_batch = fused_hybrid.run_hybrid(st, cfg, batch, fr, k=k, params=params)
        for q, w, gb in zip(batch, want, got_batch):
            (g,) = fused_hybrid.run_hybrid(st, cfg, [q], fr, k=k, params=params)
            for got in (g, gb):
                assert [h.id for h in got] == [h.id for h in w], q.text
                assert [h.matched for h in got] == [h.matched for h in w]
                assert [h.rank for h in got] == [h.rank for h in w]
                assert [h.score for h in got] == pytest.approx([h.score for h in w], abs=1e-6, rel=0)
            compared += len(w)
    searched = 0
    for q in parsed:
        if searched >= via_search:
            break
        if is_raw(q) and request_steps(st, cfg, [q]) == [None]:
            (w,) = _general(st, cfg, [q], k=k, explain=False, params=cfg.params)
            got = index.search(q.text, k=k)
            assert [(h.id, h.matched) for h in got] == [(h.id, h.matched) for h in w], q.text
            assert [h.score for h in got] == pytest.approx([h.score for h in w], abs=1e-6, rel=0)
            searched += 1
    assert searched == via_search
    return compared


# Whole-dataset comparisons embed thousands of tools: APIBank (101 tools) in the fast
# tier, the larger sets in the slow tier (CI runs both).
@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n == "apibank" else pytest.mark.slow) for n in MFTR])
def test_fused_hybrid_equals_general_path_mftr(name):
    tools, raw, structured = _mftr(name)
    index = ToolIndex.build(tools, config=preset_config("hybrid"))
    fr = retrievers(index._state, index.config)
    # Both dense layouts: one row per tool (description) and rows grouped by tool (examples).
    assert isinstance(fr["description"], HybridRetriever) and fr["description"].dense.tool_ptr is None
    assert isinstance(fr["examples"], HybridRetriever) and fr["examples"].dense.tool_ptr is not None
    assert _same(index, raw + structured, k=10, via_search=50) > 0


@pytest.mark.slow
def test_fused_hybrid_equals_general_path_ultratool():
    tools, raw, structured = _ultratool()
    index = ToolIndex.build(tools, config=preset_config("hybrid"))
    assert _same(index, raw + structured, k=10, via_search=50) > 0


def test_fused_hybrid_settings():
    """A small candidate cut (more top-up), deep k, another hybrid weight and dense
    candidate rule, and a need field left BM25."""
    tools, raw, structured = _mftr("apibank")
    base = preset_config("hybrid")
    index = ToolIndex.build(tools, config=base)
    retr = dict(base.retrievers)
    retr["response"] = "bm25"
    for cfg in (replace(base, candidates=3), replace(base, hybrid_weight=0.25, dense_candidates=5,
                                                     dense_candidates_from=("response",)),
                replace(base, retrievers=tuple(retr.items()))):
        # Search-time settings on the same built index (the state has every dense field).
        ix = SimpleNamespace(_state=index._state, config=cfg)
        for k in (1, 25, len(tools) + 3):
            assert _same(ix, raw[:40] + structured[:40], k=k) > 0


def test_fused_hybrid_not_used_for_explain_or_dense(apibank_tools):
    base = preset_config("hybrid")
    st = ToolIndex.build(apibank_tools, config=base)._state
    fr = retrievers(st, base)
    assert fused_hybrid.usable(st, fr, False)
    assert not fused_hybrid.usable(st, fr, True)
    assert not fused_hybrid.usable(st, fr, "why")
    retr = dict(base.retrievers)
    retr["description"] = "dense"
    dense = replace(base, retrievers=tuple(retr.items()))
    assert not fused_hybrid.usable(st, retrievers(st, dense), False)
    assert not fused_hybrid.usable(ToolIndex.build(apibank_tools, preset="bm25")._state, fr, False)
