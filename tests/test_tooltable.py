"""The columnar tool table (index format 2): round trip, lazy decoding, format-1
compatibility and damaged tables."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from toolsift import ToolIndex
from toolsift.errors import IndexCorruptError
from toolsift.index import tooltable
from toolsift.index.store import FORMAT_VERSION
from toolsift.index.tooltable import StoredCatalog, tool_layout, tool_table
from toolsift.schema import Catalog, Parameter, Tool

FIXTURES = Path(__file__).parent / "fixtures"
QUERIES = ["convert 100 dollars to euros", "send an email to my boss", "weather forecast tomorrow"]


def _hits(index, queries=QUERIES, k=5):
    return {q: [(h.id, h.score) for h in index.search(q, k=k)] for q in queries}


def _data_dir(path: Path) -> Path:
    return path / json.loads((path / "manifest.json").read_text())["data"]


@pytest.fixture()
def count_decodes(monkeypatch):
    calls = []
    real = Tool.from_dict.__func__

    def counting(cls, data, *, where="tool"):
        calls.append(where)
        return real(cls, data, where=where)

    def counting_unvalidated(data):
        calls.append("unvalidated")
        return real_unvalidated(data)

    real_unvalidated = tooltable._unvalidated_tool
    monkeypatch.setattr(Tool, "from_dict", classmethod(counting))
    monkeypatch.setattr(tooltable, "_unvalidated_tool", counting_unvalidated)
    return calls


def test_round_trip_equals_the_built_index(apibank_tools, tmp_path):
    built = ToolIndex.build(apibank_tools)
    path = built.save(tmp_path / "idx")
    assert json.loads((path / "manifest.json").read_text())["format_version"] == FORMAT_VERSION == 3
    for mmap in (True, False):
        loaded = ToolIndex.load(path, mmap=mmap)
        assert isinstance(loaded.catalog, StoredCatalog) and isinstance(loaded.catalog, Catalog)
        assert loaded.catalog.ids == built.catalog.ids
        assert [t.to_dict() for t in loaded.catalog] == [t.to_dict() for t in built.catalog]
        qs = [t.description for t in list(apibank_tools)[:40]]
        assert _hits(loaded, qs, k=10) == _hits(built, qs, k=10)
    # Saving a loaded index re-uses its table: the result loads equal again.
    again = ToolIndex.load(ToolIndex.load(path).save(tmp_path / "again"))
    assert [t.to_dict() for t in again.catalog] == [t.to_dict() for t in built.catalog]


def test_trusted_and_validated_decoding_give_the_same_tools(apibank_tools, demo_catalog):
    for tools in (list(apibank_tools), list(demo_catalog)):
        table = tool_table(tools)
        trusted, checked = StoredCatalog(table, trusted=True), StoredCatalog(table)
        for i, t in enumerate(tools):
            a, b = trusted[i], checked[i]
            assert a == b == t and a.to_dict() == b.to_dict() == t.to_dict()
            assert type(a.parameters) is tuple and all(type(p) is Parameter for p in a.parameters)
            assert a.parameters == t.parameters and a.examples == t.examples and a.tags == t.tags


def test_layout_columns_equal_the_layout_computed_from_tools(apibank_tools):
    stored = StoredCatalog(tool_table(apibank_tools))
    a, b = tool_layout(stored), tool_layout(apibank_tools)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and (x == y).all()


def test_chunked_table_decodes_across_chunk_boundaries(apibank_tools, monkeypatch):
    monkeypatch.setattr(tooltable, "_CHUNK", 7)
    table = tool_table(apibank_tools)
    assert table.column("payload").num_chunks > 3
    stored = StoredCatalog(table)
    tools = list(apibank_tools)
    for i in (0, 6, 7, 8, 13, 14, len(tools) - 1, -1):
        assert stored[i] == tools[i]
    assert stored[5:16] == tools[5:16]
    with pytest.raises(IndexError):
        stored[len(tools)]
    for x, y in zip(tool_layout(stored), tool_layout(apibank_tools)):
        assert (x == y).all()


def test_load_decodes_nothing_until_a_tool_is_asked_for(demo_index, tmp_path, count_decodes):
    path = demo_index.save(tmp_path / "idx")
    count_decodes.clear()
    loaded = ToolIndex.load(path)
    cat = loaded.catalog
    assert count_decodes == [] and cat.n_decoded == 0
    # Ids, positions, membership and the scorer's layout need no tool.
    assert len(cat) == len(demo_index.catalog) and cat.ids == demo_index.catalog.ids
    assert cat.position(cat.ids[3]) == 3 and cat.ids[3] in cat and "no such tool" not in cat
    loaded.score_pairs("convert dollars", cat.ids[:5])
    assert count_decodes == []
    # A search decodes its hits only, once each.
    hits = loaded.search(QUERIES[0], k=3)
    assert len(count_decodes) == 3 == cat.n_decoded
    assert hits[0].tool is cat[cat.position(hits[0].id)]
    loaded.search(QUERIES[0], k=3)
    assert len(count_decodes) == 3
    assert cat.get(cat.ids[-1]).id == cat.ids[-1]
    with pytest.raises(KeyError, match="nope"):
        cat.get("nope")


def test_format_1_index_still_loads(tmp_path):
    # tests/fixtures/index_v1 was written by the format-1 writer (toolsift before the
    # tool table), with the hits it gave at the time.
    path = tmp_path / "v1"
    shutil.copytree(FIXTURES / "index_v1", path)
    assert json.loads((path / "manifest.json").read_text())["format_version"] == 1
    expected = {q: [tuple(h) for h in hits]
                for q, hits in json.loads((FIXTURES / "index_v1_hits.json").read_text()).items()}
    old = ToolIndex.load(path)
    assert not isinstance(old.catalog, StoredCatalog)
    assert _hits(old) == expected
    # The next save writes the current format in place; results do not change.
    old.save(path)
    assert json.loads((path / "manifest.json").read_text())["format_version"] == FORMAT_VERSION
    new = ToolIndex.load(path)
    assert isinstance(new.catalog, StoredCatalog)
    assert _hits(new) == expected
    assert [t.to_dict() for t in new.catalog] == [t.to_dict() for t in old.catalog]


def test_damaged_payload_is_detected(demo_index, tmp_path):
    path = demo_index.save(tmp_path / "idx")
    f = _data_dir(path) / "tools.arrow"
    raw = bytearray(f.read_bytes())
    victim = demo_index.catalog[2]
    at = raw.find(json.dumps(victim.description)[1:-1].encode())
    assert at > 0
    raw[at] = ord("{")  # breaks the JSON string quoting: not valid JSON any more
    raw[at + 1] = ord('"')
    f.write_bytes(bytes(raw))
    with pytest.raises(IndexCorruptError, match="tools.arrow"):
        ToolIndex.load(path)  # checksums catch it at load
    loaded = ToolIndex.load(path, verify=False)  # structurally sound: found when decoded
    assert loaded.catalog[0].id == demo_index.catalog[0].id
    with pytest.raises(IndexCorruptError, match=r"tools\.arrow\[2\]"):
        loaded.catalog[2]


def test_unverified_payloads_are_validated_before_they_are_saved_again(demo_index, tmp_path):
    path = demo_index.save(tmp_path / "idx")
    assert ToolIndex.load(path).catalog.trusted and not ToolIndex.load(path, verify=False).catalog.trusted
    f = _data_dir(path) / "tools.arrow"
    raw = bytearray(f.read_bytes())
    at = raw.find(b'"name": "')
    raw[at + 1] = ord("m")  # "mame": the payload has no name any more
    f.write_bytes(bytes(raw))
    damaged = ToolIndex.load(path, verify=False)
    # Re-saving would let the next (verified, so trusting) load accept it: refused.
    with pytest.raises(IndexCorruptError, match=r"tools\.arrow\[0\]"):
        damaged.save(tmp_path / "again")
    assert not (tmp_path / "again" / "manifest.json").exists()
    ToolIndex.load(demo_index.save(tmp_path / "fine"), verify=False).save(tmp_path / "fine2")  # sound: saved


def test_payload_of_another_tool_is_detected(demo_index):
    table = tool_table(demo_index.catalog)
    payload = table.column("payload").to_pylist()
    payload[0], payload[1] = payload[1], payload[0]
    swapped = table.set_column(2, "payload", pa.array(payload, pa.large_binary()))
    stored = StoredCatalog(swapped)
    with pytest.raises(IndexCorruptError, match="id column"):
        stored[0]


def test_bad_tables_are_typed_errors(demo_index):
    table = tool_table(demo_index.catalog)
    with pytest.raises(IndexCorruptError, match="params"):
        StoredCatalog(table.drop_columns(["params"]))
    with pytest.raises(IndexCorruptError, match="payload"):
        StoredCatalog(table.set_column(2, "payload", table.column("payload").cast(pa.large_string())))
    ids = table.column("id").to_pylist()
    ids[1] = ids[0]
    with pytest.raises(IndexCorruptError, match="duplicate"):
        StoredCatalog(table.set_column(0, "id", pa.array(ids, pa.string())))
    ids[1] = None
    with pytest.raises(IndexCorruptError, match="null"):
        StoredCatalog(table.set_column(0, "id", pa.array(ids, pa.string())))
    short = table.column("params").to_pylist()
    short[0] = short[0] + [1]  # one parameter more than the parameters field has
    broken = StoredCatalog(table.set_column(3, "params", pa.array(short, pa.list_(pa.uint8()))))
    from toolsift.index.state import IndexState

    st = demo_index._state
    with pytest.raises(IndexCorruptError, match="parameters"):
        IndexState(broken, st.vocab, st.fields, None)


def test_updates_on_a_loaded_index_equal_a_fresh_build(demo_catalog, tmp_path):
    tools = list(demo_catalog)
    loaded = ToolIndex.load(ToolIndex.build(Catalog(tools[:40])).save(tmp_path / "idx"))
    new = Tool(id="brand_new", name="brand_new_tool", description="convert dollars to euros quickly",
               parameters=(Parameter("amount", "number", "how much"),))
    changed = Tool(id=tools[5].id, name=tools[5].name, description="send an email to my boss")
    loaded.remove_tools([tools[1].id, tools[7].id])
    loaded.replace_tools([changed])
    loaded.add_tools([new] + tools[40:45])
    cat = loaded.catalog
    assert isinstance(cat, StoredCatalog)
    final = [t for t in tools[:40] if t.id not in (tools[1].id, tools[7].id)]
    final = [changed if t.id == changed.id else t for t in final] + [new] + tools[40:45]
    assert cat.ids == [t.id for t in final]
    assert [t.to_dict() for t in cat] == [t.to_dict() for t in final]
    fresh = ToolIndex.build(Catalog(final))
    assert _hits(loaded, QUERIES + ["how much money"], k=8) == _hits(fresh, QUERIES + ["how much money"], k=8)
    with pytest.raises(Exception, match="duplicate"):
        loaded.add_tools([tools[0]])


def test_payloads_of_a_mapped_table_are_read_from_the_file(apibank_tools, tmp_path):
    """A memory-mapped tool table reads each tool's JSON from its file (os.pread), not
    through the mapping (whose fault-around made ~64 KB resident per tool decoded): the
    same tools as the built catalogue and as decoding through the mapping; a payload
    offset outside the file is a typed error."""
    import os

    built = ToolIndex.build(apibank_tools, preset="bm25")
    path = built.save(tmp_path / "idx")
    loaded = ToolIndex.load(path)
    cat = loaded.catalog
    assert isinstance(cat, StoredCatalog)
    assert (cat._file is not None) == hasattr(os, "pread")
    via_map = StoredCatalog(cat.table, where="mapped")
    assert via_map._file is None
    n = len(cat)
    for i in (0, 1, n // 2, n - 1):
        assert cat[i].to_dict() == via_map[i].to_dict() == built.catalog[i].to_dict()
    assert [t.to_dict() for t in cat] == [t.to_dict() for t in built.catalog]
    if cat._file is not None:
        offs, at = cat._file._chunks[0]
        cat._file._chunks[0] = (offs, at + cat._file._size)  # the values said to lie past the file's end
        cat._decoded[0] = None
        with pytest.raises(IndexCorruptError, match="outside its file"):
            cat[0]
