"""Multi-step raw requests on dense/hybrid indexes (toolsift.search.needs): one vector per
step, per-need normalisation; requests of one step score exactly as before."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from toolsift import ToolIndex
from toolsift.config import IndexConfig
from toolsift.decompose import split_steps
from toolsift.presets import preset_config
from toolsift.search.needs import combine_needs
from toolsift.search.needs_reference import per_need_shift

MULTI = "1. create a calendar event for friday\n2. send an email to bob\n3. look up the stock price of AAPL"
SINGLE = ["send an email to my boss", "what's the weather like in Paris tomorrow",
          "search and replace text in a document", "book a table for two at an italian restaurant"]


@pytest.fixture(scope="module")
def indexes(demo_catalog):
    cfg = preset_config("hybrid")
    on = ToolIndex.build(demo_catalog, config=cfg)
    return on, ToolIndex.build(demo_catalog, config=replace(cfg, split_steps=False))


def _key(hits):
    return [(h.id, h.score, h.matched) for h in hits]


def test_one_step_requests_score_bit_for_bit_as_before(indexes):
    on, off = indexes
    assert all(len(split_steps(q)) == 1 for q in SINGLE)
    for q in SINGLE:
        a, b = on.search(q, k=10, explain=True), off.search(q, k=10, explain=True)
        assert _key(a) == _key(b)
        assert [h.fields for h in a] == [h.fields for h in b] and [h.why for h in a] == [h.why for h in b]
    # In a batch beside multi-step requests too, in order.
    batch = [SINGLE[0], MULTI, SINGLE[1], MULTI.replace("\n", " "), SINGLE[2]]
    got, ref = on.search_batch(batch, k=10), off.search_batch(batch, k=10)
    for i in (0, 2, 4):
        assert _key(got[i]) == _key(ref[i])
    assert _key(got[1]) == _key(on.search(MULTI, k=10))


def test_every_step_gets_its_share(indexes):
    on, off = indexes
    assert len(split_steps(MULTI)) == 3
    wanted = {"create_calendar_event", "send_email", "get_stock_quote"}
    # Each step's best tool is at the top of the list.
    top = on.search(MULTI, k=3)
    assert {h.name for h in top} == wanted
    # One vector for the whole request does not reach all three in its top 3.
    assert {h.name for h in off.search(MULTI, k=3)} != wanted
    hits = on.search(MULTI, k=10, explain=True)
    assert [h.rank for h in hits] == list(range(1, 11))
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
    assert all(h.why and h.fields is not None for h in hits)
    assert [h.why for h in on.search(MULTI, k=10, explain="why")] == [h.why for h in hits]


def test_bm25_indexes_are_unaffected(demo_catalog):
    idx = ToolIndex.build(demo_catalog, config=IndexConfig())
    off = ToolIndex.build(demo_catalog, config=IndexConfig(split_steps=False))
    assert _key(idx.search(MULTI, k=10)) == _key(off.search(MULTI, k=10))


def test_structured_queries_are_unaffected(indexes):
    on, off = indexes
    q = {"tool_needs": [{"tool_description": "send an email", "user_intent": "email bob"},
                        {"tool_description": "stock quote", "user_intent": "price of AAPL"}],
         "request": MULTI}
    assert _key(on.search(q, k=10)) == _key(off.search(q, k=10))


def test_combine_needs():
    # Reading 0 is the whole request; each reading's best is shifted to the overall best.
    block = np.array([[0.9, 0.5, 0.1, 0.3], [0.2, 0.4, 0.3, 0.1], [0.1, 0.1, 0.6, 0.2]], np.float32)
    np.testing.assert_allclose(per_need_shift(block.astype(np.float64)).max(axis=1), [0.9, 0.9, 0.9])
    got, src = combine_needs(block)
    assert got.dtype == np.float32
    # Every reading's best candidate (0, 1, 2) above the rest; among them reading 0's order.
    assert list(np.argsort(-got, kind="stable")) == [0, 1, 2, 3]
    assert len(set(got.tolist())) == 4  # strictly ordered: any sort by score keeps it
    assert got[0] == np.float32(0.9) and got[2] < got[1] < got[0] and got[3] < got[2]
    assert list(src) == [0, 1, 2, 1]  # candidate 3: .1 + (.9 - .4) from reading 1
    one, _ = combine_needs(block[:1])
    np.testing.assert_array_equal(one, block[0])  # one reading: its own scores


def test_every_reading_gets_its_share_of_the_list():
    """A reading whose top is flat (many near its best) does not crowd another reading's
    second best out: the list takes every reading's r-th best in round r; scores still
    decrease strictly and never exceed a candidate's best shifted score."""
    block = np.array([[1.0, .99, .98, .97, .2, .1], [.1, .1, .1, .1, .5, .45]], np.float32)
    got, _ = combine_needs(block)
    order = list(np.argsort(-got, kind="stable"))
    assert order[:4] == [0, 4, 1, 5]  # the plain shift would put candidate 5 sixth (.95 < .97)
    assert len(set(got.tolist())) == got.size
    best = per_need_shift(block.astype(np.float64)).max(axis=0)
    assert np.all(got.astype(np.float64) <= best.astype(np.float32).astype(np.float64))


