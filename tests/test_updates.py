"""Incremental index updates: after random add / remove / replace sequences, an index
scores exactly like one built from scratch over the same catalogue; updates are safe
while other threads search."""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np
import pytest

from toolsift import Catalog, IndexConfig, ToolIndex, ToolsiftError
from toolsift.adapters import demo_catalog_path, load_catalog

QUERIES = [
    "send an email to my manager", "weather forecast for Lisbon", "refund a payment",
    "create a calendar event with attendees", "turn off the lights", "zzqx unknown words",
    {"tool_needs": [{"user_intent": "book a hotel in Rome", "tool_description": "Reserve a hotel room",
                     "expected_response": "booking confirmation"}],
     "extracted_arguments": {"city": "city of the hotel", "check_in": "arrival date"}},
]


@pytest.fixture(scope="module")
def demo():
    return list(load_catalog(demo_catalog_path()))


def _results(index):
    return [[(h.id, round(h.score, 6)) for h in r] for r in index.search_batch(QUERIES, k=10)]


def _same_as_fresh(index, config):
    fresh = ToolIndex.build(Catalog(list(index.catalog)), config=config)
    assert [t.id for t in fresh.catalog] == [t.id for t in index.catalog]
    assert _results(index) == _results(fresh)
    fs_a = index.field_scores(QUERIES)
    fs_b = fresh.field_scores(QUERIES)
    np.testing.assert_allclose(fs_a.base, fs_b.base, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(fs_a.param_sims, fs_b.param_sims, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("scale", ["bounded", "raw"])
def test_random_updates_equal_a_fresh_build(demo, seed, scale):
    rng = np.random.default_rng(seed)
    config = IndexConfig(scale=scale)
    pool = list(demo)
    start = [pool[i] for i in rng.choice(len(pool), size=30, replace=False)]
    index = ToolIndex.build(start, config=config)
    for _ in range(8):
        present = [t.id for t in index.catalog]
        absent = [t for t in pool if t.id not in set(present)]
        op = rng.integers(3)
        if op == 0 and absent:
            index.add_tools([absent[i] for i in rng.choice(len(absent), size=min(3, len(absent)), replace=False)])
        elif op == 1 and len(present) > 3:
            index.remove_tools(list(rng.choice(present, size=3, replace=False)))
        else:
            victims = [index.catalog.get(i) for i in rng.choice(present, size=2, replace=False)]
            index.replace_tools([replace(v, description=v.description + " Also handles urgent requests.")
                                 for v in victims])
        _same_as_fresh(index, config)


def test_updates_after_load_recover_tokens_from_postings(demo, tmp_path):
    index = ToolIndex.build(demo[:40])
    index.save(tmp_path / "idx")
    loaded = ToolIndex.load(tmp_path / "idx")
    loaded.remove_tools([demo[0].id, demo[5].id])
    loaded.add_tools(demo[40:45])
    _same_as_fresh(loaded, loaded.config)
    loaded.save(tmp_path / "idx2")  # forgotten terms survive a save/load round trip
    again = ToolIndex.load(tmp_path / "idx2")
    assert _results(again) == _results(loaded)


def test_update_errors_leave_the_index_unchanged(demo):
    index = ToolIndex.build(demo[:10])
    before = _results(index)
    with pytest.raises(Exception, match="duplicate"):
        index.add_tools([demo[0]])
    with pytest.raises(KeyError, match="no such tool"):
        index.remove_tools(["nope"])
    with pytest.raises(KeyError, match="add_tools"):
        index.replace_tools([demo[20]])
    with pytest.raises(ToolsiftError, match="at least one"):
        index.remove_tools([t.id for t in demo[:10]])
    assert _results(index) == before


def test_eight_threads_search_while_tools_are_added(demo):
    index = ToolIndex.build(demo[:20])
    errors: list[BaseException] = []
    stop = threading.Event()

    def searcher():
        # A batch, then a 50 ms pause, until the updates are done: each update still
        # overlaps dozens of batches from the eight threads, and the writer gets the CPU
        # (searching flat out, the threads spent ~15 CPU-s on a 2-core machine while
        # starving the ~1 CPU-s of updates they are there to overlap).
        try:
            while True:
                for r in index.search_batch(QUERIES, k=5):
                    assert all(h.tool.id in {t.id for t in demo} for h in r)
                if stop.wait(0.05):
                    break
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=searcher) for _ in range(8)]
    for t in threads:
        t.start()
    try:
        for i in range(20, len(demo), 4):
            index.add_tools(demo[i:i + 4])
        index.remove_tools([t.id for t in demo[:10]])
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors[:3]
    assert len(index) == len(demo) - 10
    _same_as_fresh(index, index.config)
