"""Mostly-empty dense fields stored as their non-empty rows and a row map (.dense_rows):
the layout against an independent reference (the same index with every document's row,
the path before the change), in every search path, saved and loaded, and updated."""

from __future__ import annotations


import numpy as np
import pytest

from toolsift import IndexConfig, Tool, ToolIndex
from toolsift.index import dense_rows
from toolsift.index.dense_rows import expand_rows
from toolsift.index.embed import encoder_wrapper
from toolsift.schema import Parameter

from ._hash_encoder import HashEncoder


_WORDS = ["send", "fetch", "create", "delete", "list", "update", "search", "book", "convert", "translate"]


def _tools(start: int, n: int, tag: str = "") -> list[Tool]:
    rng = np.random.default_rng(start)
    out = []
    for i in range(start, start + n):
        w = rng.choice(_WORDS, 3)
        out.append(Tool(id=f"t{i}", name=f"{w[0]}_{i}", description=f"{w[0]} {w[1]} {w[2]} item {i}{tag}",
                        response=f"{w[1]} result {i % 7}" if i % 4 == 0 else "",  # 1 in 4 has one
                        examples=(f"{w[2]} {w[0]} example {i}",) if i % 5 == 0 else (),
                        parameters=(Parameter(name="x", type="string", description=f"{w[1]} input"),)))
    return out


QUERIES = ["send item 12", "fetch a result", "book example", "convert translate", "delete 3 result",
           "search the list for a create result"]
HYBRID = IndexConfig(retrievers=(("description", "hybrid"), ("parameters", "hybrid"), ("response", "hybrid"),
                                 ("examples", "hybrid")), query_encoder="transformer")
DENSE = IndexConfig(retrievers=(("description", "hybrid"), ("parameters", "bm25"), ("response", "dense"),
                                ("examples", "dense")), ivf_min_docs=20, ivf_nprobe=4,
                    query_encoder="transformer")


def _hits(index, queries, k=10):
    return {str(q): [(h.id, round(h.score, 6)) for h in index.search(q, k=k)] for q in queries}


def _built(tools, config, *, compact: bool):
    share = dense_rows.COMPACT_SHARE if compact else -1.0  # -1: every field keeps every row
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dense_rows, "COMPACT_SHARE", share)
        return ToolIndex.build(tools, config=config)


def _structured():
    from toolsift.query_types import Query, ToolNeed

    return [Query(text="send then fetch", needs=(ToolNeed(tool_description="send an item", expected_response="a result",
                                                          user_intent="send item 4"),
                                                 ToolNeed(tool_description="fetch a list", expected_response="",
                                                          user_intent="fetch")))]


@pytest.mark.parametrize("config", [HYBRID, DENSE], ids=["hybrid", "dense-ivf"])
@pytest.mark.parametrize("cache_worthy", [True, False], ids=["one-pass", "streamed"])
def test_compact_fields_score_as_every_row(config, cache_worthy):
    """Response (1 tool in 4) and examples (1 in 5) keep only their non-empty rows;
    description and parameters keep every row. Hits (ids and scores) equal the index
    that keeps every document's row, for raw, multi-step and structured queries, with
    and without explanations (the fused engine and the general path)."""
    enc = HashEncoder(cache_worthy)
    with encoder_wrapper(lambda e, c: enc):
        _check_same_hits(config)


def _check_same_hits(config):
    tools = _tools(0, 240)
    got = _built(tools, config, compact=True)
    ref = _built(tools, config, compact=False)
    st, rst = got._state, ref._state
    assert st.dense["response"].matrix.n_rows == 60 and st.dense["response"].groups.tolist() == list(range(0, 240, 4))
    assert st.dense["examples"].matrix.n_rows == 48
    assert rst.dense["response"].matrix.n_rows == 240 and rst.dense["response"].groups is None
    for f in [f for f in ("description", "parameters") if f in st.dense]:
        np.testing.assert_array_equal(st.dense[f].matrix.codes, rst.dense[f].matrix.codes)
    # The kept rows are the reference's non-zero rows, byte for byte.
    live = np.flatnonzero(rst.dense["response"].matrix.scales > 0)
    np.testing.assert_array_equal(st.dense["response"].matrix.codes, rst.dense["response"].matrix.codes[live])
    queries = QUERIES + ["send item 12. Then fetch a result, and finally book an example"] + _structured()
    assert _hits(got, queries) == _hits(ref, queries)
    for q in QUERIES[:3]:
        a, b = got.search(q, k=5, explain=True), ref.search(q, k=5, explain=True)
        assert [(h.id, round(h.score, 6), h.matched) for h in a] == [(h.id, round(h.score, 6), h.matched) for h in b]


