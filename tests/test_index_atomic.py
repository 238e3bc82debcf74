"""Index directories under concurrent saves, killed saves and damaged files (issue 13).

Readers must always see the old or the new index; killed saves leave the old one in
place and their leftovers go at the next save; ``verify=False`` still catches files
that are structurally damaged or come from another save.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.test_gateway_server import _env
from toolsift.adapters import demo_catalog_path, load_catalog
from toolsift.errors import IndexCorruptError
from toolsift.schema import Catalog
from toolsift.toolindex import ToolIndex

QUERY = "convert 100 dollars to euros"


@pytest.fixture(scope="module")
def variants():
    tools = list(load_catalog(demo_catalog_path()))
    a = ToolIndex.build(Catalog(tools, name="a"))
    b = ToolIndex.build(Catalog(tools[: len(tools) // 2], name="b"))
    return {len(a.catalog): a, len(b.catalog): b}


def _data_dir(path: Path) -> Path:
    return path / json.loads((path / "manifest.json").read_text())["data"]


def _expect(variants, loaded: ToolIndex) -> None:
    ref = variants[len(loaded.catalog)]
    assert [(h.id, h.score) for h in loaded.search(QUERY, k=5)] == [(h.id, h.score) for h in ref.search(QUERY, k=5)]


@pytest.mark.slow
def test_readers_see_old_or_new_during_repeated_saves(variants, tmp_path):
    path = tmp_path / "idx"
    sizes = sorted(variants)
    variants[sizes[0]].save(path)
    stop = threading.Event()
    failures: list[BaseException] = []
    loads = [0]

    def reader(verify: bool) -> None:
        while not stop.is_set():
            try:
                _expect(variants, ToolIndex.load(path, verify=verify, mmap=verify))
                loads[0] += 1
            except BaseException as exc:  # noqa: BLE001 - every failure is collected
                failures.append(exc)
                return

    threads = [threading.Thread(target=reader, args=(v,)) for v in (True, False, False)]
    for t in threads:
        t.start()
    try:
        for i in range(60):
            variants[sizes[i % 2]].save(path)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not failures, failures[:3]
    assert loads[0] > 10
    # A generation a reader still held at the last commit is deleted by the next one.
    variants[sizes[0]].save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]
    inside = sorted(p.name for p in path.iterdir())
    assert inside == sorted([".lock", _data_dir(path).name, "manifest.json"])


_KILL_AT_REPLACE = """
import os, sys
from toolsift.adapters import demo_catalog_path, load_catalog
from toolsift.toolindex import ToolIndex
index = ToolIndex.build(list(load_catalog(demo_catalog_path()))[:3])
calls = [0]
real = os.replace
def dying(*a, **kw):
    calls[0] += 1
    if calls[0] == int(sys.argv[2]):
        os._exit(9)
    return real(*a, **kw)
os.replace = dying
index.save(sys.argv[1])
"""


@pytest.mark.parametrize("step", [1, 2])
def test_save_killed_between_renames_leaves_the_old_index(variants, tmp_path, step):
    path = tmp_path / "idx"
    old = variants[max(variants)]
    old.save(path)
    proc = subprocess.run([sys.executable, "-c", _KILL_AT_REPLACE, str(path), str(step)], env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 9), proc.stderr
    loaded = ToolIndex.load(path)
    assert len(loaded.catalog) in (len(old.catalog), 3)
    if len(loaded.catalog) != 3:
        _expect(variants, loaded)
    # The next save removes whatever the killed one left behind.
    old.save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]
    assert len(list(path.iterdir())) == 3


_SAVE_FOREVER = """
import sys
from toolsift.adapters import demo_catalog_path, load_catalog
from toolsift.toolindex import ToolIndex
index = ToolIndex.build(list(load_catalog(demo_catalog_path()))[:3])
print("ready", flush=True)
while True:
    index.save(sys.argv[1])
"""


@pytest.mark.slow
def test_sigkill_mid_save_never_loses_the_index(variants, tmp_path):
    path = tmp_path / "idx"
    variants[max(variants)].save(path)
    for round_ in range(4):
        proc = subprocess.Popen([sys.executable, "-c", _SAVE_FOREVER, str(path)], env=_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.05 + 0.07 * round_)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stdout.close()
        assert len(ToolIndex.load(path).catalog) in (3, max(variants))
    variants[max(variants)].save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]
    assert len(list(path.iterdir())) == 3


def test_old_flat_layout_still_loads_and_is_converted(variants, tmp_path):
    idx = variants[max(variants)]
    path = idx.save(tmp_path / "idx")
    # Rewrite it in the layout of earlier versions: files beside manifest.json.
    data = _data_dir(path)
    manifest = json.loads((path / "manifest.json").read_text())
    for f in data.iterdir():
        f.rename(path / f.name)
    data.rmdir()
    for key in ("data", "generation", "save_id", "manifest_sha256"):
        manifest.pop(key)
    import hashlib

    canon = json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    manifest["manifest_sha256"] = hashlib.sha256(canon).hexdigest()
    (path / "manifest.json").write_text(json.dumps(manifest))
    _expect(variants, ToolIndex.load(path))
    idx.save(path)
    assert not list(path.glob("*.arrow"))
    _expect(variants, ToolIndex.load(path))


# ------------------------------------------------------------- verify=False still checks
def test_vocab_bit_flip_is_a_typed_error_without_checksums(variants, tmp_path):
    path = variants[max(variants)].save(tmp_path / "idx")
    f = _data_dir(path) / "vocab.arrow"
    raw = bytearray(f.read_bytes())
    # Flip a byte inside the UTF-8 text of the terms: invalid UTF-8 or a changed term.
    text_at = raw.find(b"convert")
    assert text_at > 0
    raw[text_at] = 0xFF
    f.write_bytes(bytes(raw))
    with pytest.raises(IndexCorruptError, match="vocab.arrow"):
        ToolIndex.load(path, verify=False)


def test_same_size_files_from_another_index_are_detected_without_checksums(variants, tmp_path):
    idx = variants[max(variants)]
    a, b = idx.save(tmp_path / "a"), idx.save(tmp_path / "b")
    for name in ("field.description.arrow", "tools.arrow"):
        src, dst = _data_dir(b) / name, _data_dir(a) / name
        assert src.stat().st_size == dst.stat().st_size
        saved = dst.read_bytes()
        dst.write_bytes(src.read_bytes())
        with pytest.raises(IndexCorruptError, match="another save"):
            ToolIndex.load(a, verify=False)
        dst.write_bytes(saved)
    _expect(variants, ToolIndex.load(a, verify=False))


def test_non_index_directory_is_never_overwritten(variants, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "thesis.tex").write_text("precious")
    with pytest.raises(Exception, match="not a toolsift index"):
        variants[max(variants)].save(tmp_path / "docs")
    assert (tmp_path / "docs" / "thesis.tex").read_text() == "precious"
