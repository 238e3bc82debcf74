"""A multi-step raw request in one engine call (``_core.HybridText.search_steps``, reached
through toolsift.search.hybrid_text.TextSearch.steps) against the Python path it replaces
(toolsift.search.needs.run_steps, itself held to needs_reference by tests/test_needs.py):
the same tools, ranks, ``matched`` flags and the very same float32 scores, and with
``explain="why"`` the same reasons (TextSearch.steps_why: the engine's terms of the reading
each hit's score came from). Also the C++
combination over readings (``_core.combine_needs``) against its NumPy twin.

Fast tier: APIBank's 101 tools with stress requests joined from its own queries (the
stress generator, toolsift.evaluate.stress) and its own multi-step queries. Slow tier: the
committed stress set over the 6,417 pooled tools, and every multi-step query of the five
benchmark sets.
"""

from __future__ import annotations


import numpy as np
import pytest

from toolsift import Query, ToolIndex, _core
from toolsift.presets import preset_config
from toolsift.search import retrievers
from toolsift.search.hybrid_text import text_searcher
from toolsift.search.needs import readings_of, request_steps, run_steps
from toolsift.search.needs_reference import combine_needs_reference

from ._fused_cases import MFTR, hybrid_setting_variants
from ._fused_cases import mftr as _mftr
from ._fused_cases import ultratool as _ultratool


def _key(hits) -> list:
    return [(h.id, h.rank, h.matched, h.score) for h in hits]


def _compare(index, texts: list[str], k: int) -> tuple[int, int]:
    """Every multi-step raw text through the engine against run_steps; returns (texts the
    engine answered, texts it handed back to the Python path)."""
    st, cfg = index._state, index.config
    fr = retrievers(st, cfg)
    search = text_searcher(st, cfg, fr)
    assert search is not None
    taken = handed = 0
    for text in texts:
        q = Query.from_text(text)
        (steps,) = request_steps(st, cfg, [q])
        if steps is None:
            continue
        got = search.steps(readings_of(text, steps), k)
        if got is None:
            handed += 1
            continue
        (want,) = run_steps(st, cfg, [q], [steps], fr, k=k, explain=False, params=cfg.params)
        assert _key(got) == _key(want), text
        # With reasons: each hit's from the terms of the reading its score came from.
        got = search.steps_why(readings_of(text, steps), k)
        (want,) = run_steps(st, cfg, [q], [steps], fr, k=k, explain="why", params=cfg.params)
        assert [(*_key([h])[0], h.why) for h in got] == [(*_key([h])[0], h.why) for h in want], text
        taken += 1
    return taken, handed


def _joined(texts: list[str], labels: list[tuple[str, ...]], n: int, seed: int = 0) -> list[str]:
    """``n`` stress requests (3-4 queries for different tools, joined by the committed
    generator's templates) from one set's own queries."""
    from toolsift.evaluate.pooled import PooledQuery
    from toolsift.evaluate.stress import stress_requests

    pooled = [PooledQuery(str(i), t, lab, "set") for i, (t, lab) in enumerate(zip(texts, labels))]
    return [q.text for q in stress_requests(pooled, n=n, seed=seed)]


@pytest.fixture(scope="module")
def apibank():
    from toolsift.adapters.benchmark import load_queries

    from .conftest import dataset

    tools, raw, _ = _mftr("apibank")
    root = dataset("mftr-apibank") / "dataset" / "train_and_test" / "apibank"
    bqs = [q for k in range(5) for q in load_queries(root / f"fold_{k}" / "test_queries.json")]
    joined = _joined([q.text for q in bqs], [tuple(q.labels) for q in bqs], n=120)
    return ToolIndex.build(tools, config=preset_config("hybrid")), raw, joined


def test_engine_equals_run_steps_on_joined_requests(apibank):
    index, raw, joined = apibank
    taken, handed = _compare(index, joined + raw, k=10)
    assert taken >= 100 and taken > 0.9 * (taken + handed), (taken, handed)


