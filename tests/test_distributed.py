"""Ray Data scale-out: a local 2-CPU Ray cluster gives the single-process scores bit for
bit (including error rows), through the dataset API and the file front end (slow); the
workers' batch callable and the error mapping without a cluster (fast)."""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import ray

from toolsift import ToolIndex
from toolsift.batch import SCORE_COLUMNS, score_table
from toolsift.batch.files import score_file
from toolsift.batch.queries import query_json

from .conftest import dataset

warnings.filterwarnings("ignore", category=UserWarning, module="toolsift")


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    from toolsift.adapters import load_catalog
    from toolsift.adapters.benchmark import load_queries

    root = dataset("mftr-apibank") / "dataset"
    index = ToolIndex.build(load_catalog(root / "augmented_tools/apibank/gpt-4o-mini_tools.json"))
    path = tmp_path_factory.mktemp("ray") / "index"
    index.save(path)
    queries = load_queries(root / "train_and_test/apibank/fold_0/test_queries.json")
    texts = [query_json(q.rewritten) for q in queries[:15]] + [q.text for q in queries[:15]] + ["{broken"]
    ids = [t.id for t in index.catalog] + ["not_a_tool"]
    rng = np.random.default_rng(11)
    n = 6000
    table = pa.table({"row": np.arange(n), "query": [texts[i] for i in rng.integers(0, len(texts), n)],
                      "tool_id": [ids[i] for i in rng.integers(0, len(ids), n)]})
    return path, table


def _same(a: pa.Table, b: pa.Table) -> None:
    for c in (*SCORE_COLUMNS, "error"):
        assert a[c].null_count == b[c].null_count, c
        if c == "error":
            assert a[c].to_pylist() == b[c].to_pylist()
        else:
            assert np.array_equal(a[c].to_numpy(zero_copy_only=False), b[c].to_numpy(zero_copy_only=False),
                                  equal_nan=True), c


@pytest.mark.slow  # a local Ray cluster: left out of the fast tier
def test_ray_dataset_equals_single_process(cluster, saved):
    from toolsift.distributed import score_dataset

    path, table = saved
    local = score_table(ToolIndex.load(path), table, on_error="column")
    ds = ray.data.from_arrow(table).repartition(4)
    out = score_dataset(ds, path, workers=2, cpus_per_worker=0.5, batch_size=700, on_error="column")
    got = pa.concat_tables(ray.get(out.to_arrow_refs())).sort_by("row")
    assert got.num_rows == table.num_rows and got["row"].to_pylist() == list(range(table.num_rows))
    assert got["error"].null_count < table.num_rows  # some rows are bad on purpose ...
    assert local["score"].null_count > 0  # ... and get null scores on both sides
    _same(got, local)


@pytest.mark.slow  # a local Ray cluster: left out of the fast tier
def test_ray_file_engine_equals_local_file(cluster, saved, tmp_path):
    from toolsift.distributed import score_file_ray

    path, table = saved
    src = tmp_path / "pairs.parquet"
    pq.write_table(table, src, row_group_size=1000)
    score_file(path, src, tmp_path / "local.parquet", on_error="column")
    res = score_file_ray(path, src, tmp_path / "ray.parquet", workers=2, batch_size=900, on_error="column")
    assert res.rows_in == table.num_rows and res.errors > 0
    got, local = pq.read_table(tmp_path / "ray.parquet"), pq.read_table(tmp_path / "local.parquet")
    assert got["row"].to_pylist() == local["row"].to_pylist()  # input order kept
    _same(got, local)


def test_worker_errors_come_back_as_toolsift_errors():
    """Ray Data re-raises a worker's exception with only its traceback text."""
    from toolsift.distributed import _toolsift_cause

    text = ("ray::MapWorker.submit()\nTraceback (most recent call last):\n    raise BatchRowError(...)\n"
            "toolsift.batch.columns.BatchRowError: row 3, column 'tool_id': unknown tool id 'x'\n")
    got = _toolsift_cause(RuntimeError(text))
    assert str(got) == "on a Ray worker: row 3, column 'tool_id': unknown tool id 'x'"
    assert _toolsift_cause(RuntimeError("something else")) is None


@pytest.mark.slow  # a local Ray cluster: left out of the fast tier
def test_ray_hybrid_index_equals_single_process(cluster, saved, tmp_path):
    """Hybrid fields embed each batch's distinct queries on the worker, in batches
    that differ from the single process's: the default encoder's vectors do not
    depend on which texts share a batch, so the scores are still bit for bit equal."""
    from toolsift import IndexConfig
    from toolsift.adapters import load_catalog
    from toolsift.distributed import score_dataset

    hybrid = (("description", "hybrid"), ("parameters", "bm25"), ("response", "hybrid"), ("examples", "hybrid"))
    root = dataset("mftr-apibank") / "dataset"
    index = ToolIndex.build(load_catalog(root / "augmented_tools/apibank/gpt-4o-mini_tools.json"),
                            config=IndexConfig(retrievers=hybrid))
    index.save(tmp_path / "hybrid")
    table = saved[1].slice(0, 2000)
    local = score_table(ToolIndex.load(tmp_path / "hybrid"), table, on_error="column", batch_size=600)
    ds = ray.data.from_arrow(table).repartition(3)
    out = score_dataset(ds, tmp_path / "hybrid", workers=2, cpus_per_worker=0.5, batch_size=350, on_error="column")
    got = pa.concat_tables(ray.get(out.to_arrow_refs())).sort_by("row")
    assert got["row"].to_pylist() == list(range(table.num_rows))
    _same(got, local)


def test_the_workers_callable_scores_like_score_table(tmp_path, demo_index):
    """IndexScorer is what each Ray worker runs on its batches: the single-process scores,
    error rows included, over a batch of several record batches; an empty batch keeps the
    output schema."""
    from toolsift.distributed import IndexScorer

    demo_index.save(tmp_path / "idx")
    ids = [t.id for t in demo_index.catalog][:5] + ["not_a_tool"]
    table = pa.table({"row": np.arange(12), "query": ["send an email", "weather tomorrow", "{broken"] * 4,
                      "tool_id": ids * 2})
    scorer = IndexScorer(str(tmp_path / "idx"), on_error="column")
    got = scorer(pa.concat_tables([table.slice(0, 5), table.slice(5)]))
    local = score_table(ToolIndex.load(tmp_path / "idx"), table, on_error="column")
    assert got["row"].to_pylist() == list(range(12))
    assert 0 < got["error"].null_count < table.num_rows
    _same(got, local)
    empty = scorer(table.slice(0, 0))
    assert empty.num_rows == 0 and empty.schema.names == got.schema.names
