"""Null floors saved with an index (toolsift.search.evidence.floor_record): a loaded index's
dense halves start with the floors its save recorded, the same values a search would make;
an index saved without them (or loaded with other floor settings) makes them on first use,
with the same hits."""

from __future__ import annotations

import dataclasses
import json

import pytest

from toolsift import IndexCorruptError, ToolIndex
from toolsift.index.persist import save_index
from toolsift.search import retrievers
from toolsift.search.evidence import floor_settings, saved_floors
from toolsift.search.retrievers import dense_half

QUERIES = ["snap a photo of the porch", "send an email to Bob", "qwxyzzy blorft",
           "get the weather in Paris, then send an email to Bob", "xqzt jjwp, then vvkq zzrb"]


def _halves(index: ToolIndex, config=None):
    got = retrievers(index._state, config or index.config)
    return {f: h for f, h in ((f, dense_half(r)) for f, r in got.items()) if h is not None}


def _computed(index: ToolIndex) -> dict[str, float]:
    return {f: h.floor_source() for f, h in _halves(index).items()}


def _hits(index: ToolIndex) -> list:
    return [[(h.id, h.score, h.matched) for h in hs] for hs in index.search_batch(QUERIES, k=10)] + [
        [(h.id, h.score, h.matched) for h in index.search(q, k=10)] for q in QUERIES]


@pytest.fixture(scope="module")
def saved(demo_catalog, tmp_path_factory):
    path = tmp_path_factory.mktemp("floors") / "ix"
    ToolIndex.build(demo_catalog).save(path)
    return path


def test_saved_floors_are_the_computed_floors(saved, demo_index):
    rec = json.loads((saved / "manifest.json").read_text())["null_floors"]
    loaded = ToolIndex.load(saved)
    assert rec["settings"] == floor_settings(loaded.config)
    assert set(rec["fields"]) == set(loaded._state.dense) == {"description", "response", "examples"}
    # A fresh build's floors, made by the search path on first use, are exactly the saved ones.
    assert rec["fields"] == _computed(demo_index) == {f: h.null_floor for f, h in _halves(demo_index).items()}
    # The loaded index's dense halves start with them: nothing is left to make.
    assert all(h.floor_source is None and h.null_floor == rec["fields"][f] for f, h in _halves(loaded).items())


def test_an_index_saved_without_floors_makes_them_with_the_same_hits(saved, demo_index, tmp_path):
    with_floors = ToolIndex.load(saved)
    # Saved as before floors were recorded: no 'null_floors' in the manifest.
    save_index(tmp_path / "old", demo_index._state, demo_index.config, encoder=demo_index.encoder_info)
    assert "null_floors" not in json.loads((tmp_path / "old" / "manifest.json").read_text())
    old = ToolIndex.load(tmp_path / "old")
    assert old._state.null_floors is None
    assert all(h.floor_source is not None for h in _halves(old).values())
    assert _hits(old) == _hits(with_floors) == _hits(demo_index)
    assert {f: h.null_floor for f, h in _halves(old).items()} == {
        f: h.null_floor for f, h in _halves(with_floors).items()}


def test_floors_saved_for_other_settings_are_not_used(saved):
    loaded = ToolIndex.load(saved)
    other = dataclasses.replace(loaded.config, ivf_nprobe=(loaded.config.ivf_nprobe or 64) + 1)
    assert saved_floors(loaded._state, loaded.config) and not saved_floors(loaded._state, other)
    assert all(h.floor_source is not None for h in _halves(loaded, other).values())


def test_an_updated_index_makes_its_own_floors(saved, demo_catalog):
    loaded = ToolIndex.load(saved)
    loaded.remove_tools([demo_catalog[0].id])
    assert loaded._state.null_floors is None
    assert all(h.floor_source is not None for h in _halves(loaded).values())


@pytest.mark.parametrize("record", [
    {"settings": {}, "fields": {"description": "0.5"}},
    {"settings": {}, "fields": {"description": 1.5}},
    {"settings": {}, "fields": {"name": 0.5}},  # not a dense field
    {"settings": [], "fields": {}},
    [0.5],
])
def test_a_damaged_floor_record_is_a_corrupt_index(demo_index, tmp_path, record):
    save_index(tmp_path / "ix", demo_index._state, demo_index.config, encoder=demo_index.encoder_info,
               null_floors=record)
    with pytest.raises(IndexCorruptError, match="null_floors"):
        ToolIndex.load(tmp_path / "ix")


def test_floors_are_made_after_the_files_are_written(demo_catalog, tmp_path, monkeypatch):
    """A save makes the floors once every table is written (a manifest value given as a
    callable, toolsift.index.store.write_index_dir), so their memory (a 1M index's IVF
    prefilter) is not added to the writing's; the manifest records the same floors as
    floor_record of the index, and a callable answering None leaves its entry out."""
    from toolsift.index import store
    from toolsift.search.evidence import floor_record

    index = ToolIndex.build(demo_catalog)
    want = floor_record(index._state, index.config)
    written: list[str] = []
    real_write = store._write_table
    monkeypatch.setattr(store, "_write_table", lambda path, table: (written.append(path.name), real_write(path, table)))
    import toolsift.toolindex as ti

    real_floor = ti.floor_record

    def floor_after_tables(st, config):
        assert "tools.arrow" in written and any(n.startswith("dense.") for n in written)
        return real_floor(st, config)

    monkeypatch.setattr(ti, "floor_record", floor_after_tables)
    path = index.save(tmp_path / "ix")
    assert json.loads((path / "manifest.json").read_text())["null_floors"] == want
    save_index(tmp_path / "none", index._state, index.config, null_floors=lambda: None)
    assert "null_floors" not in json.loads((tmp_path / "none" / "manifest.json").read_text())