def test_config_round_trip_and_old_manifests():
    cfg = IndexConfig(split_steps=False)
    assert IndexConfig.from_dict(cfg.to_dict()).split_steps is False
    assert IndexConfig.from_dict(IndexConfig().to_dict()).split_steps is True
    d = IndexConfig().to_dict()
    del d["split_steps"]
    assert IndexConfig.from_dict(d).split_steps is False  # saved before the option: as built


def test_the_prefilter_never_hides_a_split():
    """A request that may_split rejects is one step for split_steps too (random word soups
    with every rule's trigger words and commas)."""
    from toolsift.decompose.steps import may_split

    rng = np.random.default_rng(0)
    words = ("book send email a flight to Rome, find weather: in Paris please I want can you "
             "check create delete list get the stock price of 'AAPL' if order pizza play music "
             "set reminder 3 x translate 'hi there' remind me tell once done when that is finished "
             "after the meeting, what how calculate; we need: , ,").split()
    n = 0
    for _ in range(4000):
        text = " ".join(rng.choice(words, size=int(rng.integers(2, 25))))
        if not may_split(text):
            n += 1
            assert len(split_steps(text, max_steps=8)) == 1, text
    assert n > 500


REQUESTS = [MULTI, "create a calendar event for friday, then send an email to bob and look up AAPL",
            "Find the weather in Paris tomorrow. Then book a flight to Rome and send an email to my boss.",
            "search and replace text in a document; after that translate it to French, and finally play music",
            "First create a reminder for 9am, and once done order a pizza. Also look up AAPL."]


def _full(hits):
    return [(h.id, h.rank, h.score, h.matched, h.fields, h.why) for h in hits]


@pytest.mark.parametrize("kind", ["hybrid", "dense description"])
def test_fast_path_equals_the_reference(demo_catalog, monkeypatch, kind):
    """run_steps (BM25 packed once per request, cosines per reading) gives exactly the
    hits, scores and explanations of the first implementation (each reading packed as a
    query of its own), alone and in batches; a purely dense field takes the reference."""
    import toolsift.search as search
    from toolsift.search import needs
    from toolsift.search.needs_reference import run_steps_reference

    cfg = preset_config("hybrid")
    if kind != "hybrid":
        cfg = replace(cfg, retrievers=tuple((f, "dense" if f == "description" else r) for f, r in cfg.retrievers))
    idx = ToolIndex.build(demo_catalog, config=cfg)
    assert all(len(split_steps(q)) >= 2 for q in REQUESTS)
    assert needs.shares_bm25(search.retrievers(idx._state, idx.config)) is (kind == "hybrid")

    def runs():
        return ([_full(idx.search(q, k=12, explain=e)) for q in REQUESTS for e in (False, True, "why")]
                + [_full(h) for h in idx.search_batch([*REQUESTS, SINGLE[0]], k=12)])

    got = runs()
    monkeypatch.setattr(needs, "run_steps", run_steps_reference)  # search.run imports it per call
    assert got == runs()


@pytest.mark.parametrize("sep", ["\n", "\r", "\r\n", "\u2028", "\x0c"])
def test_a_list_split_by_any_line_break_is_several_steps(sep):
    """The pre-checks look for every line break str.splitlines splits at: a bulleted list
    sent with carriage returns (or a Unicode line separator) splits as one with newlines."""
    from types import SimpleNamespace

    from toolsift import Query
    from toolsift.decompose.steps import may_split
    from toolsift.search.needs import request_steps

    text = sep.join(["- book a flight to Rome", "- send an email to my boss"])
    assert may_split(text)
    st, cfg = SimpleNamespace(dense={"description": None}), SimpleNamespace(split_steps=True)
    assert request_steps(st, cfg, [Query.from_text(text)]) == [["book a flight to Rome", "send an email to my boss"]]
