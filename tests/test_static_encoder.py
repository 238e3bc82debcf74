"""The static query encoder (toolsift.encoders.static) against a plain NumPy twin, its
table file round trip and errors, and the fit (toolsift.encoders.static_fit) against a
dense least-squares solution."""

from __future__ import annotations

import json

import numpy as np
import pytest

from toolsift.encoders import EncoderError, EncoderInputError
from toolsift.encoders.static import DEFAULT_TABLE, StaticEncoder, StaticTable, _mapped_npz, load_tokenizer
from toolsift.encoders.models import VENDORED_TOKENIZER
from toolsift.encoders.static_fit import fit_vectors, mean_matrix, sif_weights, token_counts

TEXTS = ["send an email to my manager", "weather in Paris tomorrow", "", "   ", "!!!",
         "Créer un événement", "東京の天気", "x" * 3000, "get_user_by_id", "a " * 400]


def _random_table(seed: int = 0, dim: int = 16) -> StaticTable:
    rng = np.random.default_rng(seed)
    vocab = load_tokenizer(VENDORED_TOKENIZER).get_vocab_size(with_added_tokens=True)
    vecs = rng.standard_normal((vocab, dim)).astype(np.float32)
    weights = rng.uniform(0.0, 1.0, vocab).astype(np.float32)
    weights[rng.integers(0, vocab, 2000)] = 0.0
    return StaticTable.from_vectors(vecs, weights, {"teacher": "random"})


def _twin(table: StaticTable, texts: list[str]) -> np.ndarray:
    """The obvious loop: weighted sum of dequantized rows, then unit length."""
    tok = load_tokenizer(VENDORED_TOKENIZER)
    vecs = table.codes.astype(np.float64) * table.scales.astype(np.float64)[:, None]
    out = np.zeros((len(texts), table.dim))
    for i, t in enumerate(texts):
        for tid in tok.encode(t, add_special_tokens=False).ids[:256]:
            out[i] += table.weights[tid] * vecs[tid]
        n = np.linalg.norm(out[i])
        out[i] = out[i] / n if n > 1e-12 else 0.0
    return out


def test_encode_matches_numpy_twin():
    table = _random_table()
    enc = StaticEncoder(table)
    got = enc.encode(TEXTS)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), table.dim)
    np.testing.assert_allclose(got, _twin(table, TEXTS), atol=2e-5)
    # Blank and punctuation-free-of-weight texts are zero rows, never NaN.
    assert not got[2].any() and not got[3].any()
    assert np.isfinite(got).all()


def test_batched_equals_one_by_one():
    enc = StaticEncoder(_random_table(1))
    batch = enc.encode(TEXTS)
    for i, t in enumerate(TEXTS):
        # Bit for bit: a query embedded alone (the WordPiece fast path, search) and in a
        # batch (tokenizers, builds) must quantize to the same codes.
        np.testing.assert_array_equal(enc.encode([t])[0], batch[i])


def test_search_batches_and_build_batches_give_the_same_ids():
    """Every batch (a search's few texts, a build's thousands) goes through the WordPiece
    fast path text by text and the texts it does not take (accents, added tokens, control
    characters) through tokenizers: the ids are tokenizers' own for every text, in a
    batch of any size, in any mix."""
    enc = StaticEncoder(_random_table(2))
    texts = [*TEXTS, "café naïve résumé", "[CLS] send [MASK] now", "tab\there\nnew line", "emoji 🙂 ok",
             "word " * 300, "UPPER lower MiXeD 42", "[ not a token", "bell\x07 joins", ""]
    small = enc.token_ids(texts)
    big = enc.token_ids(texts * 40)
    reference = [e.ids[:256] for e in enc._tokenizer.encode_batch(texts * 40, add_special_tokens=False)]
    assert big == reference
    assert big[:len(texts)] == small
    assert [enc.token_ids([t])[0] for t in texts] == small
    assert all(len(ids) <= 256 for ids in small)
    np.testing.assert_array_equal(enc.encode(texts), np.vstack([enc.encode([t]) for t in texts]))


