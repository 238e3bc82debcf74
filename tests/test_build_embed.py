"""Dense builds: parallel encoder sessions give the single-thread vectors bit for bit; the
embedding cache in build, update and re-encoding load (never a text encoded twice, never
a wrong vector); the encoder recorded in the manifest and refused on mismatch; progress."""

from __future__ import annotations

import json
import shutil
import threading
import warnings

import numpy as np
import pytest

from toolsift import ToolIndex
from toolsift.config import IndexConfig
from toolsift.errors import ConfigError, EncoderMismatchError, IndexFormatError
from toolsift.presets import preset_config
from toolsift.schema import Catalog, Tool

TEXTS = ["email the quarterly report to my manager", "will it rain in Lisbon tomorrow?",
         "refund the last payment from customer 4411", "", "x",
         "Create a calendar event with attendees at a given date and time " * 12,
         "get_user_profile: fetch a user's profile by id", "naïve café ☕ 東京"]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch, tmp_path):
    for var in ("TOOLSIFT_EMBED_CACHE", "TOOLSIFT_EMBED_CACHE_MB"):
        monkeypatch.delenv(var, raising=False)
    # Never the user's real cache folder.
    monkeypatch.setenv("TOOLSIFT_EMBED_CACHE_DIR", str(tmp_path / "default-cache"))


@pytest.fixture(scope="module")
def minilm():
    from toolsift.encoders import OnnxEncoder

    return OnnxEncoder(threads=1)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


# ------------------------------------------------------------ parallel sessions
def test_parallel_modes_give_the_single_thread_vectors(minilm, apibank_tools):
    from toolsift.encoders import OnnxEncoder

    # ~512 padded tokens per batch: 40 descriptions make several batches of mixed widths.
    texts = [t.description for t in apibank_tools][:40] + TEXTS
    ref = minilm.encode(texts)
    for enc in (OnnxEncoder(threads=2), OnnxEncoder(threads=2, parallel="intra-op"), OnnxEncoder(threads=0)):
        assert np.array_equal(_bits(enc.encode(texts)), _bits(ref)), enc
    assert np.array_equal(_bits(np.stack([minilm.encode([t])[0] for t in TEXTS])), _bits(ref[-len(TEXTS):]))