def test_all_empty_field_has_no_rows_and_round_trips(tmp_path):
    """A field with no non-empty document at all keeps no row (no zero matrix on disk);
    save and load keep the row maps (format 3's ``tool`` column) and the hits."""
    tools = [Tool(id=t.id, name=t.name, description=t.description, response=t.response, examples=(),
                  parameters=t.parameters) for t in _tools(0, 120)]
    enc = HashEncoder(True)
    with encoder_wrapper(lambda e, c: enc):
        index = ToolIndex.build(tools, config=HYBRID)
        assert index._state.dense["examples"].matrix.n_rows == 0
        path = index.save(tmp_path / "idx")
        ddir = next(p for p in path.iterdir() if p.is_dir())
        assert (ddir / "dense.examples.arrow").stat().st_size < 10_000
        loaded = ToolIndex.load(path)
        for name, dn in index._state.dense.items():
            got = loaded._state.dense[name]
            assert (got.groups is None) == (dn.groups is None)
            if dn.groups is not None:
                np.testing.assert_array_equal(got.groups, dn.groups)
            np.testing.assert_array_equal(got.matrix.codes, dn.matrix.codes)
        assert _hits(loaded, QUERIES) == _hits(index, QUERIES)


@pytest.mark.parametrize("cache_worthy", [True, False], ids=["one-pass", "streamed"])
def test_updates_of_a_compact_field_equal_a_fresh_build(cache_worthy):
    """Adding, replacing and removing tools keeps a compact field compact (new tools'
    empty documents get no row) and scores as a fresh build."""
    tools = _tools(0, 200)
    enc = HashEncoder(cache_worthy)
    with encoder_wrapper(lambda e, c: enc):
        index = ToolIndex.build(tools, config=HYBRID)
        new = _tools(500, 30, tag=" new")
        changed = Tool(id="t8", name="send_8", description="send a parcel", response="parcel sent")
        index.remove_tools(["t4", "t5"])
        index.replace_tools([changed])
        index.add_tools(new)
        final = [changed if t.id == "t8" else t for t in tools if t.id not in ("t4", "t5")] + new
        fresh = ToolIndex.build(final, config=HYBRID)
        resp = index._state.dense["response"]
        assert resp.groups is not None and resp.matrix.n_rows == fresh._state.dense["response"].matrix.n_rows
        assert _hits(index, QUERIES) == _hits(fresh, QUERIES)


@pytest.mark.parametrize("seed", range(6))
def test_expand_rows_equals_a_scatter_twin(seed):
    """Rows written one after another move to their own rows in place (chunks from the
    back), and the rows between them are zero: a fresh scatter into zeros."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(1, 200)), 8
    pos = np.sort(rng.choice(n, int(rng.integers(0, n + 1)), replace=False)).astype(np.int64)
    src = rng.integers(-127, 128, (pos.size, d)).astype(np.int8)
    src_s = rng.uniform(0.1, 1, pos.size).astype(np.float32)
    codes = np.full((n, d), 99, np.int8)  # rows beyond the written ones were never written: zero
    codes[pos.size:] = 0
    codes[:pos.size] = src
    scales = np.zeros(n, np.float32)
    scales[:pos.size] = src_s
    want, want_s = np.zeros((n, d), np.int8), np.zeros(n, np.float32)
    want[pos], want_s[pos] = src, src_s
    expand_rows(codes, scales, pos, chunk=int(rng.integers(1, 9)))
    np.testing.assert_array_equal(codes, want)
    np.testing.assert_array_equal(scales, want_s)


def test_grouped_scan_in_blocks_equals_one_block(monkeypatch):
    """A grouped field's exact top-n scans its query rows a block at a time (bounded
    memory for 200 null-floor texts): the same tools as one scan of every row."""
    from toolsift.index import dense_field
    from toolsift.index.dense import Int8Matrix
    from toolsift.index.dense_field import DenseField
    from toolsift.kernels.int8 import quantize_rows

    rng = np.random.default_rng(3)
    x = rng.standard_normal((300, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    groups = np.sort(rng.choice(120, 300)).astype(np.int64)
    dn = DenseField(Int8Matrix.quantize(x), groups, 120)
    q = rng.standard_normal((37, 16)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    qc, qs = quantize_rows(q)
    whole = dn.top_tools(qc, qs, 9)
    monkeypatch.setattr(dense_field, "_SCAN_BLOCK", 700)  # 2 query rows a block of 300 rows
    blocks = dn.top_tools(qc, qs, 9)
    assert [np.sort(a).tolist() for a in whole] == [np.sort(b).tolist() for b in blocks]