def test_shipped_table_is_close_to_minilm():
    """The shipped table lives in MiniLM's space: its query vectors point where the
    transformer's do (mean cosine over tool-like texts well above unrelated pairs)."""
    from toolsift.encoders import OnnxEncoder

    enc = StaticEncoder()
    assert enc.dim == 384 and len(enc.fingerprint) == 64
    texts = ["send an email", "get the weather forecast for a city", "create a calendar event",
             "list all open pull requests", "translate text into French", "book a flight to London"]
    teacher = OnnxEncoder(threads=1).encode(texts)
    mine = enc.encode(texts)
    cos = (teacher * mine).sum(axis=1)
    cross = (teacher @ mine.T)[~np.eye(len(texts), dtype=bool)]
    assert cos.mean() > 0.6 and cos.min() > 0.4
    assert cos.mean() > cross.mean() + 0.3
    # Each text's static vector is nearest to its own transformer vector.
    assert (np.argmax(mine @ teacher.T, axis=1) == np.arange(len(texts))).all()


def test_table_round_trip_and_errors(tmp_path):
    table = _random_table(2)
    path = table.save(tmp_path / "t.npz")
    back = StaticTable.load(path)
    np.testing.assert_array_equal(back.codes, table.codes)
    np.testing.assert_array_equal(back.weights, table.weights)
    assert back.meta["teacher"] == "random"
    a, b = StaticEncoder(path), StaticEncoder(path)
    assert a.fingerprint == b.fingerprint
    np.testing.assert_array_equal(a.encode(TEXTS), StaticEncoder(table).encode(TEXTS))
    with pytest.raises(EncoderError, match="not found"):
        StaticTable.load(tmp_path / "missing.npz")
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(EncoderError, match="cannot read"):
        StaticTable.load(tmp_path / "bad.npz")
    small = StaticTable.from_vectors(np.ones((10, 4), np.float32), np.ones(10, np.float32))
    with pytest.raises(EncoderError, match="tokens"):
        StaticEncoder(small)
    with pytest.raises(EncoderInputError):
        a.encode("one string")
    with pytest.raises(EncoderInputError, match=r"texts\[1\]"):
        a.encode(["ok", 3])
    assert a.encode([]).shape == (0, table.dim)


def test_fit_matches_dense_ridge():
    """Block CG gives the closed-form ridge solution on a small problem."""
    rng = np.random.default_rng(3)
    vocab, dim = 40, 5
    ids = [list(rng.integers(0, 30, rng.integers(1, 8))) for _ in range(120)]
    y = rng.standard_normal((120, dim))
    prior = rng.standard_normal((vocab, dim)).astype(np.float32)
    w = sif_weights(token_counts(ids, vocab), a=0.05)
    x = mean_matrix(ids, w)
    np.testing.assert_allclose(np.asarray(x.sum(axis=1)).ravel(), 1.0, atol=1e-12)
    lam = 0.3
    got = fit_vectors(x, y, prior, lam=lam, iters=500, tol=1e-10)
    used = np.flatnonzero(np.asarray((x != 0).sum(axis=0)).ravel())
    xd = x.toarray()[:, used]
    want = np.linalg.solve(xd.T @ xd + lam * np.eye(used.size), xd.T @ (y - xd @ prior[used]) + 0) + prior[used]
    np.testing.assert_allclose(got[used], want, atol=1e-4)
    unused = np.setdiff1d(np.arange(vocab), used)
    np.testing.assert_array_equal(got[unused], prior[unused])


def test_encode_in_slices_equals_one_pass(monkeypatch):
    """encode() works a slice of texts at a time (bounded memory for whole catalogues);
    the slicing does not change a vector."""
    import toolsift.encoders.static as static

    enc = StaticEncoder(_random_table(4))
    whole = enc.encode(TEXTS)
    monkeypatch.setattr(static, "_CHUNK", 3)
    np.testing.assert_array_equal(enc.encode(TEXTS), whole)
    np.testing.assert_allclose(whole, _twin(enc.table, TEXTS), atol=2e-5)


def test_single_token_prior_is_each_tokens_own_embedding():
    """The fit script's prior (scripts/fit_static_encoder.py): row t = the model's
    embedding of the text made of token t alone."""
    from toolsift.encoders import OnnxEncoder
    from toolsift.encoders.static_fit import single_token_prior

    enc = OnnxEncoder(threads=1)
    tok = load_tokenizer(VENDORED_TOKENIZER)
    words = ["the", "of", "and"]  # low ids: the prior is computed for every id below them
    ids = [tok.token_to_id(w) for w in words]
    prior = single_token_prior(enc, max(ids) + 1, batch=4096)
    np.testing.assert_allclose(prior[ids], enc.encode(words), atol=1e-5)


def test_fast_path_counts_the_vocabulary_as_tokenizers_does():
    from toolsift.encoders.wordpiece import FastWordPiece

    fast = FastWordPiece.from_file(VENDORED_TOKENIZER)
    assert fast.vocab_size == load_tokenizer(VENDORED_TOKENIZER).get_vocab_size(with_added_tokens=True)


