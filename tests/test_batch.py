"""Batch scoring over Arrow: equal to ``ToolIndex.score_pairs`` and to the kernel's NumPy
twin, whatever the batch size, row order or caching path; bad inputs get clear errors."""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pytest

from toolsift import ToolIndex
from toolsift.batch import (SCORE_COLUMNS, BatchInputError, BatchRowError, PairScorer, rank_table, score_batches,
                            score_table)
from toolsift.batch.pairs import group_pairs
from toolsift.batch.queries import query_json
from toolsift.kernels import score_candidates_reference
from toolsift.search import retrievers
from toolsift.search.candidates import pack
from toolsift.search.plan import plan_queries

from .conftest import dataset

warnings.filterwarnings("ignore", category=UserWarning, module="toolsift")


@pytest.fixture(scope="module")
def apibank():
    from toolsift.adapters import load_catalog
    from toolsift.adapters.benchmark import load_queries

    root = dataset("mftr-apibank") / "dataset"
    tools = load_catalog(root / "augmented_tools/apibank/gpt-4o-mini_tools.json")
    queries = [q for k in range(5) for q in load_queries(root / f"train_and_test/apibank/fold_{k}/test_queries.json")]
    return ToolIndex.build(tools), queries


@pytest.fixture(scope="module")
def pairs(apibank):
    """Structured and raw queries in scattered rows, every (query, tool) pair repeated."""
    index, queries = apibank
    texts = [query_json(q.rewritten) for q in queries[:30]] + [q.text for q in queries[:30]]
    ids = [t.id for t in index.catalog]
    rng = np.random.default_rng(7)
    n = 12_000
    qi = rng.integers(0, len(texts), n)
    ti = rng.integers(0, len(ids), n)
    table = pa.table({"query_id": qi.astype(np.int64), "query": [texts[i] for i in qi],
                      "tool_id": [ids[i] for i in ti], "label": rng.random(n)})
    return table, texts, ids, qi, ti


def _expected(index, texts, ids, qi, ti) -> np.ndarray:
    import json

    out = np.empty(qi.size, np.float32)
    for j, text in enumerate(texts):
        rows = np.flatnonzero(qi == j)
        query = json.loads(text) if text.startswith("{") else text
        out[rows] = index.score_pairs(query, [ids[i] for i in ti[rows]])
    return out


@pytest.mark.parametrize("batch_size,table_mb", [(12_000, 0), (997, 0), (4096, 64), (50_000, 64)])
def test_scores_equal_score_pairs(apibank, pairs, batch_size, table_mb):
    index, _ = apibank
    table, texts, ids, qi, ti = pairs
    out = score_table(index, table, batch_size=batch_size, table_mb=table_mb)
    assert out.num_rows == table.num_rows
    assert out.column_names == ["query_id", "tool_id", "label", *SCORE_COLUMNS]
    assert all(out.schema.field(c).type == pa.float32() for c in SCORE_COLUMNS)
    # Rows stay in input order and the carried columns are untouched.
    assert out["query_id"].equals(table["query_id"]) and out["label"].equals(table["label"])
    np.testing.assert_array_equal(out["score"].to_numpy(), _expected(index, texts, ids, qi, ti))


def test_tables_and_grouped_paths_are_bit_identical(apibank, pairs):
    index, _ = apibank
    table = pairs[0]
    grouped = score_table(index, table, table_mb=0)
    # A tiny share gives every query its full-catalogue table on its first batch.
    tabled = list(PairScorer(index, table_mb=64, table_share=1e-9).score_batch(b)
                  for b in table.to_batches(max_chunksize=3000))
    tabled = pa.Table.from_batches(tabled)
    for c in SCORE_COLUMNS:
        assert np.array_equal(grouped[c].to_numpy(), tabled[c].to_numpy()), c


