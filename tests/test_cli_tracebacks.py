"""CLI inputs that used to end in a traceback with exit 1 (issue 24, item 4): deeply nested
JSON for ``search --structured`` and ``serve --config``, ``serve --port 99999`` and an
OSError on a file the command was told to write. Each is now one line and exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from toolsift import ToolIndex
from toolsift.cli import main

DEEP = '{"tool_needs": ' + "[" * 100_000 + "]" * 100_000 + "}"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, demo_catalog):
    path = tmp_path_factory.mktemp("cli") / "index"
    ToolIndex.build(demo_catalog).save(path)
    return path


def _one_line(capsys, status: int, must: str) -> str:
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and must in lines[0], err
    return lines[0]


def test_search_structured_deep_json_file(index_dir, tmp_path, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    _one_line(capsys, main(["search", str(index_dir), str(deep), "--structured"]), "nested too deeply")


def test_search_structured_deep_json_inline(index_dir, capsys):
    _one_line(capsys, main(["search", str(index_dir), DEEP, "--structured"]), "nested too deeply")


def test_search_structured_file_not_utf8(index_dir, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"tool_needs": "\xff\xfe"}')
    _one_line(capsys, main(["search", str(index_dir), str(bad), "--structured"]), "not UTF-8")


def test_serve_config_deep_json(tmp_path, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    _one_line(capsys, main(["serve", "--config", str(deep)]), "nested too deeply")


def test_serve_config_not_utf8(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"upstreams": "\xff"}')
    _one_line(capsys, main(["serve", "--config", str(bad)]), "not UTF-8")


@pytest.mark.parametrize("port", ["99999", "-1", "65536", "http"])
def test_serve_port_out_of_range_is_a_usage_error(port, capsys):
    """argparse refuses it (exit 2, its usage line + one error line), before any socket."""
    with pytest.raises(SystemExit) as info:
        main(["serve", "--catalog", "x.json", "--transport", "http", "--port", port])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--port" in err.strip().splitlines()[-1]


def test_oserror_writing_an_output_is_one_line(tmp_path, capsys):
    """``standardize`` into a folder under /proc: the OSError becomes one line, exit 2."""
    from toolsift.adapters import demo_catalog_path

    status = main(["standardize", str(demo_catalog_path()), "/proc/toolsift-no-such-dir/out.json"])
    line = _one_line(capsys, status, "toolsift: error: ")
    assert "/proc/toolsift-no-such-dir" in line


def test_oserror_as_a_real_process(tmp_path):
    """End to end: no traceback, exit 2, for an output path that cannot be created."""
    from toolsift.adapters import demo_catalog_path

    proc = subprocess.run([sys.executable, "-m", "toolsift", "standardize", str(demo_catalog_path()),
                           "/proc/toolsift-no-such-dir/out.json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
