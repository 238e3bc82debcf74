"""The evaluation embedding cache (toolsift.evaluate.embcache): hits and misses, vectors
bit-identical to fresh encodings, damaged entries recomputed, LRU eviction under the cap,
the environment switches, two processes writing at once, and the get_encoder hook."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from toolsift.errors import ConfigError
from toolsift.evaluate.embcache import (
    CachedEncoder,
    EmbeddingStore,
    EncoderCache,
    default_cache_dir,
    encoder_namespace,
    eval_encoder_cache,
    store_from_env,
)

DIM = 16


def _vector(text: str, dim: int = DIM) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


class CountingEncoder:
    """A deterministic stand-in encoder that records every text it is asked to encode."""

    cache_namespace = "counting-v1"
    dim = DIM

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts):
        texts = list(texts)
        self.calls.append(texts)
        return np.stack([_vector(t) for t in texts]) if texts else np.zeros((0, DIM), np.float32)

    @property
    def encoded(self) -> list[str]:
        return [t for call in self.calls for t in call]


def _cached(tmp_path: Path, enc=None, **kw) -> tuple[CachedEncoder, CountingEncoder, EncoderCache]:
    enc = enc or CountingEncoder()
    cache = EncoderCache(EmbeddingStore(tmp_path / "cache", **kw))
    return cache(enc), enc, cache


def _entry_files(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("??/*") if not p.name.startswith(".tmp-"))


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for var in ("TOOLSIFT_EMBED_CACHE", "TOOLSIFT_EMBED_CACHE_DIR", "TOOLSIFT_EMBED_CACHE_MB"):
        monkeypatch.delenv(var, raising=False)


# --------------------------------------------------------------------- hits
def test_miss_then_memo_then_disk_hits(tmp_path):
    texts = ["send an email", "weather in Lisbon", "send an email", "refund a payment"]
    wrapped, enc, cache = _cached(tmp_path)
    first = wrapped.encode(texts)
    assert enc.calls == [["send an email", "weather in Lisbon", "refund a payment"]]  # duplicates once
    np.testing.assert_array_equal(first, np.stack([_vector(t) for t in texts]))
    assert len(_entry_files(tmp_path / "cache")) == 3

    again = wrapped.encode(["refund a payment", "weather in Lisbon", "new text"])
    assert enc.calls[1:] == [["new text"]]  # the rest came from the run's memo
    assert cache.stats.memo_hits == 2 and cache.stats.encoded == 4  # distinct texts encoded

    # A later run: a fresh memo, the same folder. Nothing known is encoded again.
    wrapped2, enc2, cache2 = _cached(tmp_path)
    later = wrapped2.encode(texts + ["new text"])
    assert enc2.calls == []
    assert cache2.stats.disk_hits == 4 and cache2.stats.encoded == 0
    np.testing.assert_array_equal(later[:4], first)
    np.testing.assert_array_equal(later[4], again[2])


def test_namespaces_never_share_vectors(tmp_path):
    class Other(CountingEncoder):
        cache_namespace = "counting-v2"  # e.g. another model file

    store = EmbeddingStore(tmp_path / "cache")
    a, b = CountingEncoder(), Other()
    EncoderCache(store)(a).encode(["same text"])
    EncoderCache(store)(b).encode(["same text"])
    assert a.encoded == ["same text"] and b.encoded == ["same text"]
    assert len(_entry_files(tmp_path / "cache")) == 2


def test_encoder_without_namespace_is_memoised_but_never_stored(tmp_path):
    class Anonymous:
        dim = DIM

        def __init__(self):
            self.n = 0

        def encode(self, texts):
            self.n += len(texts)
            return np.stack([_vector(t) for t in texts])

    enc = Anonymous()
    assert encoder_namespace(enc) is None
    wrapped, _, _ = _cached(tmp_path, enc)
    wrapped.encode(["a", "b"])
    wrapped.encode(["a", "b"])
    assert enc.n == 2
    assert not (tmp_path / "cache").exists()


def test_bad_input_keeps_the_encoders_own_error(tmp_path):
    from toolsift.encoders import EncoderInputError

    class Strict(CountingEncoder):
        def encode(self, texts):
            if isinstance(texts, str):
                raise EncoderInputError("texts must be a sequence of str")
            return super().encode(texts)

    wrapped, enc, _ = _cached(tmp_path, Strict())
    with pytest.raises(EncoderInputError):
        wrapped.encode("one string")
    got = wrapped.encode(t for t in ["from", "a generator"])
    np.testing.assert_array_equal(got, np.stack([_vector("from"), _vector("a generator")]))


# ------------------------------------------------- the real encoder, bit for bit
@pytest.fixture(scope="module")
def minilm():
    from toolsift.encoders import OnnxEncoder

    return OnnxEncoder(threads=1)


TEXTS = ["email the quarterly report to my manager", "will it rain in Lisbon tomorrow?",
         "refund the last payment from customer 4411", "", "x",
         "Create a calendar event with attendees at a given date and time " * 12,
         "get_user_profile: fetch a user's profile by id", "naïve café ☕ 東京"]


def test_encoder_rows_do_not_depend_on_the_batch(minilm):
    """What makes the cache sound: a text's vector is the same bytes whichever texts share
    its batch and whatever the thread count (so cached rows equal a fresh encode's)."""
    from toolsift.encoders import OnnxEncoder

    batch = minilm.encode(TEXTS)
    alone = np.stack([minilm.encode([t])[0] for t in TEXTS])
    shuffled = minilm.encode(TEXTS[::-1])[::-1]
    threaded = OnnxEncoder(threads=0).encode(TEXTS)
    for other in (alone, shuffled, threaded):
        assert np.array_equal(batch.view(np.uint32), other.view(np.uint32))


def test_cached_vectors_are_bit_identical_to_fresh_ones(tmp_path, minilm):
    first, _, _ = _cached(tmp_path, minilm)
    a = first.encode(TEXTS[:5])  # some texts now on disk
    second, _, cache = _cached(tmp_path, minilm)  # a later run: memo empty
    b = second.encode(TEXTS)  # five from disk, three encoded
    assert cache.stats.disk_hits == 5 and cache.stats.encoded == 3
    fresh = minilm.encode(TEXTS)
    assert np.array_equal(a.view(np.uint32), fresh[:5].view(np.uint32))
    assert np.array_equal(b.view(np.uint32), fresh.view(np.uint32))
    assert b.dtype == np.float32 and b.flags.writeable


def test_onnx_namespace_covers_model_file_and_settings(tmp_path, minilm):
    import shutil
    from dataclasses import dataclass

    from toolsift.encoders import OnnxEncoder

    ns = encoder_namespace(minilm)
    assert ns == encoder_namespace(OnnxEncoder(threads=0))  # threads do not change vectors
    assert ns != encoder_namespace(OnnxEncoder(threads=1, max_length=64))

    from toolsift.encoders.fingerprint import onnx_fingerprint

    assert minilm.fingerprint == onnx_fingerprint(minilm.files.model, minilm.files.tokenizer, max_length=256)
    tok = tmp_path / "tokenizer.json"
    shutil.copy(minilm.files.tokenizer, tok)
    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights v1")
    before = onnx_fingerprint(model, tok, max_length=256)
    model.write_bytes(b"weights v2")  # same size, new content: a re-export
    os.utime(model, ns=(1, 1))
    assert onnx_fingerprint(model, tok, max_length=256) != before
    assert onnx_fingerprint(model, tok, max_length=64) != onnx_fingerprint(model, tok, max_length=256)

    @dataclass
    class Fingerprinted:  # any encoder: its own fingerprint, and its width
        fingerprint: str
        dim: int = 384

    assert encoder_namespace(Fingerprinted("a")) != encoder_namespace(Fingerprinted("b"))
    assert encoder_namespace(Fingerprinted("a", dim=768)) != encoder_namespace(Fingerprinted("a"))


# --------------------------------------------------------------- corruption
def test_damaged_entries_are_recomputed_never_returned(tmp_path):
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]
    wrapped, _, _ = _cached(tmp_path)
    wrapped.encode(texts)
    store = EmbeddingStore(tmp_path / "cache")
    ns = encoder_namespace(CountingEncoder())
    path = {t: store.path(store.key(ns, t)) for t in texts}
    assert sorted(path.values()) == _entry_files(tmp_path / "cache")

    path["alpha"].write_bytes(path["alpha"].read_bytes()[:-7])  # truncated
    blob = bytearray(path["beta"].read_bytes())
    blob[-3] ^= 0x40  # one flipped bit in the vector
    path["beta"].write_bytes(bytes(blob))
    path["gamma"].write_bytes(path["delta"].read_bytes())  # an intact entry under the wrong key
    path["epsilon"].write_bytes(b"")  # empty

    wrapped2, enc2, cache2 = _cached(tmp_path)
    got = wrapped2.encode(texts)
    assert sorted(enc2.encoded) == ["alpha", "beta", "epsilon", "gamma"]
    assert cache2.store.stats.corrupt == 4 and cache2.stats.disk_hits == 1
    np.testing.assert_array_equal(got, np.stack([_vector(t) for t in texts]))
    # Rewritten intact: a third run encodes nothing.
    wrapped3, enc3, _ = _cached(tmp_path)
    np.testing.assert_array_equal(wrapped3.encode(texts), got)
    assert enc3.calls == []


