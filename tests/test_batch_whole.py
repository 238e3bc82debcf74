"""The whole file pipeline (Parquet -> Parquet: reader, scorer and writer threads, the
grouped and the full-catalogue-table paths, many batches and row groups) against
``ToolIndex.score_pairs``, an independent path (the search code's own plan, pack and
kernel, one query at a time), on APIGen's real catalogue and queries: shuffled rows,
queries recurring in many rows next to queries seen a handful of times, repeated pairs."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from toolsift import ToolIndex
from toolsift.batch import SCORE_COLUMNS, BatchInputError
from toolsift.batch.files import score_file
from toolsift.batch.queries import query_json

from .conftest import dataset

pytestmark = pytest.mark.slow  # left out of the fast tier (python -m pytest -m "not slow")

warnings.filterwarnings("ignore", category=UserWarning, module="toolsift")


@pytest.fixture(scope="module")
def apigen():
    from toolsift.evaluate import MftrDataset

    ds = MftrDataset.load(dataset("mftr-apigen"))
    return ToolIndex.build(ds.raw_tools), ds


def _write(path, qi, ti, texts, ids, qids, rows) -> None:
    """Dictionary-encoded columns in row groups of 20,000 rows, as pyarrow writes them."""
    table = pa.table({"query_id": pa.DictionaryArray.from_arrays(qi.astype(np.int32), pa.array(qids)),
                      "query": pa.DictionaryArray.from_arrays(qi.astype(np.int32), pa.array(texts)),
                      "tool_id": pa.DictionaryArray.from_arrays(ti.astype(np.int32), pa.array(ids)),
                      "row": rows})
    pq.write_table(table, path, row_group_size=20_000)


@pytest.fixture(scope="module")
def pairs(apigen, tmp_path_factory):
    index, ds = apigen
    texts = [query_json(q.rewritten) for q in ds.queries[:48]] + [q.text for q in ds.queries[48:60]]
    qids = [f"q{i}" for i in range(len(texts))]
    ids = [t.id for t in index.catalog]
    rng = np.random.default_rng(11)
    # Most queries recur in ~1,500 rows (they get a full-catalogue table mid-stream, once
    # seen in a quarter of the catalogue's size); every sixth in only 7 (never a table).
    per = np.where(np.arange(len(texts)) % 6 == 0, 7, 1500)
    qi = np.repeat(np.arange(len(texts)), per)
    ti = rng.integers(0, len(ids), qi.size)
    again = rng.integers(0, qi.size, 3000)  # repeated (query, tool) pairs
    qi, ti = np.concatenate([qi, qi[again]]), np.concatenate([ti, ti[again]])
    order = rng.permutation(qi.size)
    qi, ti = qi[order], ti[order]
    tmp = tmp_path_factory.mktemp("whole")
    rows = np.arange(qi.size, dtype=np.int64)
    _write(tmp / "pairs.parquet", qi, ti, texts, ids, qids, rows)
    shuffle = rng.permutation(qi.size)
    _write(tmp / "shuffled.parquet", qi[shuffle], ti[shuffle], texts, ids, qids, rows[shuffle])
    return tmp, texts, ids, qi, ti, shuffle


def _score_pairs(index, texts, ids, qi, ti) -> np.ndarray:
    out = np.full(qi.size, np.nan, np.float32)
    for j, text in enumerate(texts):
        rows = np.flatnonzero(qi == j)
        query = json.loads(text) if text.startswith("{") else text
        out[rows] = index.score_pairs(query, [ids[i] for i in ti[rows]])
    return out


def test_file_pipeline_equals_score_pairs(apigen, pairs):
    index, _ = apigen
    tmp, texts, ids, qi, ti, _ = pairs
    res = score_file(index, tmp / "pairs.parquet", tmp / "out.parquet", batch_size=8192, threads=2)
    assert res.rows_in == res.rows_out == qi.size and res.errors == 0
    out = pq.read_table(tmp / "out.parquet")
    assert out.column_names == ["query_id", "tool_id", "row", *SCORE_COLUMNS]
    np.testing.assert_array_equal(out["row"].to_numpy(), np.arange(qi.size))
    assert out["tool_id"].to_pylist() == [ids[i] for i in ti]
    # Bit for bit, every row, whichever path (grouped pairs or a table) answered it.
    np.testing.assert_array_equal(out["score"].to_numpy(), _score_pairs(index, texts, ids, qi, ti))
    for c in SCORE_COLUMNS:
        assert not out.schema.field(c).nullable and out[c].null_count == 0
        assert np.isfinite(out[c].to_numpy()).all(), c


def test_shuffled_rows_and_paths_give_the_same_values(apigen, pairs):
    """Shuffling the rows, building no tables at all, or a table for every query on its
    first batch permutes the output rows and changes nothing else, in every column."""
    index, _ = apigen
    tmp, _, _, qi, _, shuffle = pairs
    score_file(index, tmp / "pairs.parquet", tmp / "base.parquet", batch_size=8192)
    base = pq.read_table(tmp / "base.parquet")
    score_file(index, tmp / "shuffled.parquet", tmp / "shuffled_out.arrow", batch_size=5000, threads=1,
               compression="zstd")
    score_file(index, tmp / "pairs.parquet", tmp / "grouped.parquet", batch_size=30_000, table_mb=0,
               compression="none")
    score_file(index, tmp / "pairs.parquet", tmp / "tabled.parquet", batch_size=8192, table_share=1e-9,
               compression="snappy")
    import pyarrow.ipc as ipc

    shuffled = ipc.open_file(tmp / "shuffled_out.arrow").read_all()
    grouped = pq.read_table(tmp / "grouped.parquet")
    tabled = pq.read_table(tmp / "tabled.parquet")
    np.testing.assert_array_equal(shuffled["row"].to_numpy(), shuffle)
    for c in SCORE_COLUMNS:
        want = base[c].to_numpy()
        assert np.array_equal(shuffled[c].to_numpy(), want[shuffle]), c
        assert np.array_equal(grouped[c].to_numpy(), want), c
        assert np.array_equal(tabled[c].to_numpy(), want), c


@pytest.mark.parametrize("codec,ext", [("lz4", ".parquet"), ("zstd", ".parquet"), ("none", ".parquet"),
                                       ("snappy", ".parquet"), ("lz4", ".arrow"), ("none", ".csv")])
def test_compression_codecs(apigen, pairs, codec, ext):
    index, _ = apigen
    tmp = pairs[0]
    src = tmp / "small.parquet"
    if not src.exists():
        pq.write_table(pq.read_table(tmp / "pairs.parquet").slice(0, 3000), src)
    out = tmp / f"small_{codec}{ext}"
    score_file(index, src, out)  # the format's default codec
    default = _read(out)
    score_file(index, src, out, compression=codec)
    got = _read(out)
    if ext == ".parquet":
        want = "UNCOMPRESSED" if codec == "none" else codec.upper()
        assert pq.ParquetFile(out).metadata.row_group(0).column(0).compression == want
    for c in SCORE_COLUMNS:
        assert np.array_equal(np.asarray(got[c], np.float32), np.asarray(default[c], np.float32)), c


def _read(path):
    if path.suffix == ".parquet":
        return pq.read_table(path)
    if path.suffix == ".arrow":
        import pyarrow.ipc as ipc

        return ipc.open_file(path).read_all()
    import pyarrow.csv as pcsv

    return pcsv.read_csv(path)


@pytest.mark.parametrize("codec,ext,match", [("gzip", ".parquet", "compression must be one of"),
                                             ("LZ5", ".arrow", "compression must be one of"),
                                             ("snappy", ".arrow", "Arrow IPC files take none, lz4 or zstd"),
                                             ("zstd", ".csv", "csv output is written uncompressed"),
                                             ("lz4", ".jsonl", "jsonl output is written uncompressed")])
def test_bad_compression_is_a_clear_error_before_any_work(apigen, pairs, codec, ext, match):
    index, _ = apigen
    tmp = pairs[0]
    out = tmp / f"bad{ext}"
    with pytest.raises(BatchInputError, match=match):
        score_file(index, tmp / "pairs.parquet", out, compression=codec)
    assert not out.exists() and not list(tmp.glob(f".bad{ext}*.part"))


def test_parquet_reader_memory_does_not_grow_with_the_file(tmp_path):
    """Arrow memory held while streaming a Parquet file stays at a few row groups: with
    pyarrow's pre-buffering every column chunk read stayed allocated until the end."""
    from toolsift.batch.io import open_source

    rng = np.random.default_rng(5)
    n_groups, rows = 48, 20_000  # 48 row groups of ~320 kB of incompressible values
    table = pa.table({"a": rng.random(n_groups * rows), "b": rng.random(n_groups * rows)})
    pq.write_table(table, tmp_path / "big.parquet", row_group_size=rows, compression="none")
    base = pa.total_allocated_bytes()
    peak = 0
    for batch in open_source(tmp_path / "big.parquet", batch_size=rows):
        peak = max(peak, pa.total_allocated_bytes() - base)
        del batch
    group_bytes = rows * 2 * 8
    assert peak < 6 * group_bytes, f"{peak / 2**20:.1f} MB held for {n_groups} row groups"