def test_sessions_encoder_is_thread_safe(minilm, apibank_tools):
    from toolsift.encoders import OnnxEncoder

    enc = OnnxEncoder(threads=2)
    parts = [[t.description for t in apibank_tools][i::3][:20] for i in range(3)]  # a few batches each
    got: dict[int, np.ndarray] = {}
    threads = [threading.Thread(target=lambda i=i: got.__setitem__(i, enc.encode(parts[i]))) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(3):
        assert np.array_equal(_bits(got[i]), _bits(minilm.encode(parts[i])))


def test_parallel_mode_is_checked():
    from toolsift.encoders import OnnxEncoder

    with pytest.raises(ConfigError, match="parallel"):
        OnnxEncoder(threads=2, parallel="processes")


# -------------------------------------------------------------------- cache
class Counting:
    """The real encoder, counting the texts it is asked to encode (same fingerprint)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.dim = inner.dim
        self.fingerprint = inner.fingerprint
        self.texts: list[str] = []

    def encode(self, texts):
        texts = list(texts)
        self.texts.extend(texts)
        return self.inner.encode(texts)


def _dense_bits(index: ToolIndex) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    st = index._state
    return {f: (d.matrix.codes.copy(), _bits(d.matrix.scales).copy()) for f, d in st.dense.items()}


def _same_dense(a: ToolIndex, b: ToolIndex) -> None:
    da, db = _dense_bits(a), _dense_bits(b)
    assert da.keys() == db.keys() and da
    for f in da:
        assert np.array_equal(da[f][0], db[f][0]) and np.array_equal(da[f][1], db[f][1]), f


@pytest.fixture(scope="module")
def hybrid():
    return preset_config("hybrid")


@pytest.fixture(scope="module")
def small(demo_catalog):
    """A fifth of the demo catalogue: every field kind, at a fifth of the encoding cost
    (each test here builds it several times; what they check does not depend on size)."""
    return Catalog(list(demo_catalog)[:12])


def test_rebuild_and_updates_never_reencode_a_seen_text(tmp_path, small, minilm, hybrid):
    cache = tmp_path / "cache"
    plain = ToolIndex.build(small, config=hybrid, embed_cache=False)

    first = Counting(minilm)
    built = ToolIndex.build(small, config=hybrid, embed_cache=cache, encoder=first)
    assert first.texts and len(first.texts) == len(set(first.texts))  # each distinct text once
    _same_dense(built, plain)

    again = Counting(minilm)
    rebuilt = ToolIndex.build(small, config=hybrid, embed_cache=cache, encoder=again)
    assert again.texts == []
    _same_dense(rebuilt, plain)

    # An update embeds only texts never seen before: the new tool's, then the replaced
    # tool's new ones.
    seen = set(first.texts)
    tools = list(small)
    new = Tool(id="brand_new_tool", name="brand_new_tool", description="Water the office plants on a schedule.")
    rebuilt.add_tools([new])
    added = list(again.texts)
    assert any("Water the office plants" in t for t in added)
    assert len(added) == len(set(added)) and not set(added) & seen
    seen |= set(added)
    old = tools[0]
    changed = Tool.from_dict({**old.to_dict(), "description": old.description + " Now with retries."})
    rebuilt.replace_tools([changed])
    fresh = again.texts[len(added):]
    assert any("Now with retries." in t for t in fresh)
    assert len(fresh) == len(set(fresh)) and not set(fresh) & seen
    # ... and the result is a from-scratch build of the new catalogue, bit for bit.
    scratch = ToolIndex.build(Catalog([changed, *tools[1:], new]), config=hybrid, embed_cache=False)
    _same_dense(rebuilt, scratch)
    # Replacing a tool by itself encodes nothing.
    m = len(again.texts)
    rebuilt.replace_tools([changed])
    assert len(again.texts) == m


@pytest.mark.slow  # several MiniLM builds (5-11 s); the fast tier keeps the cache's core tests
def test_damaged_cache_is_recomputed_never_used(tmp_path, demo_catalog, minilm, hybrid):
    cache = tmp_path / "cache"
    plain = ToolIndex.build(demo_catalog, config=hybrid, embed_cache=cache)
    entries = sorted(p for p in cache.glob("??/*") if not p.name.startswith(".tmp-"))
    assert entries
    for i, p in enumerate(entries):
        blob = bytearray(p.read_bytes())
        if i % 3 == 0:
            blob[-5] ^= 0x10  # a flipped bit in the vector
        elif i % 3 == 1:
            blob = blob[: len(blob) // 2]  # truncated
        else:
            blob[0] ^= 0xFF  # damaged header
        p.write_bytes(bytes(blob))
    enc = Counting(minilm)
    again = ToolIndex.build(demo_catalog, config=hybrid, embed_cache=cache, encoder=enc)
    assert len(enc.texts) == len(entries)  # every damaged entry encoded again
    _same_dense(again, plain)


@pytest.mark.slow  # several MiniLM builds (5-11 s); the fast tier keeps the cache's core tests
def test_cache_location_and_switches(tmp_path, monkeypatch, demo_catalog, minilm, hybrid):
    default = tmp_path / "default-cache"  # TOOLSIFT_EMBED_CACHE_DIR, set by the fixture
    ToolIndex.build(demo_catalog, config=hybrid)
    assert any(default.glob("??/*"))

    off = tmp_path / "off"
    monkeypatch.setenv("TOOLSIFT_EMBED_CACHE_DIR", str(off))
    enc = Counting(minilm)
    ToolIndex.build(demo_catalog, config=hybrid, embed_cache=False, encoder=enc)
    assert enc.texts and not off.exists()
    monkeypatch.setenv("TOOLSIFT_EMBED_CACHE", "0")
    ToolIndex.build(demo_catalog, config=hybrid)
    assert not off.exists()
    # An explicit folder is used even then: the caller asked for it.
    ToolIndex.build(demo_catalog, config=hybrid, embed_cache=tmp_path / "explicit")
    assert any((tmp_path / "explicit").glob("??/*"))
    with pytest.raises(ConfigError, match="embed_cache"):
        ToolIndex.build(demo_catalog, config=hybrid, embed_cache=3)


def test_cache_respects_its_size_cap(tmp_path, monkeypatch, small, hybrid):
    from toolsift.encoders.cache import EmbeddingStore

    store = EmbeddingStore(tmp_path / "capped", max_bytes=40 * 4096)
    ToolIndex.build(small, config=hybrid, embed_cache=store)
    assert store.size() <= 40 * 4096 and store.stats.evicted > 0


def test_build_refuses_an_encoder_of_another_model(small, minilm, hybrid):
    class Other(Counting):
        pass

    other = Other(minilm)
    other.fingerprint = "0" * 64
    with pytest.raises(EncoderMismatchError, match="0000000000"):
        ToolIndex.build(small, config=hybrid, encoder=other)


# ------------------------------------------------------- encoder in the manifest
def _model_copy(tmp_path, minilm):
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(minilm.files.model, folder / "model.onnx")
    shutil.copy(minilm.files.tokenizer, folder / "tokenizer.json")
    return folder


@pytest.mark.slow  # several MiniLM builds (5-11 s); the fast tier keeps the cache's core tests
def test_manifest_records_the_encoder_and_a_changed_model_is_refused(tmp_path, monkeypatch, demo_catalog,
                                                                      minilm, hybrid):
    from dataclasses import replace

    from toolsift.index import embed

    model = _model_copy(tmp_path, minilm)
    config = replace(hybrid, encoder=str(model), query_encoder="transformer")
    index = ToolIndex.build(demo_catalog, config=config, embed_cache=False)
    index.save(tmp_path / "ix")
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    assert manifest["encoder"] == {"fingerprint": minilm.fingerprint, "dim": 384}
    assert ToolIndex.load(tmp_path / "ix").encoder_info == manifest["encoder"]

    # "Upgrade" the model: a tokenizer whose file differs (same vocabulary, other bytes),
    # seen by a new process (no encoder loaded yet).
    tok = model / "tokenizer.json"
    tok.write_text(json.dumps(json.loads(tok.read_text()), indent=1))
    monkeypatch.setattr(embed, "_ENCODERS", {})
    new_fp = embed.get_encoder(config).fingerprint
    assert new_fp != minilm.fingerprint
    with pytest.raises(EncoderMismatchError) as err:
        ToolIndex.load(tmp_path / "ix")
    assert minilm.fingerprint in str(err.value) and new_fp in str(err.value)
    assert isinstance(err.value, IndexFormatError)
    assert (err.value.stored, err.value.current) == (minilm.fingerprint, new_fp)

    # reencode=True: re-embedded with the encoder in use, through the cache, and recorded.
    cache = tmp_path / "cache"
    again = ToolIndex.load(tmp_path / "ix", reencode=True, embed_cache=cache)
    assert again.encoder_info == {"fingerprint": new_fp, "dim": 384}
    assert manifest["null_floors"] and again._state.null_floors is None  # made for the old vectors
    assert any(cache.glob("??/*"))
    _same_dense(again, ToolIndex.build(demo_catalog, config=config, embed_cache=False))
    again.save(tmp_path / "ix")
    assert json.loads((tmp_path / "ix" / "manifest.json").read_text())["encoder"]["fingerprint"] == new_fp
    assert ToolIndex.load(tmp_path / "ix").search("send an email", k=1)


def test_update_with_another_encoder_is_refused(tmp_path, monkeypatch, small, minilm, hybrid):
    from dataclasses import replace

    from toolsift.index import embed

    model = _model_copy(tmp_path, minilm)
    config = replace(hybrid, encoder=str(model), query_encoder="transformer")
    index = ToolIndex.build(small, config=config, embed_cache=False)
    tok = model / "tokenizer.json"
    tok.write_text(json.dumps(json.loads(tok.read_text()), indent=1))
    monkeypatch.setattr(embed, "_ENCODERS", {})
    with pytest.raises(EncoderMismatchError):
        index.add_tools([Tool(id="x_tool", name="x_tool", description="Something new.")])
    assert len(index) == len(small)  # nothing changed
    index.remove_tools([small[0].id])  # nothing to embed: allowed


def test_old_manifest_without_encoder_loads_with_a_warning(tmp_path, small, hybrid):
    from toolsift.index.persist import save_index
    from toolsift.toolindex import UnrecordedEncoderWarning

    index = ToolIndex.build(small, config=hybrid, embed_cache=False)
    save_index(tmp_path / "old", index._state, index.config, encoder=None)  # as before this change
    assert "encoder" not in json.loads((tmp_path / "old" / "manifest.json").read_text())
    with pytest.warns(UnrecordedEncoderWarning, match="records no encoder"):
        loaded = ToolIndex.load(tmp_path / "old")
    _same_dense(loaded, index)
    # A BM25 index has no encoder to record and loads silently.
    ToolIndex.build(small, config=IndexConfig()).save(tmp_path / "bm25")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ToolIndex.load(tmp_path / "bm25").encoder_info is None


def test_malformed_encoder_record_is_corruption(tmp_path, small, hybrid):
    from toolsift.errors import IndexCorruptError
    from toolsift.index.persist import save_index

    index = ToolIndex.build(small, config=hybrid, embed_cache=False)
    save_index(tmp_path / "bad", index._state, index.config, encoder={"fingerprint": "abc", "dim": 768})
    with pytest.raises(IndexCorruptError, match="width"):
        ToolIndex.load(tmp_path / "bad")


# ------------------------------------------------------------------ progress
@pytest.mark.slow  # several MiniLM builds (5-11 s); the fast tier keeps the cache's core tests
def test_progress_bar_only_when_asked(monkeypatch, capsys, apibank_tools, hybrid):
    from toolsift import progress

    tools = list(apibank_tools)[:60]
    ToolIndex.build(tools, config=hybrid, embed_cache=False)
    assert capsys.readouterr().err == ""  # the library is quiet by default
    monkeypatch.setattr(progress, "SHOW_AFTER_S", 0.0)
    monkeypatch.setattr("toolsift.index.dense_field._PROGRESS_SLICE", 16)
    ToolIndex.build(tools, config=hybrid, embed_cache=False, progress=True)
    err = capsys.readouterr().err
    assert "embed" in err and "text" in err and "<" in err  # label, unit, ETA