# ----------------------------------------------------------------- eviction
def test_least_recently_used_entries_go_first(tmp_path):
    probe = EmbeddingStore(tmp_path / "probe")
    probe.put_many([(probe.key("n", "probe"), _vector("probe"))])
    entry = probe.size()  # allocated bytes of one entry on this file system
    cap = 10 * entry
    store = EmbeddingStore(tmp_path / "cache", max_bytes=cap)
    keys = [store.key("n", f"text {i}") for i in range(8)]
    store.put_many([(k, _vector(f"text {i}")) for i, k in enumerate(keys)])
    for i, k in enumerate(keys):  # written long ago, in order
        os.utime(store.path(k), ns=(10**18 + i * 10**9,) * 2)
    assert store.get(keys[0], DIM) is not None  # a hit makes the oldest the newest
    more = [store.key("n", f"more {i}") for i in range(4)]
    store.put_many([(k, _vector(f"more {i}")) for i, k in enumerate(more)])  # 12 entries > cap
    assert store.size() <= cap
    alive = [k for k in keys if store.path(k).exists()]
    assert keys[0] in alive and all(store.path(k).exists() for k in more)
    gone = [k for k in keys if k not in alive]
    assert gone == keys[1:1 + len(gone)] and gone  # the oldest untouched ones, in order
    assert store.stats.evicted == len(gone)
    # An evicted entry is a plain miss.
    assert store.get(gone[0], DIM) is None and store.stats.corrupt == 0


