"""``toolsift score`` / ``toolsift rank``: every file format, the same scores as the Python
API, and one-line errors (no traceback) for bad input. The cases run through the CLI's
entry in this process (tests/_cli.py); one success and one error also as real processes."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from toolsift import ToolIndex
from toolsift.batch import SCORE_COLUMNS, score_table
from toolsift.batch.queries import query_json

from ._cli import run as _run
from .conftest import dataset


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from toolsift.adapters import load_catalog
    from toolsift.adapters.benchmark import load_queries

    root = dataset("mftr-apibank") / "dataset"
    index = ToolIndex.build(load_catalog(root / "augmented_tools/apibank/gpt-4o-mini_tools.json"))
    tmp = tmp_path_factory.mktemp("cli")
    index.save(tmp / "index")
    queries = load_queries(root / "train_and_test/apibank/fold_1/test_queries.json")
    texts = [query_json(q.rewritten) for q in queries[:8]] + [q.text for q in queries[:8]]
    ids = [t.id for t in index.catalog]
    rng = np.random.default_rng(5)
    n = 3000
    table = pa.table({"query_id": [f"q{i}" for i in rng.integers(0, 99, n)],
                      "query": [texts[i] for i in rng.integers(0, len(texts), n)],
                      "tool_id": [ids[i] for i in rng.integers(0, len(ids), n)]})
    qtable = pa.table({"query_id": [q.id for q in queries[:6]], "query": texts[:3] + texts[8:11]})
    return tmp, index, table, qtable


def _write(table: pa.Table, path) -> None:
    ext = path.suffix
    if ext == ".parquet":
        pq.write_table(table, path)
    elif ext == ".arrow":
        with pa.ipc.new_file(path, table.schema) as w:
            w.write_table(table)
    elif ext == ".csv":
        pcsv.write_csv(table, path)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in table.to_pylist()))


def _read(path) -> pa.Table:
    ext = path.suffix
    if ext == ".parquet":
        return pq.read_table(path)
    if ext == ".arrow":
        return pa.ipc.open_file(path).read_all()
    if ext == ".csv":
        return pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
            column_types={c: pa.float32() for c in SCORE_COLUMNS}))
    return pa.Table.from_pylist([json.loads(line) for line in path.read_text().splitlines()])


@pytest.mark.parametrize("src,dst", [(".parquet", ".parquet"), (".arrow", ".csv"), (".csv", ".jsonl"),
                                     (".jsonl", ".arrow")])
def test_score_every_format(setup, src, dst):
    tmp, index, table, _ = setup
    inp, out = tmp / f"pairs{src}", tmp / f"out_{src[1:]}{dst}"
    _write(table, inp)
    real = (src, dst) == (".parquet", ".parquet")  # one success as a real process
    proc = _run("score", str(tmp / "index"), str(inp), str(out), "--quiet", real=real)
    assert proc.returncode == 0, proc.stderr
    assert "scored (local) 3,000 pairs -> 3,000 rows" in proc.stdout
    got = _read(out)
    want = score_table(index, table)
    assert got["query_id"].to_pylist() == table["query_id"].to_pylist()
    for c in SCORE_COLUMNS:
        # Text formats round-trip float32 through their decimal form.
        np.testing.assert_allclose(np.asarray(got[c].to_pylist(), np.float32), want[c].to_numpy(), rtol=1e-6)


def test_rank_writes_top_k_rows(setup):
    tmp, index, _, qtable = setup
    _write(qtable, tmp / "queries.parquet")
    proc = _run("rank", str(tmp / "index"), str(tmp / "queries.parquet"), str(tmp / "ranked.parquet"), "-k", "3",
                "--quiet")
    assert proc.returncode == 0, proc.stderr
    got = pq.read_table(tmp / "ranked.parquet")
    assert got.num_rows == 18 and got["rank"].to_pylist()[:3] == [1, 2, 3]
    first = json.loads(qtable["query"][0].as_py())
    assert got["tool_id"].to_pylist()[:3] == [h.id for h in index.search(first, k=3)]


def test_missing_column_is_one_line_without_traceback(setup):
    tmp, _, table, _ = setup
    _write(table.rename_columns(["query_id", "text", "tool_id"]), tmp / "renamed.parquet")
    # One error as a real process: exit status 2 and nothing but the line on stderr.
    proc = _run("score", str(tmp / "index"), str(tmp / "renamed.parquet"), str(tmp / "x.parquet"), real=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith("toolsift: error: missing query column 'query'")
    assert "--query-column" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp / "x.parquet").exists()
    # Naming the column fixes it.
    ok = _run("score", str(tmp / "index"), str(tmp / "renamed.parquet"), str(tmp / "x.parquet"),
              "--query-column", "text", "--quiet")
    assert ok.returncode == 0, ok.stderr


def test_bad_row_is_named_and_no_partial_output(setup):
    tmp, index, table, _ = setup
    bad = table.slice(0, 10).set_column(2, "tool_id", pa.array(["nope"] + table["tool_id"].to_pylist()[1:10]))
    _write(pa.concat_tables([table, bad]), tmp / "bad.csv")
    proc = _run("score", str(tmp / "index"), str(tmp / "bad.csv"), str(tmp / "bad_out.parquet"), "--quiet")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "row 3000, column 'tool_id': unknown tool id 'nope'" in proc.stderr
    assert not (tmp / "bad_out.parquet").exists()
    col = _run("score", str(tmp / "index"), str(tmp / "bad.csv"), str(tmp / "bad_out.parquet"), "--quiet",
               "--on-error", "column")
    assert col.returncode == 0 and "1 rows with errors" in col.stdout


def test_unknown_extension_and_missing_file(setup):
    tmp, *_ = setup
    proc = _run("score", str(tmp / "index"), str(tmp / "nothing.parquet"), str(tmp / "o.parquet"))
    assert proc.returncode == 2 and "no such file" in proc.stderr
    (tmp / "pairs.txt").write_text("x")
    proc = _run("score", str(tmp / "index"), str(tmp / "pairs.txt"), str(tmp / "o.parquet"))
    assert proc.returncode == 2 and "unknown file type '.txt'" in proc.stderr


def test_compression_option(setup):
    tmp, index, table, qtable = setup
    _write(table, tmp / "pairs_c.parquet")
    out = tmp / "zstd.parquet"
    proc = _run("score", str(tmp / "index"), str(tmp / "pairs_c.parquet"), str(out), "--compression", "zstd",
                "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert pq.ParquetFile(out).metadata.row_group(0).column(0).compression == "ZSTD"
    for c in SCORE_COLUMNS:
        assert np.array_equal(pq.read_table(out)[c].to_numpy(), score_table(index, table)[c].to_numpy()), c
    _write(qtable, tmp / "queries_c.parquet")
    ranked = _run("rank", str(tmp / "index"), str(tmp / "queries_c.parquet"), str(tmp / "ranked_c.parquet"), "-k",
                  "2", "--compression", "none", "--quiet")
    assert ranked.returncode == 0, ranked.stderr
    assert pq.ParquetFile(tmp / "ranked_c.parquet").metadata.row_group(0).column(0).compression == "UNCOMPRESSED"
    # A codec the output format cannot use: one line, exit status 2, no output.
    bad = _run("score", str(tmp / "index"), str(tmp / "pairs_c.parquet"), str(tmp / "o.csv"), "--compression", "lz4")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "csv output is written uncompressed" in bad.stderr and not (tmp / "o.csv").exists()
    unknown = _run("score", str(tmp / "index"), str(tmp / "pairs_c.parquet"), str(out), "--compression", "gzip")
    assert unknown.returncode == 2 and "invalid choice: 'gzip'" in unknown.stderr