def test_engine_settings(apibank):
    """A small candidate cut, k beyond the catalogue, another hybrid weight and dense
    candidate rule, a need field left BM25, no intent in the parameters field."""
    index, _, joined = apibank
    for ix in hybrid_setting_variants(index):
        for k in (1, 10, 500):
            taken, _ = _compare(ix, joined[:30], k=k)
            assert taken > 20, (ix.config, k)


def test_search_takes_the_engine_for_multi_step_requests(apibank, monkeypatch):
    index, _, joined = apibank
    st, cfg = index._state, index.config
    fr = retrievers(st, cfg)
    texts = joined[:25]
    want = []
    for t in texts:
        q = Query.from_text(t)
        want.append(run_steps(st, cfg, [q], request_steps(st, cfg, [q]), fr, k=10, explain=False,
                              params=cfg.params)[0])
    search = text_searcher(st, cfg, fr)
    calls: list = []
    monkeypatch.setattr(search, "engine", _Counting(search.engine, calls))
    for text, w in zip(texts, want):
        assert _key(index.search(text, k=10)) == _key(w), text
    assert len(calls) >= len(texts)


class _Counting:
    def __init__(self, engine, calls):
        self._engine, self._calls = engine, calls

    def steps_hits(self, readings, k):
        self._calls.append(readings)
        return self._engine.steps_hits(readings, k)

    def __getattr__(self, name):  # learn, set_floor: the engine's own
        return getattr(self._engine, name)


def test_a_step_outside_the_fast_path_is_analysed_in_python(apibank):
    index, _, _ = apibank
    st, cfg = index._state, index.config
    search = text_searcher(st, cfg, retrievers(st, cfg))
    text = "Check my bank balance, then réserver un vol pour Paris, and after that add a meeting to my calendar"
    q = Query.from_text(text)
    (steps,) = request_steps(st, cfg, [q])
    assert steps is not None and len(steps) >= 2
    readings = readings_of(text, steps)
    assert search.engine.search_steps(readings, 10) is None  # not the engine's analysers'
    (want,) = run_steps(st, cfg, [q], [steps], retrievers(st, cfg), k=10, explain=False, params=cfg.params)
    assert _key(search.steps(readings, 10)) == _key(want)  # analysed in Python, searched by the engine
    assert _key(index.search(text, k=10)) == _key(want)
    (why,) = run_steps(st, cfg, [q], [steps], retrievers(st, cfg), k=10, explain="why", params=cfg.params)
    assert [(h.id, h.why) for h in search.steps_why(readings, 10)] == [(h.id, h.why) for h in why]
    with pytest.raises(ValueError):
        search.engine.search_ids([], [], 10)
    assert search.engine.search_ids([], [[10 ** 9]], 10) is None  # a token outside the table
    with pytest.raises(ValueError):
        search.engine.search_steps([], 10)
    with pytest.raises(ValueError):
        search.engine.search_steps(["a", "b"], 0)


def _blocks():
    """Score blocks with what the combination must get right: ties within and across
    readings, equal shifted scores, signed zeros, -inf, one reading, one candidate."""
    rng = np.random.default_rng(0)
    yield np.array([[0.9, 0.5, 0.1, 0.3], [0.2, 0.4, 0.3, 0.1], [0.1, 0.1, 0.6, 0.2]], np.float32)
    yield np.array([[0.0, -0.0, 0.0], [-0.0, 0.0, 0.0]], np.float32)
    yield np.array([[1.0, 1.0, 1.0, 1.0, 1.0]], np.float32)
    yield np.array([[0.5], [0.25], [0.75]], np.float32)
    yield np.array([[-np.inf, -np.inf, 0.1], [0.2, -np.inf, -np.inf]], np.float32)
    yield np.array([[1e-45, 0.0, -1e-45, 0.0]], np.float32)
    for _ in range(300):
        n, m = int(rng.integers(1, 9)), int(rng.integers(1, 400))
        levels = int(rng.integers(1, 12))
        # Few distinct values: many ties; or continuous scores, sometimes negative.
        if rng.random() < 0.5:
            block = rng.integers(0, levels, (n, m)).astype(np.float32) / np.float32(levels)
        else:
            block = (rng.standard_normal((n, m)) * rng.choice([1e-3, 0.3, 30.0])).astype(np.float32)
        yield block