def test_size_cap_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLSIFT_EMBED_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("TOOLSIFT_EMBED_CACHE_MB", "0.25")
    store = store_from_env()
    assert store.root == tmp_path / "c" and store.max_bytes == 2**18
    for bad in ("x", "-1", "0", "inf", "nan"):
        monkeypatch.setenv("TOOLSIFT_EMBED_CACHE_MB", bad)
        with pytest.raises(ConfigError, match="TOOLSIFT_EMBED_CACHE_MB"):
            store_from_env()
    monkeypatch.delenv("TOOLSIFT_EMBED_CACHE_MB")
    assert store_from_env().max_bytes == 512 * 2**20


# ------------------------------------------------------------------ switches
def test_disabled_by_environment(tmp_path, monkeypatch, minilm):
    from toolsift.config import IndexConfig
    from toolsift.index.dense_field import encode_texts
    from toolsift.index.embed import get_encoder

    monkeypatch.setenv("TOOLSIFT_EMBED_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("TOOLSIFT_EMBED_CACHE", "0")
    assert store_from_env() is None
    with eval_encoder_cache() as cache:
        assert cache.store is None
        enc = get_encoder(IndexConfig(threads=1))
        encode_texts(enc, ["one", "two", "one"])
        encode_texts(get_encoder(IndexConfig(threads=0)), ["two", "three"])
    assert not (tmp_path / "c").exists()
    assert cache.stats.encoded == 3 and cache.stats.memo_hits == 1  # still shared within the run
    monkeypatch.setenv("TOOLSIFT_EMBED_CACHE", "maybe")
    with pytest.raises(ConfigError, match="TOOLSIFT_EMBED_CACHE"):
        store_from_env()


def test_default_folder_follows_the_platform_layout(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert default_cache_dir() == tmp_path / "xdg" / "toolsift" / "embeddings"
    monkeypatch.setenv("TOOLSIFT_EMBED_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"


def test_get_encoder_hook_wraps_only_inside_the_block(tmp_path, monkeypatch):
    from toolsift.config import IndexConfig
    from toolsift.index.embed import get_encoder

    monkeypatch.setenv("TOOLSIFT_EMBED_CACHE_DIR", str(tmp_path / "c"))
    plain = get_encoder(IndexConfig(threads=1))
    with eval_encoder_cache() as cache:
        wrapped = get_encoder(IndexConfig(threads=1))
        assert isinstance(wrapped, CachedEncoder) and wrapped.inner is plain
        assert get_encoder(IndexConfig(threads=1)) is wrapped  # one wrapper per encoder
        assert wrapped.dim == plain.dim and wrapped.files == plain.files
        vec = wrapped.encode(["a tool"])
    assert get_encoder(IndexConfig(threads=1)) is plain
    assert cache.stats.encoded == 1 and len(_entry_files(tmp_path / "c")) == 1
    assert np.array_equal(vec, plain.encode(["a tool"]))


@pytest.mark.slow
def test_dense_cold_method_shares_encodings_and_keeps_its_run(tmp_path, monkeypatch, demo_catalog):
    """dense-fulldoc through the cache: the second run in the block encodes nothing, a
    later block reads everything from disk, and the run is the uncached one exactly."""
    from toolsift.evaluate.cold import run_cold

    monkeypatch.setenv("TOOLSIFT_EMBED_CACHE_DIR", str(tmp_path / "c"))
    queries = [(f"q{i}", t) for i, t in enumerate(TEXTS[:3] + ["book a meeting", "send slack message"])]
    plain = run_cold("dense-fulldoc", demo_catalog, queries).run
    with eval_encoder_cache() as cache:
        first = run_cold("dense-fulldoc", demo_catalog, queries).run
        n = cache.stats.encoded
        second = run_cold("dense-fulldoc", demo_catalog, queries).run
        assert cache.stats.encoded == n and cache.stats.memo_hits >= n
    with eval_encoder_cache() as later:
        third = run_cold("dense-fulldoc", demo_catalog, queries).run
    assert later.stats.encoded == 0 and later.stats.disk_hits == n
    assert plain == first == second == third


# ----------------------------------------------------------------- concurrency
_WORKER = textwrap.dedent("""
    import hashlib, sys
    import numpy as np
    from toolsift.evaluate.embcache import EmbeddingStore

    root, who, cap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

    def vector(text):
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(16).astype(np.float32)
        return v / np.linalg.norm(v)

    store = EmbeddingStore(root, max_bytes=cap)
    texts = [f"text {i}" for i in range(who * 40, who * 40 + 120)]  # 80 shared by both
    wrong = 0
    for rnd in range(6):
        store.put_many([(store.key("ns", t), vector(t)) for t in texts[rnd % 3::3]])
        for t in texts:
            got = store.get(store.key("ns", t), 16)
            if got is not None and not np.array_equal(got, vector(t)):
                wrong += 1
    print(wrong, store.stats.corrupt)
""")


@pytest.mark.parametrize("evicting", [False, True])
def test_two_processes_writing_at_once(tmp_path, evicting):
    """Two processes store, read and (with a small cap) evict overlapping keys at the same
    time: every vector read is the right one, and nothing is ever seen half-written."""
    probe = EmbeddingStore(tmp_path / "probe")
    probe.put_many([(probe.key("n", "probe"), _vector("probe"))])
    cap = (40 if evicting else 10_000) * probe.size()
    root = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(root), str(who), str(cap)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for who in (0, 1)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        wrong, corrupt = map(int, out.split())
        assert wrong == 0 and corrupt == 0
    store = EmbeddingStore(root, max_bytes=cap)
    files = _entry_files(root)
    assert not list(root.glob("??/.tmp-*"))
    if evicting:
        assert store.size() <= cap
    else:
        assert len(files) == 160
    for i in range(160):
        got = store.get(store.key("ns", f"text {i}"), DIM)
        assert evicting or got is not None
        if got is not None:
            np.testing.assert_array_equal(got, _vector(f"text {i}"))
    assert store.stats.corrupt == 0
