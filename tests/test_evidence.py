"""``Hit.matched`` on dense and hybrid fields (toolsift.search.evidence): a dense candidate
is evidence only above its field's null floor; ranking never depends on it."""

from __future__ import annotations

import pytest

from toolsift import ToolIndex
from toolsift.search import retrievers
from toolsift.search.evidence import NULL_TEXTS, null_texts
from toolsift.search.retrievers import dense_half

QUERIES = ["snap a photo of the porch", "keep a copy of the prod db before the migration",
           "send an email to Bob", "qwxyzzy blorft", "get the weather in Paris, then send an email to Bob",
           "xqzt jjwp, then vvkq zzrb"]


def _floors(index: ToolIndex) -> dict[str, float]:
    got = {f: dense_half(r) for f, r in retrievers(index._state, index.config).items()}
    return {f: h.null_floor for f, h in got.items() if h is not None}


def test_null_texts_are_seeded_and_not_blank():
    texts = null_texts()
    assert len(texts) == NULL_TEXTS and texts == null_texts() and all(t.strip() for t in texts)
    assert null_texts(seed=1) != texts
    # The stored default strings are the seeded generator's (a search imports no numpy.random).
    from toolsift.search.evidence import _generate

    assert texts == _generate(NULL_TEXTS, 0) and null_texts(NULL_TEXTS - 1) == _generate(NULL_TEXTS - 1, 0)


def test_every_dense_half_has_a_positive_floor(demo_index):
    floors = _floors(demo_index)
    assert set(floors) == {"description", "response", "examples"}
    assert all(0.0 < v < 1.0 for v in floors.values())


def test_ranking_does_not_depend_on_the_floor(demo_catalog, demo_index, monkeypatch):
    k = len(demo_catalog)
    before = demo_index.search_batch(QUERIES, k=k)
    # A fresh index of the same catalogue with every floor at -1: every found candidate is matched.
    index = ToolIndex.build(demo_catalog)
    for r in retrievers(index._state, index.config).values():
        half = dense_half(r)
        if half is not None:
            monkeypatch.setattr(half, "null_floor", -1.0)
    after = index.search_batch(QUERIES, k=k)
    for b, a in zip(before, after):
        assert [(h.id, h.score) for h in b] == [(h.id, h.score) for h in a]
        assert {h.id for h in b if h.matched} <= {h.id for h in a if h.matched}
    # Without the floor, gibberish matched the dense candidates (the bug); with it, nothing.
    assert any(h.matched for h in after[3]) and not any(h.matched for h in before[3])


@pytest.mark.parametrize("explain", [False, True, "why"])
def test_matched_is_the_same_with_or_without_explanations(demo_index, explain):
    plain = demo_index.search_batch(QUERIES, k=10)
    got = demo_index.search_batch(QUERIES, k=10, explain=explain)
    assert [[(h.id, h.matched) for h in hs] for hs in got] == [[(h.id, h.matched) for h in hs] for hs in plain]


def test_semantic_and_lexical_matches_stay_matched(demo_index):
    snap, backup, email = (demo_index.search(q, k=1)[0] for q in QUERIES[:3])
    assert (snap.id, snap.matched) == ("get_camera_snapshot", True)
    assert (backup.id, backup.matched) == ("backup_database", True)
    assert (email.id, email.matched) == ("send_email", True)
    two = demo_index.search(QUERIES[4], k=10)
    assert {"get_current_weather", "send_email"} <= {h.id for h in two if h.matched}
    assert not any(h.matched for h in demo_index.search(QUERIES[5], k=10))