def test_with_table_encodes_as_a_new_encoder_of_that_table():
    """An index's refitted rows (QueryTable.encoder) reuse the base encoder's tokenizers:
    the same vectors as an encoder made from the table, and its own fingerprint."""
    base = StaticEncoder(_random_table(0))
    other = _random_table(1)
    shared = base.with_table(other, lambda: "base+rows")
    np.testing.assert_array_equal(shared.encode(TEXTS), StaticEncoder(other).encode(TEXTS))
    np.testing.assert_array_equal(base.encode(TEXTS), StaticEncoder(_random_table(0)).encode(TEXTS))
    assert shared.fingerprint == "base+rows" and base.fingerprint != shared.fingerprint
    with pytest.raises(EncoderError, match="rows"):
        base.with_table(StaticTable.from_vectors(np.ones((3, 16), np.float32), np.ones(3, np.float32)), str)


def _merged_encoder(base: StaticEncoder, ids: np.ndarray, codes: np.ndarray, scales: np.ndarray) -> StaticEncoder:
    """The encoder of the base table with ``ids``' rows copied in (QueryTable.encoder before
    it overlaid the rows)."""
    t = base.table
    c, s = t.codes.copy(), t.scales.copy()
    c[ids], s[ids] = codes, scales
    return base.with_table(StaticTable(c, s, t.weights, dict(t.meta)), str)


def test_with_rows_gives_the_merged_tables_vectors_bit_for_bit():
    """Refitted rows over the base table (no copy of it) embed every text, one at a time
    and in a batch, exactly as the merged table does: tokens refitted, not refitted,
    repeated, weightless, and a text with no token."""
    base = StaticEncoder(_random_table(2))
    rng = np.random.default_rng(3)
    ids = np.unique(np.concatenate([np.array([0, 1, 101, 102]), np.array(base.token_ids(TEXTS[:2])[0]),
                                    rng.integers(0, base.table.vocab_size, 3000)]))
    new = _random_table(4)
    codes, scales = new.codes[ids], new.scales[ids]
    over = base.with_rows(ids, codes, scales, lambda: "base+rows")
    assert over._over is not None  # the rows are overlaid, not merged, at first
    merged = _merged_encoder(base, ids, codes, scales)
    texts = TEXTS + ["send send send an email", "weather forecast for a city, then email Bob"]
    np.testing.assert_array_equal(over.encode(texts), merged.encode(texts))
    for t in texts:
        np.testing.assert_array_equal(over.encode([t]), merged.encode([t]))
    # A busy encoder merges the rows into a copy of the table: still the same vectors.
    from toolsift.encoders.static import _OVERLAY_CALLS

    for i in range(_OVERLAY_CALLS):
        over.encode([texts[i % len(texts)]])
    assert over._over is None
    np.testing.assert_array_equal(over.encode(texts), merged.encode(texts))
    for t in texts:
        np.testing.assert_array_equal(over.encode([t]), merged.encode([t]))
    assert not np.array_equal(over.encode(TEXTS[:2]), base.encode(TEXTS[:2]))  # the rows do count
    np.testing.assert_array_equal(over.table.codes, merged.table.codes)
    assert over.table.meta["refined_tokens"] == ids.size and over.fingerprint == "base+rows"
    with pytest.raises(EncoderError, match="sorted"):
        base.with_rows(ids[::-1], codes, scales, str)


def test_shipped_table_is_mapped_and_reads_as_np_load(tmp_path):
    """The shipped (uncompressed) table is read through a read-only map with np.load's
    values; a compressed table still loads, by np.load."""
    t = StaticTable.load(DEFAULT_TABLE)
    assert not t.codes.flags.writeable and not t.codes.flags.owndata
    with np.load(DEFAULT_TABLE) as z:
        for k in ("codes", "scales", "weights"):
            np.testing.assert_array_equal(getattr(t, k), z[k])
    small = _random_table(5)
    meta = np.frombuffer(json.dumps({"format": "toolsift.static-table", "format_version": 1}).encode(), np.uint8)
    np.savez_compressed(tmp_path / "c.npz", codes=small.codes, scales=small.scales, weights=small.weights, meta=meta)
    got = StaticTable.load(tmp_path / "c.npz")
    np.testing.assert_array_equal(got.codes, small.codes)
    assert _mapped_npz(tmp_path / "c.npz") is None  # compressed: not mapped, read by np.load
