"""The batch scorer's engine calls (``_core.score_packed_pairs``, ``score_whole_catalogue``,
``fill_pair_rows``, ``group_pairs``; cpp/src/pair_scores.cpp) against the MFTR kernel's
plain-NumPy twin, on pairs of the five shared sets' real queries (raw and structured) and
tools: every output column to 1e-6, through both the grouped and the full-catalogue-table
paths. Then the bounds the binding checks, and a ``toolsift score`` process that never
imports Numba or pandas."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as hst
import pyarrow.parquet as pq
import pytest

from toolsift import Query, ToolIndex, ToolNeed, _core
from toolsift.batch import SCORE_COLUMNS, PairScorer
from toolsift.batch.queries import query_json
from toolsift.kernels import score_candidates_reference
from toolsift.kernels.params import ScoringParams
from toolsift.search import as_query, is_raw, retrievers
from toolsift.search.candidates import pack
from toolsift.search.plan import plan_queries

from .conftest import dataset
from .test_pack import _reference as pack_reference

warnings.filterwarnings("ignore", category=UserWarning, module="toolsift")

SETS = ("apibank", "apigen", "gorilla-huggingface", "toolink", "ultratool")


def _queries(name: str, n: int) -> tuple[list, list[str]]:
    """``(tools, query strings)``: ``n`` raw and ``n`` structured queries of the set."""
    from toolsift.adapters import load_catalog
    from toolsift.adapters.benchmark import load_queries

    if name == "ultratool":
        from toolsift.evaluate import UltraToolDataset

        ds = UltraToolDataset.load(dataset("ultratool"))
        raw = [q.question for q in ds.queries[:n]]
        structured = [Query(needs=tuple(ToolNeed(s, s, s) for s in q.steps if s.strip()), text=q.question)
                      for q in ds.queries[:3 * n] if any(s.strip() for s in q.steps)][:n]
        return ds.tools, raw + [query_json(q) for q in structured]
    root = dataset(f"mftr-{name}") / "dataset"
    tools = load_catalog(root / f"from_toolret/{name}/tools.json")
    bqs = [q for k in range(5) for q in load_queries(root / f"train_and_test/{name}/fold_{k}/test_queries.json")]
    raw = [q.text for q in bqs[:n]]
    structured = [query_json(q.rewritten) for q in bqs if q.rewritten is not None][:n]
    return tools, raw + structured


def _pairs(texts: list[str], n_tools: int, per_query: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    qi = np.repeat(np.arange(len(texts)), per_query)
    ti = rng.integers(0, n_tools, qi.size)
    again = rng.integers(0, qi.size, qi.size // 10)  # repeated pairs
    qi, ti = np.concatenate([qi, qi[again]]), np.concatenate([ti, ti[again]])
    order = rng.permutation(qi.size)
    return qi[order], ti[order]


def _twin(index: ToolIndex, text: str, tools: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The NumPy twin's scores and terms of one query against ``tools`` (sorted, distinct),
    fed by the search path's own plan and pack: no batch code involved."""
    st, cfg = index._state, index.config
    q = as_query(json.loads(text) if text.startswith("{") else text, "q")
    plan = plan_queries(st, cfg, [q])
    c = pack(st, plan, retrievers(st, cfg), np.array([0, tools.size], np.int64), tools)
    return score_candidates_reference(c.query, c.tool, c.need_off, c.ap_off, c.n_needs, c.n_args, c.penalize,
                                      c.need_sims, c.ap_sims, st.param_ptr, st.param_required,
                                      cfg.params_for(not is_raw(q)), tool_fields=st.tool_bits, breakdown=True)