def test_fields_and_penalty_equal_the_numpy_twin(apibank, pairs):
    """Every output column against the plain-NumPy twin fed by the search path's own
    similarities (plan and pack per query, no batch code involved)."""
    import json

    index, _ = apibank
    table, texts, ids, qi, ti = pairs
    out = score_table(index, table)
    st, cfg = index._state, index.config
    fr = retrievers(st, cfg)
    for j in (0, 1, 29, 30, 59):
        rows = np.flatnonzero(qi == j)
        tools = np.unique(ti[rows]).astype(np.int64)
        query = json.loads(texts[j]) if texts[j].startswith("{") else texts[j]
        from toolsift.search import as_query, is_raw

        q = as_query(query, "q")
        plan = plan_queries(st, cfg, [q])
        c = pack(st, plan, fr, np.array([0, tools.size], np.int64), tools)
        # Raw text and structured queries are scored with their own weights.
        ref, terms = score_candidates_reference(c.query, c.tool, c.need_off, c.ap_off, c.n_needs, c.n_args,
                                                c.penalize, c.need_sims, c.ap_sims, st.param_ptr,
                                                st.param_required, cfg.params_for(not is_raw(q)),
                                                tool_fields=st.tool_bits,
                                                breakdown=True)
        pos = np.searchsorted(tools, ti[rows])
        np.testing.assert_allclose(out["score"].to_numpy()[rows], ref[pos], rtol=1e-5, atol=1e-6)
        for k, name in enumerate(SCORE_COLUMNS[1:]):
            np.testing.assert_allclose(out[name].to_numpy()[rows], terms[pos, k], rtol=1e-5, atol=1e-6)
    assert (out["penalty"].to_numpy()[qi < 30] >= 0).all()


def test_group_pairs_against_numpy_unique():
    rng = np.random.default_rng(3)
    for nq, nt, n in ((1, 1, 5), (7, 50, 1000), (40, 9, 3000), (5, 2000, 400)):
        q = rng.integers(-1, nq, n)
        t = rng.integers(0, nt, n)
        ptr, tools, inverse = group_pairs(q, t, nq, nt)
        v = q >= 0
        keys = q[v] * nt + t[v]
        flat = np.repeat(np.arange(nq), np.diff(ptr)) * nt + tools
        np.testing.assert_array_equal(flat, np.unique(keys))
        np.testing.assert_array_equal(flat[inverse[v]], keys)
        assert (inverse[~v] == -1).all()


def test_small_query_store_restarts_without_changing_results(apibank, pairs):
    index, _ = apibank
    table, texts, ids, qi, ti = pairs
    out = score_table(index, table, batch_size=500, max_queries=40)
    np.testing.assert_array_equal(out["score"].to_numpy(), _expected(index, texts, ids, qi, ti))


def test_streams_batches_from_a_reader(apibank, pairs):
    index, _ = apibank
    table = pairs[0]
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=5000))
    got = list(score_batches(index, reader, batch_size=2000))
    assert [b.num_rows for b in got] == [2000, 2000, 1000] * 2 + [2000]
    assert pa.Table.from_batches(got)["score"].equals(score_table(index, table)["score"])


def test_rank_equals_search(apibank):
    index, queries = apibank
    texts = [query_json(q.rewritten) for q in queries[:5]] + [q.text for q in queries[5:10]]
    table = pa.table({"query_id": [q.id for q in queries[:10]], "query": texts})
    out = rank_table(index, table, k=4)
    assert out.num_rows == 40
    import json

    for i, text in enumerate(texts):
        hits = index.search(json.loads(text) if text.startswith("{") else text, k=4, explain=True)
        rows = out.filter(pa.compute.equal(out["query_id"], queries[i].id))
        assert rows["tool_id"].to_pylist() == [h.id for h in hits]
        assert rows["rank"].to_pylist() == [1, 2, 3, 4]
        np.testing.assert_array_equal(rows["score"].to_numpy(), np.float32([h.score for h in hits]))
        np.testing.assert_array_equal(rows["penalty"].to_numpy(), np.float32([h.penalty for h in hits]))


# ------------------------------------------------------------------ bad inputs

def _bad_table(index, queries):
    ids = [t.id for t in index.catalog]
    good = query_json(queries[0].rewritten)
    return pa.table({
        "query": [good, "{not json", good, None, '{"tool_needs": "x"}', "find the weather", good],
        "tool_id": [ids[0], ids[1], "no_such_tool", ids[2], ids[3], None, ids[4]],
    })


