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

from ._fused_cases import MFTR, assert_fused_equals_general, assert_same_hits
from ._fused_cases import mftr as _mftr
from ._fused_cases import ultratool as _ultratool


def _same(index: ToolIndex, queries: list, k: int, *, via_search: int = 0) -> int:
    """Assert the fused hybrid call answers every query as the general path does, one
    query at a time and as one batch per kind; ``via_search``: also check that many raw
    one-step texts through ``ToolIndex.search``. Returns the number of hits compared."""
    st, cfg = index._state, index.config
    fr = retrievers(st, cfg)
    assert fused_hybrid.usable(st, fr, False)
    pairs = assert_fused_equals_general(st, cfg, queries, k,
                                        lambda batch, params: fused_hybrid.run_hybrid(st, cfg, batch, fr, k=k,
                                                                                      params=params))
    parsed = [q for q, _ in pairs]
    searched = 0
    for q in parsed:
        if searched >= via_search:
            break
        if is_raw(q) and request_steps(st, cfg, [q]) == [None]:
            (w,) = _general(st, cfg, [q], k=k, explain=False, params=cfg.params)
            assert_same_hits(index.search(q.text, k=k), w, q.text)
            searched += 1
    assert searched == via_search
    return sum(len(w) for _, w in pairs)


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


def test_fused_hybrid_not_used_for_explain_or_dense(demo_index, demo_bm25_index):
    # Which path serves a request depends on the index's fields and the request, not on
    # the catalogue's size: the session's demo indexes (hybrid default, bm25) serve.
    base = preset_config("hybrid")
    assert demo_index.config.retrievers == base.retrievers
    st = demo_index._state
    fr = retrievers(st, base)
    assert fused_hybrid.usable(st, fr, False)
    assert not fused_hybrid.usable(st, fr, True)
    assert not fused_hybrid.usable(st, fr, "why")
    retr = dict(base.retrievers)
    retr["description"] = "dense"
    dense = replace(base, retrievers=tuple(retr.items()))
    assert not fused_hybrid.usable(st, retrievers(st, dense), False)
    assert not fused_hybrid.usable(demo_bm25_index._state, fr, False)


def test_engine_evidence_outputs_equal_the_candidates_they_describe():
    """The engine's per-hit evidence, checked against the general path's pieces: ``lexical``
    is membership in the BM25 candidates, ``cos[:, f]`` is field f's cosine of the hit
    (max over the query's texts) where f's dense half added the hit, else NaN."""
    import numpy as np

    from toolsift.search.candidates import lexical_parts, member
    from toolsift.search.plan import plan_queries
    from toolsift.search.retrievers import merge_csr

    tools, raw, structured = _mftr("apibank")
    index = ToolIndex.build(tools, config=preset_config("hybrid"))
    st, cfg = index._state, index.config
    fr = retrievers(st, cfg)
    for batch in ([Query.from_text(t) for t in raw[:60]], list(structured[:60])):
        plan = plan_queries(st, cfg, batch)
        n, k = cfg.candidates, 10
        extra = fused_hybrid._dense_candidates(plan, fr, n, k)
        need = [plan.fields[f].terms for f in fused_hybrid._NEED_FIELDS]
        par = plan.fields["parameters"]
        ptr, tool, _, found, lexical, cos = fused_hybrid.searcher(st).search_hybrid(
            [t.terms for t in need], [t.offsets for t in need], plan.need_ptr, par.terms.terms, par.terms.offsets,
            plan.arg_ptr, plan.penalize, fused_hybrid._params_tuple(cfg.params), n, k, cfg.scale, 1,
            [fused_hybrid._dense_spec(plan, f, fr[f]) for f in fused_hybrid._NEED_FIELDS], extra)
        assert cos.shape == (tool.size, 3) and lexical.shape == found.shape == tool.shape
        assert np.array_equal(lexical, member(ptr, tool, *merge_csr(lexical_parts(plan, fr, n))))
        assert sum(e is not None for e in extra) >= 1 and np.isnan(cos).any() and not np.isnan(cos).all()
        for j, f in enumerate(fused_hybrid._NEED_FIELDS):
            added = np.zeros(tool.size, bool) if extra[j] is None else member(ptr, tool, *extra[j])
            assert np.array_equal(~np.isnan(cos[:, j]), added), f
            if not added.any():
                continue
            ft = plan.fields[f]
            sims = fr[f].dense.gather(ft, ptr, tool, docs=False)  # text-major: each text, its query's hits
            want = np.full(tool.size, -np.inf, np.float32)
            for i, q in enumerate(ft.owner.tolist()):
                lo = int(np.diff(ptr)[ft.owner[:i]].sum())
                want[ptr[q]:ptr[q + 1]] = np.maximum(want[ptr[q]:ptr[q + 1]], sims[lo:lo + ptr[q + 1] - ptr[q]])
            assert np.array_equal(cos[added, j], want[added]), f


