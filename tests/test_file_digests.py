"""A large file's SHA-256 is kept on disk for the next process (toolsift.encoders.fingerprint):
the digest is right, it is reused only while the file is unchanged, and the cache folder
can be off, unwritable or damaged without failing the call."""

from __future__ import annotations

import hashlib
import os

import pytest

from toolsift.encoders import fingerprint as fp

SIZE = fp.DISK_DIGEST_MIN_BYTES + 123


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLSIFT_EMBED_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TOOLSIFT_EMBED_CACHE", raising=False)
    monkeypatch.setattr(fp, "_FILE_DIGESTS", {})  # as in a fresh process
    return tmp_path / "cache" / "file-digests"


def _big(path, byte: int) -> str:
    data = bytes([byte]) * SIZE
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def _fresh_process() -> None:
    fp._FILE_DIGESTS.clear()


def test_digest_is_kept_and_reused_while_the_file_is_unchanged(tmp_path, cache):
    f = tmp_path / "model.onnx"
    want = _big(f, 1)
    assert fp.file_sha256(f) == want
    [entry] = cache.iterdir()
    assert entry.read_text() == want
    # The next process reads the entry instead of hashing: shown by planting another digest.
    planted = "ab" * 32
    entry.write_text(planted)
    _fresh_process()
    assert fp.file_sha256(f) == planted


def test_a_changed_file_is_hashed_again(tmp_path, cache):
    f = tmp_path / "model.onnx"
    _big(f, 1)
    fp.file_sha256(f)
    st = os.stat(f)
    want = _big(f, 2)  # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with the old mtime put back
    _fresh_process()
    assert fp.file_sha256(f) == want


@pytest.mark.parametrize("garbage", ["", "zz" * 32, "ab" * 31, "ab" * 33, "\u00e9" * 64])
def test_a_damaged_entry_is_a_miss(tmp_path, cache, garbage):
    f = tmp_path / "model.onnx"
    want = _big(f, 3)
    fp.file_sha256(f)
    [entry] = cache.iterdir()
    entry.write_text(garbage, encoding="utf-8")
    _fresh_process()
    assert fp.file_sha256(f) == want
    assert entry.read_text() == want  # rewritten


def test_no_entry_when_caching_is_off_or_for_small_files(tmp_path, cache, monkeypatch):
    small = tmp_path / "tokenizer.json"
    small.write_bytes(b"{}")
    assert fp.file_sha256(small) == hashlib.sha256(b"{}").hexdigest()
    assert not cache.exists()
    monkeypatch.setenv("TOOLSIFT_EMBED_CACHE", "0")
    f = tmp_path / "model.onnx"
    want = _big(f, 4)
    assert fp.file_sha256(f) == want
    assert not cache.exists()
    monkeypatch.setenv("TOOLSIFT_EMBED_CACHE", "maybe")  # malformed: no entry, no error here
    _fresh_process()
    assert fp.file_sha256(f) == want
    assert not cache.exists()


def test_an_unwritable_cache_path_does_not_fail_the_call(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")  # the cache folder path is a file: every write fails
    monkeypatch.setenv("TOOLSIFT_EMBED_CACHE_DIR", str(blocker))
    monkeypatch.setattr(fp, "_FILE_DIGESTS", {})
    f = tmp_path / "model.onnx"
    want = _big(f, 6)
    assert fp.file_sha256(f) == want


def test_the_embedding_store_ignores_the_digest_folder(tmp_path, cache):
    from toolsift.encoders.cache import EmbeddingStore

    f = tmp_path / "model.onnx"
    _big(f, 7)
    fp.file_sha256(f)
    store = EmbeddingStore(str(cache.parent), max_bytes=1 << 20)
    assert store.size() == 0
    store.evict()
    assert any(cache.iterdir())