def test_combine_needs_equals_its_numpy_twin():
    for block in _blocks():
        got, chosen = _core.combine_needs(block)
        want, want_chosen = combine_needs_reference(block)
        assert got.dtype == np.float32 and chosen.dtype == np.int64
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=str(block))
        np.testing.assert_array_equal(chosen, want_chosen)


def test_combine_needs_top_equals_the_twin_ranked():
    """The top k of the combination (how search_steps ranks its hits: score descending,
    then the lower index), worked out from each reading's first k places only."""
    blocks = list(_blocks())
    # Scores so low that the cap reaches -inf: the whole order decides the ties there.
    low = np.finfo(np.float32).min
    blocks.append(np.array([[low, low, low, low, -np.inf], [low, -np.inf, low, low, low]], np.float32))
    for block in blocks:
        want, _ = combine_needs_reference(block)
        ranked = np.lexsort((np.arange(want.size), -want))
        for k in (1, 2, 3, 10, block.shape[1], block.shape[1] + 4):
            idx, score = _core.combine_needs_top(block, k)
            np.testing.assert_array_equal(idx, ranked[:k], err_msg=f"{block} {k}")
            np.testing.assert_array_equal(score.view(np.uint32), want[ranked[:k]].view(np.uint32))
    assert _core.combine_needs_top(np.ones((2, 3), np.float32), 0)[0].size == 0


def test_combine_needs_checks_its_input():
    with pytest.raises(ValueError):
        _core.combine_needs(np.zeros(3, np.float32))
    with pytest.raises(ValueError):
        _core.combine_needs(np.zeros((0, 3), np.float32))
    got, chosen = _core.combine_needs(np.zeros((2, 0), np.float32))
    assert got.size == 0 and chosen.size == 0


@pytest.mark.slow  # builds the 6,417 pooled tools' hybrid index twice (embeddings cached)
@pytest.mark.parametrize("dense", ["ivf", "scan"])
def test_engine_equals_run_steps_on_the_stress_set(dense):
    """Every multi-step request of the committed stress set: as the default builds the
    index (the description field probed through its IVF, with the prefilter of its listed
    rows from the first search) and scanned exactly (no IVF), before and after the scan's
    4-bit prefilter joins (after COARSE_AFTER_SCANS searches)."""
    from dataclasses import replace

    from toolsift.evaluate.pooled import load_pseudo

    ds = load_pseudo("stress")
    config = preset_config("hybrid") if dense == "ivf" else replace(preset_config("hybrid"), ivf_min_docs=10**9)
    index = ToolIndex.build(ds.tools, config=config)
    st, cfg = index._state, index.config
    search = text_searcher(st, cfg, retrievers(st, cfg))
    ivf = st.dense["description"].ivf
    if dense == "ivf":
        assert ivf is not None and search._scanned == [] and ivf._coarse not in (None, False)
    else:
        assert ivf is None and search._scanned, "the description field should take a prefilter"
    taken, handed = _compare(index, [q.text for q in ds.queries], k=10)
    assert taken >= 450 and taken > 0.9 * (taken + handed), (taken, handed)
    assert search._scanned == []  # the scan's prefilter joined along the way


@pytest.mark.slow
@pytest.mark.parametrize("name", [*MFTR, "ultratool"])
def test_engine_equals_run_steps_on_the_benchmark_sets(name):
    tools, raw, _ = _ultratool() if name == "ultratool" else _mftr(name)
    index = ToolIndex.build(tools, config=preset_config("hybrid"))
    taken, handed = _compare(index, raw, k=10)
    assert taken > 0.9 * (taken + handed), (taken, handed)