def test_row_ptr_is_checked_once_and_searches_as_the_array():
    """A dense half's tool -> rows pointer as ``_core.RowPtr`` (copied and checked when
    made, then taken per search without a copy or a pass over it) gives the hits the
    plain array gives; a bad pointer is refused when made, one that does not fit the
    field when searched."""
    import numpy as np

    from toolsift import _core, demo_catalog_path, load_catalog
    from toolsift.search.plan import plan_queries

    with pytest.raises(ValueError, match="decreases"):
        _core.RowPtr(np.array([0, 2, 1], np.int64))
    with pytest.raises(ValueError, match="from 0"):
        _core.RowPtr(np.array([1, 2], np.int64))
    with pytest.raises(ValueError, match="from 0"):
        _core.RowPtr(np.zeros(0, np.int64))
    src = np.array([0, 1, 1, 3], np.int64)
    rp = _core.RowPtr(src)
    view = np.asarray(rp)
    src[1] = 2  # a copy: the caller's array may change afterwards
    assert view.tolist() == [0, 1, 1, 3] and not view.flags.writeable and len(rp) == 4

    # The demo catalogue's examples are rows grouped by tool (three a tool).
    index = ToolIndex.build(load_catalog(demo_catalog_path()), config=preset_config("hybrid"))
    st, cfg = index._state, index.config
    fr = retrievers(st, cfg)
    grouped = [f for f in fused_hybrid._NEED_FIELDS if fr[f].dense.tool_ptr is not None and not fr[f].dense_empty]
    assert grouped and all(isinstance(fr[f].dense.tool_rows, _core.RowPtr) for f in grouped)
    texts = ["email the quarterly report to my manager", "book a meeting with the design team",
             "what is the weather in Paris tomorrow", "convert 20 dollars to euros", "zzzz qqqq"]
    plan = plan_queries(st, cfg, [Query.from_text(t) for t in texts])
    n, k = cfg.candidates, 10
    need = [plan.fields[f].terms for f in fused_hybrid._NEED_FIELDS]
    par = plan.fields["parameters"]

    def call(spec_of):
        return fused_hybrid.searcher(st).search_hybrid(
            [t.terms for t in need], [t.offsets for t in need], plan.need_ptr, par.terms.terms, par.terms.offsets,
            plan.arg_ptr, plan.penalize, fused_hybrid._params_tuple(cfg.params), n, k, cfg.scale, 1,
            [spec_of(f) for f in fused_hybrid._NEED_FIELDS], fused_hybrid._dense_candidates(plan, fr, n, k))

    def with_ptr(f, ptr):
        spec = fused_hybrid._dense_spec(plan, f, fr[f])
        return spec if f not in grouped else spec[:2] + (ptr(fr[f].dense),) + spec[3:]

    got = call(lambda f: with_ptr(f, lambda d: d.tool_rows))
    want = call(lambda f: with_ptr(f, lambda d: np.array(d.tool_ptr)))  # a writable array: copied, checked per call
    for g, w in zip(got, want):
        assert np.array_equal(g, w, equal_nan=g.dtype.kind == "f")
    short = _core.RowPtr(np.asarray(fr[grouped[0]].dense.tool_ptr)[:-1])
    with pytest.raises(ValueError, match="n_tools \\+ 1"):
        call(lambda f: with_ptr(f, lambda d: short) if f == grouped[0] else with_ptr(f, lambda d: d.tool_rows))
