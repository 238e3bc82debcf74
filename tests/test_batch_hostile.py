"""Hostile inputs to ``toolsift score`` / ``toolsift rank``: every one ends as one typed
line on stderr and exit status 2, with the input bytes unchanged and no output file (nor
a stray temp file) left behind. Issue 24, items 1 and 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from toolsift import ToolIndex
from toolsift.cli import main

DEEP = '{"tool_needs": ' + "[" * 50_000 + "]" * 50_000 + "}"


@pytest.fixture(scope="module")
def base(tmp_path_factory, demo_catalog):
    """An index and one good pairs table, written once."""
    root = tmp_path_factory.mktemp("hostile")
    ToolIndex.build(demo_catalog).save(root / "index")
    ids = [t.id for t in demo_catalog][:3]
    good = pa.table({"query": ["send an email", "weather in Lisbon", "refund a payment"], "tool_id": ids})
    return root, good, ids


def _parquet(path: Path, table: pa.Table) -> None:
    pq.write_table(table, path)


def _bytes(data: bytes):
    return lambda path, good, ids: path.write_bytes(data)


def _good(ext: str):
    def make(path: Path, good: pa.Table, ids) -> None:
        if ext == ".parquet":
            _parquet(path, good)
        elif ext == ".csv":
            pcsv.write_csv(good, path)
        elif ext == ".arrow":
            with pa.ipc.new_file(path, good.schema) as w:
                w.write_table(good)
        else:
            path.write_text("".join(json.dumps(r) + "\n" for r in good.to_pylist()))
    return make


def _truncated(ext: str, keep: int):
    def make(path: Path, good: pa.Table, ids) -> None:
        _good(ext)(path, good, ids)
        path.write_bytes(path.read_bytes()[:keep])
    return make


def _table(**cols):
    return lambda path, good, ids: _parquet(path, pa.table({k: (v(ids) if callable(v) else v)
                                                            for k, v in cols.items()}))


def _parquet_dir(path: Path, good, ids) -> None:
    path.mkdir()
    (path / "part-0.parquet").write_bytes(b"not parquet at all")


# (name, input file name, how to make it, extra CLI arguments, output name or None for "out.parquet")
# The output may be a path relative to the case folder; "{in}" stands for the input path.
CASES = [
    ("empty-csv", "in.csv", _bytes(b""), [], None),
    ("blank-lines-csv", "in.csv", _bytes(b"\n\n\n"), [], None),
    ("csv-no-query-column", "in.csv", _bytes(b"text,tool_id\nhello,send_email\n"), [], None),
    ("csv-ragged-row", "in.csv", _bytes(b"query,tool_id\nhello,send_email,extra\n"), [], None),
    ("csv-bad-utf8", "in.csv", _bytes(b"query,tool_id\n\xff\xfe\xfa,send_email\n"), [], None),
    ("csv-quote-never-closed", "in.csv", _bytes(b'query,tool_id\n"hello,send_email\n'), [], None),
    ("parquet-empty-file", "in.parquet", _bytes(b""), [], None),
    ("parquet-random-bytes", "in.parquet", _bytes(os.urandom(4096)), [], None),
    ("parquet-truncated-head", "in.parquet", _truncated(".parquet", 300), [], None),
    ("parquet-truncated-tail", "in.parquet", _truncated(".parquet", -40), [], None),
    ("parquet-magic-only", "in.parquet", _bytes(b"PAR1PAR1"), [], None),
    ("parquet-list-query", "in.parquet", _table(query=[["a", "b"]], tool_id=lambda ids: ids[:1]), [], None),
    ("parquet-int-query", "in.parquet", _table(query=[1, 2], tool_id=lambda ids: ids[:2]), [], None),
    ("parquet-struct-query", "in.parquet", _table(query=[{"a": "b"}], tool_id=lambda ids: ids[:1]), [], None),
    ("parquet-no-tool-column", "in.parquet", _table(query=["hello"]), [], None),
    ("parquet-list-tool-column", "in.parquet", _table(query=["hello"], tool_id=[["x"]]), [], None),
    ("parquet-unknown-tool", "in.parquet", _table(query=["hello"], tool_id=["no_such_tool"]), [], None),
    ("parquet-empty-query", "in.parquet", _table(query=[""], tool_id=lambda ids: ids[:1]), [], None),
    ("parquet-deep-structured-query", "in.parquet", _table(query=[DEEP], tool_id=lambda ids: ids[:1]), [], None),
    ("parquet-malformed-structured-query", "in.parquet",
     _table(query=['{"tool_needs": [}'], tool_id=lambda ids: ids[:1]), [], None),
    ("parquet-structured-not-object", "in.parquet", _table(query=["[1, 2]"], tool_id=lambda ids: ids[:1]),
     ["--query-format", "json"], None),
    ("parquet-dataset-of-garbage", "in.parquet", _parquet_dir, [], None),
    ("jsonl-broken", "in.jsonl", _bytes(b'{"query": "a", "tool_id": "send_email"}\n{"query": broken\n'), [], None),
    ("jsonl-not-objects", "in.jsonl", _bytes(b"[1, 2]\n[3, 4]\n"), [], None),
    ("jsonl-bad-utf8", "in.jsonl", _bytes(b'{"query": "\xff\xfe", "tool_id": "send_email"}\n'), [], None),
    ("jsonl-mixed-types", "in.jsonl", _bytes(b'{"query": "a", "tool_id": "x"}\n{"query": 5, "tool_id": [1]}\n'),
     [], None),
    ("arrow-empty-file", "in.arrow", _bytes(b""), [], None),
    ("arrow-random-bytes", "in.arrow", _bytes(os.urandom(2048)), [], None),
    ("arrow-truncated", "in.arrow", _truncated(".arrow", 200), [], None),
    ("unknown-input-extension", "in.txt", _bytes(b"query,tool_id\n"), [], None),
    ("batch-size-zero", "in.parquet", _good(".parquet"), ["--batch-size", "0"], None),
    ("batch-size-negative", "in.parquet", _good(".parquet"), ["--batch-size", "-5"], None),
    ("output-folder-missing", "in.parquet", _good(".parquet"), [], "missing/out.parquet"),
    ("output-is-input", "in.parquet", _good(".parquet"), [], "{in}"),
    ("output-is-input-dot-path", "in.parquet", _good(".parquet"), [], "./sub/../{in}"),
    ("output-is-input-csv", "in.csv", _good(".csv"), [], "{in}"),
    ("output-is-input-jsonl", "in.jsonl", _good(".jsonl"), [], "{in}"),
    ("output-is-input-hardlink", "in.parquet", _good(".parquet"), [], "link:hard"),
    ("output-is-input-symlink", "in.parquet", _good(".parquet"), [], "link:sym"),
    ("output-is-a-directory", "in.parquet", _good(".parquet"), [], "sub"),
    ("output-unknown-extension", "in.parquet", _good(".parquet"), [], "out.txt"),
    ("output-under-proc", "in.parquet", _good(".parquet"), [], "/proc/toolsift-out.parquet"),
    ("output-inside-index", "in.parquet", _good(".parquet"), [], "index:out.parquet"),
    ("output-csv-compressed", "in.parquet", _good(".parquet"), ["--compression", "zstd"], "out.csv"),
    ("keep-missing-column", "in.parquet", _good(".parquet"), ["--keep", "nope"], None),
    ("missing-input", "absent.parquet", None, [], None),
]

RANK_CASES = [
    ("rank-empty-csv", "in.csv", _bytes(b""), [], None),
    ("rank-truncated-parquet", "in.parquet", _truncated(".parquet", 300), [], None),
    ("rank-output-is-input", "in.parquet", _good(".parquet"), [], "{in}"),
    ("rank-k-zero", "in.parquet", _good(".parquet"), ["-k", "0"], None),
    ("rank-batch-size-zero", "in.parquet", _good(".parquet"), ["--batch-size", "0"], None),
    ("rank-deep-query", "in.parquet", _table(query=[DEEP]), [], None),
    ("rank-list-query", "in.parquet", _table(query=[["a"]]), [], None),
]


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes (what must not change)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _probe(base, tmp_path, capsys, command, name, make, extra, out_spec):
    root, good, ids = base
    index = root / "index"
    work = tmp_path / "case"
    work.mkdir()
    (work / "sub").mkdir()
    src = work / name
    if make is not None:
        make(src, good, ids)
    if out_spec is None:
        out = work / "out.parquet"
    elif out_spec == "link:hard":
        out = work / "hard.parquet"
        os.link(src, out)
    elif out_spec == "link:sym":
        out = work / "sym.parquet"
        out.symlink_to(src)
    elif out_spec.startswith("index:"):
        out = index / out_spec.split(":", 1)[1]
    elif out_spec.startswith("/"):
        out = Path(out_spec)
    else:
        out = Path(str(work / out_spec.replace("{in}", name)))
    before = _snapshot(work)
    index_before = _snapshot(index)
    cwd = os.getcwd()
    try:
        os.chdir(work)
        status = main([command, str(index), str(src), str(out), "--quiet", *extra])
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    assert status == 2, f"{name}: exit {status}, stderr {err!r}"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("toolsift: error: "), err
    assert "Traceback" not in err
    assert _snapshot(work) == before, "the input folder changed (input rewritten, or output / temp file left)"
    assert _snapshot(index) == index_before, "the index changed"
    return lines[0]


@pytest.mark.parametrize("name,make,extra,out_spec", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_score_hostile_input_is_one_typed_line(base, tmp_path, capsys, name, make, extra, out_spec):
    _probe(base, tmp_path, capsys, "score", name, make, extra, out_spec)


@pytest.mark.parametrize("name,make,extra,out_spec", [c[1:] for c in RANK_CASES], ids=[c[0] for c in RANK_CASES])
def test_rank_hostile_input_is_one_typed_line(base, tmp_path, capsys, name, make, extra, out_spec):
    _probe(base, tmp_path, capsys, "rank", name, make, extra, out_spec)


def test_probe_has_at_least_40_cases():
    assert len(CASES) + len(RANK_CASES) >= 40


def test_output_is_input_names_the_input(base, tmp_path, capsys):
    line = _probe(base, tmp_path, capsys, "score", "in.parquet", _good(".parquet"), [], "./sub/../{in}")
    assert "is the input file" in line


def test_deep_structured_query_with_error_column_is_a_row_error(base, tmp_path):
    """With ``--on-error column`` a query nested too deeply is one row's error, not a crash."""
    root, _, ids = base
    src, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    _parquet(src, pa.table({"query": [DEEP, "send an email"], "tool_id": ids[:2]}))
    assert main(["score", str(root / "index"), str(src), str(out), "--quiet", "--on-error", "column"]) == 0
    errors = pq.read_table(out).column("error").to_pylist()
    assert "nested too deeply" in errors[0] and errors[1] is None


def test_same_file_refused_as_a_real_process(base, tmp_path):
    """The data-loss case end to end: a subprocess, the input spelled through ``dir/./``."""
    root, good, _ = base
    (tmp_path / "d").mkdir()
    src = tmp_path / "d" / "in.parquet"
    _parquet(src, good)
    before = src.read_bytes()
    proc = subprocess.run([sys.executable, "-m", "toolsift", "score", str(root / "index"), str(src),
                           str(tmp_path / "d" / "." / "in.parquet"), "--quiet"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert src.read_bytes() == before