def _check_against_twin(index: ToolIndex, texts: list[str], per_query: int, seed: int) -> None:
    ids = [t.id for t in index.catalog]
    qi, ti = _pairs(texts, len(ids), per_query, seed)
    table = pa.table({"query": [texts[i] for i in qi], "tool_id": [ids[i] for i in ti]})
    batches = table.to_batches(max_chunksize=max(1, table.num_rows // 3))
    # Grouped pairs only, then a table for every query from its first batch on.
    outs = [pa.Table.from_batches([PairScorer(index, table_mb=0).score_batch(b) for b in batches])]
    tabled = PairScorer(index, table_mb=256, table_share=1e-9)
    outs.append(pa.Table.from_batches([tabled.score_batch(b) for b in batches]))
    assert tabled.tables.capacity > 0 and (tabled.tables.slot_of_row >= 0).any()
    for j, text in enumerate(texts):
        rows = np.flatnonzero(qi == j)
        tools = np.unique(ti[rows]).astype(np.int64)
        ref, terms = _twin(index, text, tools)
        pos = np.searchsorted(tools, ti[rows])
        want = np.column_stack([ref, terms])[pos]
        for out in outs:
            for k, name in enumerate(SCORE_COLUMNS):
                np.testing.assert_allclose(out[name].to_numpy()[rows], want[:, k], rtol=0, atol=1e-6,
                                           err_msg=f"{name} of query {j}")


@pytest.mark.parametrize("name", SETS)
def test_bm25_pairs_equal_the_numpy_twin(name):
    tools, texts = _queries(name, 12)
    index = ToolIndex.build(tools, preset="bm25")
    _check_against_twin(index, texts, per_query=40, seed=len(name))


def test_hybrid_pairs_equal_the_numpy_twin():
    # The default preset (hybrid): the tables' fields mix whole-catalogue BM25 with cosines.
    tools, texts = _queries("apibank", 12)
    index = ToolIndex.build(tools)
    assert index.config.uses_dense
    _check_against_twin(index, texts, per_query=40, seed=5)


def _params_tuple(p: ScoringParams) -> tuple:
    w = p.weights
    return (*map(float, w), float(p.bias), float(p.alpha), float(p.tau), float(p.w_req), float(p.w_opt),
            float(p.param_max_share), bool(p.renormalize))


@settings(max_examples=120, deadline=None)
@given(hst.integers(0, 2**32 - 1))
def test_tables_and_pairs_equal_the_numpy_twin_on_random_inputs(seed):
    """Random catalogues (tools without parameters, queries without arguments, several needs,
    the penalty on and off, renormalisation): the table call and the packed-pair call
    give the twin's score and terms for every (query, tool)."""
    rng = np.random.default_rng(seed)
    nt, nq = int(rng.integers(1, 9)), int(rng.integers(1, 5))
    param_ptr = np.concatenate([[0], np.cumsum(rng.integers(0, 4, nt))]).astype(np.int64)
    required = rng.integers(0, 2, int(param_ptr[-1])).astype(np.uint8)
    bits = rng.integers(0, 16, nt).astype(np.uint8)
    n_needs, n_args = rng.integers(1, 3, nq), rng.integers(0, 3, nq)  # a query has at least one need
    need_ptr = np.concatenate([[0], np.cumsum(n_needs)]).astype(np.int64)
    arg_ptr = np.concatenate([[0], np.cumsum(n_args)]).astype(np.int64)
    penalize = rng.integers(0, 2, nq).astype(np.uint8)
    need = [rng.random((int(need_ptr[-1]), nt), dtype=np.float32) for _ in range(3)]
    par = rng.random((int(arg_ptr[-1]), int(param_ptr[-1])), dtype=np.float32)
    params = ScoringParams(weights=tuple(rng.uniform(-0.5, 1.0, 4)), bias=float(rng.normal()),
                           alpha=float(rng.uniform(0, 10)), tau=float(rng.uniform(0, 1)),
                           w_req=float(rng.uniform(0, 0.5)), w_opt=float(rng.uniform(0, 0.2)),
                           param_max_share=float(rng.uniform(0, 1)), renormalize=bool(rng.integers(0, 2)))
    # The twin, fed by the plain NumPy packing of every tool for every query.
    ptr = np.arange(nq + 1, dtype=np.int64) * nt
    tool = np.tile(np.arange(nt, dtype=np.int64), nq)
    flat = [np.concatenate([m[need_ptr[q]:need_ptr[q + 1]].ravel() for q in range(nq)]) for m in need]
    need_sims, need_off, ap_sims, ap_off = pack_reference(ptr, tool, need_ptr, arg_ptr, param_ptr, *flat, par.ravel())
    need_sims = np.asarray(need_sims, np.float32).reshape(-1, 3)
    ap_sims, need_off, ap_off = np.asarray(ap_sims, np.float32), np.asarray(need_off), np.asarray(ap_off)
    query = np.repeat(np.arange(nq, dtype=np.int64), nt)
    ref, terms = score_candidates_reference(query, tool, need_off, ap_off, n_needs, n_args, penalize.astype(bool),
                                            need_sims, ap_sims, param_ptr, required.astype(bool), params,
                                            tool_fields=bits, breakdown=True)
    want = np.column_stack([ref, terms]).astype(np.float32)
    tables = np.full((nq + 2, nt, 6), np.nan, np.float32)
    rows = rng.permutation(nq + 2)[:nq].astype(np.int64)
    _core.score_whole_catalogue(need, need_ptr, par, arg_ptr, penalize, rows, param_ptr, required, bits,
                                _params_tuple(params), 2, tables)
    np.testing.assert_allclose(tables[rows].reshape(-1, 6), want, rtol=0, atol=1e-6)
    got = _core.score_packed_pairs(query, tool, need_off.astype(np.int64), ap_off.astype(np.int64), n_needs, n_args,
                                   penalize, need_sims, ap_sims, param_ptr, required, bits, _params_tuple(params), 2)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    # The row pass answers rows from the tables exactly.
    qkey = rng.integers(0, nq, 50).astype(np.int32)
    tkey = rng.integers(0, nt, 50).astype(np.int32)
    out = _core.fill_pair_rows(qkey, tkey, rows, np.arange(nt, dtype=np.int64), tables, np.zeros(0, np.int64),
                               np.zeros((0, 6), np.float32), 1)
    np.testing.assert_array_equal(out.T, tables[rows[qkey], tkey])


def test_engine_calls_check_their_bounds():
    tables = np.zeros((2, 3, 6), np.float32)
    keys = np.zeros(4, np.int32)
    ok = dict(table_of=np.array([0, 1], np.int64), tool_of=np.array([0, 2], np.int64), tables=tables,
              inverse=np.zeros(0, np.int64), grouped=np.zeros((0, 6), np.float32), threads=1)
    assert _core.fill_pair_rows(keys, keys, **ok).shape == (6, 4)
    with pytest.raises(ValueError, match="qkey"):
        _core.fill_pair_rows(np.array([0, 5], np.int32), keys[:2], **ok)
    with pytest.raises(ValueError, match="tool_of"):
        _core.fill_pair_rows(keys, keys, **(ok | {"tool_of": np.array([0, 3], np.int64)}))
    with pytest.raises(ValueError, match="inverse"):
        _core.fill_pair_rows(keys, keys, **(ok | {"inverse": np.full(4, 1, np.int64)}))
    with pytest.raises(ValueError, match="out of range"):
        _core.group_pairs(np.array([0, 3]), np.array([0, 0]), 2, 5)
    with pytest.raises(ValueError, match="tool index"):
        _core.group_pairs(np.array([0, 1]), np.array([0, 9]), 2, 5)
    pp, req, bits = np.array([0, 1, 1, 2], np.int64), np.zeros(2, np.uint8), np.full(3, 15, np.uint8)
    params = (1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.5, 0.1, 0.0, 0.5, False)
    need = [np.zeros((1, 3), np.float32)] * 3
    args = (need, np.array([0, 1]), np.zeros((0, 2), np.float32), np.array([0, 0]), np.zeros(1, np.uint8))
    _core.score_whole_catalogue(*args, np.array([1]), pp, req, bits, params, 1, tables)
    assert tables[1, :, 0].tolist() == pytest.approx([0.0] * 3) and not tables[0].any()
    with pytest.raises(ValueError, match="rows"):
        _core.score_whole_catalogue(*args, np.array([2]), pp, req, bits, params, 1, tables)
    with pytest.raises(ValueError, match="writeable"):
        frozen = tables.copy()
        frozen.flags.writeable = False
        _core.score_whole_catalogue(*args, np.array([0]), pp, req, bits, params, 1, frozen)
    with pytest.raises(ValueError, match="tables"):
        _core.score_whole_catalogue(*args, np.array([0]), pp, req, bits, params, 1, tables.astype(np.float64))
    one = np.zeros(1, np.int64)
    with pytest.raises(ValueError, match="need_off"):
        _core.score_packed_pairs(one, one, one + 5, one, one + 1, one, np.zeros(1, np.uint8),
                                 np.zeros((2, 3), np.float32), np.zeros(0, np.float32), pp, req, bits, params, 1)
    with pytest.raises(ValueError, match="tool out of range"):
        _core.score_packed_pairs(one, one + 3, one, one, one + 1, one, np.zeros(1, np.uint8),
                                 np.zeros((2, 3), np.float32), np.zeros(0, np.float32), pp, req, bits, params, 1)
    # score_packed_pairs checks the parameter table's entries of the tools its pairs name
    # (a search's few hundred), not the whole table per call.
    pairs = (one, one + 1, one, one, one + 1, one, np.zeros(1, np.uint8), np.zeros((2, 3), np.float32),
             np.zeros(0, np.float32))
    for bad_pp, what in ((np.array([0, 1, 0, 2], np.int64), "param_ptr decreases"),
                         (np.array([0, 1, 3, 3], np.int64), "param_required"),
                         (np.array([0, -1, 1, 2], np.int64), "param_ptr decreases")):
        with pytest.raises(ValueError, match=what):
            _core.score_packed_pairs(*pairs, bad_pp, req, bits, params, 1)
    got = _core.score_packed_pairs(*pairs, pp, req, bits, params, 1)
    assert got.shape == (1, 6) and got[0, 0] == pytest.approx(0.0)


def test_score_process_imports_neither_numba_nor_pandas(tmp_path):
    """``toolsift score`` on a BM25 index: the batch path is the engine's, so neither
    Numba (~0.5-1 CPU-second to import, with SciPy) nor pandas is loaded."""
    from toolsift.adapters import load_catalog

    tools = load_catalog(dataset("mftr-apibank") / "dataset/from_toolret/apibank/tools.json")
    ToolIndex.build(tools, preset="bm25").save(tmp_path / "idx")
    ids = [t.id for t in tools]
    structured = query_json(Query(needs=(ToolNeed("book a flight", "book a flight", "flight booking"),)))
    pq.write_table(pa.table({"query": ["send an email", structured] * 50, "tool_id": (ids * 2)[:100]}),
                   tmp_path / "pairs.parquet")
    code = ("import sys; from toolsift.cli import main; rc = main(['score', sys.argv[1], sys.argv[2], sys.argv[3], "
            "'--quiet']); print(sorted(m for m in ('numba', 'pandas', 'scipy') if m in sys.modules)); sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "idx"), str(tmp_path / "pairs.parquet"),
                           str(tmp_path / "out.parquet")], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]"
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.num_rows == 100 and not np.isnan(out["score"].to_numpy()).any()


def test_expected_rows_builds_tables_early_with_the_same_scores():
    """A known row count projects each query's rows over the input: queries that will
    recur get their tables in the first batch, and every value stays bit-identical."""
    tools, texts = _queries("apibank", 6)
    index = ToolIndex.build(tools, preset="bm25")
    ids = [t.id for t in index.catalog]
    # 101 tools: a table after 25 rows; ~11 of each query's 110 rows are in the first batch.
    qi, ti = _pairs(texts, len(ids), per_query=100, seed=2)
    table = pa.table({"query": [texts[i] for i in qi], "tool_id": [ids[i] for i in ti]})
    batches = table.to_batches(max_chunksize=table.num_rows // 10)
    plain, early = PairScorer(index), PairScorer(index, expected_rows=table.num_rows)
    first = [s.score_batch(batches[0]) for s in (plain, early)]
    assert not (plain.tables.slot_of_row >= 0).any() and (early.tables.slot_of_row >= 0).sum() == len(texts)
    outs = [pa.Table.from_batches([f] + [s.score_batch(b) for b in batches[1:]]) for f, s in zip(first, (plain, early))]
    for name in SCORE_COLUMNS:
        assert np.array_equal(outs[0][name].to_numpy(), outs[1][name].to_numpy()), name