def test_bad_rows_raise_naming_the_row(apibank):
    index, queries = apibank
    table = _bad_table(index, queries)
    with pytest.raises(BatchRowError) as err:
        score_table(index, table)
    assert err.value.row == 1 and err.value.column == "query"
    assert "malformed structured query JSON" in str(err.value)
    # Row numbers count across batches.
    with pytest.raises(BatchRowError) as err:
        score_table(index, table.slice(2), batch_size=1)
    assert err.value.row == 0 and "unknown tool id 'no_such_tool'" in str(err.value)


def test_bad_rows_get_an_error_column(apibank):
    index, queries = apibank
    table = _bad_table(index, queries)
    out = score_table(index, table, on_error="column")
    errors = out["error"].to_pylist()
    assert errors[0] is None and errors[6] is None
    assert errors[1].startswith("query: malformed structured query JSON: ")
    assert errors[2] == "tool_id: unknown tool id 'no_such_tool'"
    assert errors[3] == "query: the query is null"
    assert errors[4].startswith("query: query.tool_needs: expected a list of tool needs")
    assert errors[5] == "tool_id: the tool id is null"
    score = out["score"]
    assert score.null_count == 5 and score[0].is_valid and score[6].is_valid
    good = score_table(index, table.take([0, 6]))["score"].to_pylist()
    assert [score[0].as_py(), score[6].as_py()] == good


def test_json_query_format_rejects_non_objects(apibank):
    index, _ = apibank
    table = pa.table({"query": ['["a list"]'], "tool_id": [index.catalog[0].id]})
    out = score_table(index, table, on_error="column", query_format="json")
    assert "structured query JSON must be an object, got list" in out["error"][0].as_py()
    assert score_table(index, table, query_format="text")["score"].null_count == 0


def test_missing_and_mistyped_columns(apibank):
    index, _ = apibank
    with pytest.raises(BatchInputError, match="missing tool column 'tool_id'.*columns: 'query', 'tool'"):
        score_table(index, pa.table({"query": ["a"], "tool": ["b"]}))
    with pytest.raises(BatchInputError, match="missing query column 'q'"):
        score_table(index, pa.table({"query": ["a"], "tool_id": ["b"]}), query_column="q")
    with pytest.raises(BatchInputError, match="column 'tool_id' must hold strings.*got int64"):
        score_table(index, pa.table({"query": ["a"], "tool_id": [3]}))
    with pytest.raises(BatchInputError, match="clash"):
        score_table(index, pa.table({"query": ["a"], "tool_id": ["b"], "score": [1.0]}))
    with pytest.raises(BatchInputError, match="on_error"):
        score_table(index, pa.table({"query": ["a"], "tool_id": ["b"]}), on_error="ignore")


def test_empty_table_gives_an_empty_result(apibank):
    index, _ = apibank
    empty = pa.table({"query": pa.array([], pa.string()), "tool_id": pa.array([], pa.string())})
    out = score_table(index, empty, on_error="column")
    assert out.num_rows == 0
    assert out.column_names == ["tool_id", *SCORE_COLUMNS, "error"]


def test_parquet_dataset_and_file_sources(apibank, pairs, tmp_path):
    import pyarrow.dataset as pds
    import pyarrow.parquet as pq

    index, _ = apibank
    table = pairs[0]
    want = score_table(index, table)["score"]
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(table.slice(0, 5000), folder / "a.parquet")
    pq.write_table(table.slice(5000), folder / "b.parquet")
    for source in (pds.dataset(folder, format="parquet"), folder, folder / "a.parquet"):
        got = score_table(index, source, batch_size=3000)
        n = got.num_rows
        assert n in (5000, table.num_rows)
        assert got["score"].equals(want.slice(0, n))


def test_rank_error_rows(apibank):
    index, queries = apibank
    table = pa.table({"query": [queries[0].text, "{oops", None]})
    out = rank_table(index, table, k=2, on_error="column")
    assert out["query_id"].to_pylist() == [0, 0, 1, 2]
    assert out["rank"].to_pylist() == [1, 2, None, None]
    assert "malformed structured query JSON" in out["error"][2].as_py()
    assert out["error"][3].as_py() == "query: the query is null"
    with pytest.raises(BatchRowError) as err:
        rank_table(index, table, k=2)
    assert err.value.row == 1
