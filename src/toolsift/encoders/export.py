"""Export a local sentence-transformers / BERT directory to ONNX for :class:`OnnxEncoder`.

Needs torch and transformers, which toolsift never needs at query time; both are
imported lazily so that importing this module is free.
"""

from __future__ import annotations

import importlib
import json
import shutil
import tempfile
from pathlib import Path
from types import ModuleType

from toolsift.encoders import EncoderError
from toolsift.encoders.models import MODEL_FILENAME, TOKENIZER_FILENAME, PathLike

__all__ = ["export_onnx"]

_OPSET = 17


def _require(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise EncoderError(
            f"export_onnx needs {module!r} (export time only, never at query time): "
            f"pip install torch transformers onnx"
        ) from exc


def _transformer_dir(src: Path) -> Path:
    """The folder of the Transformer module: the root for most sentence-transformers models."""
    modules = src / "modules.json"
    if modules.is_file():
        for module in json.loads(modules.read_text(encoding="utf-8")):
            if module.get("type", "").endswith("models.Transformer"):
                return src / module.get("path", "")
    return src


def export_onnx(src_dir: PathLike, out_dir: PathLike, *, quantize: bool) -> Path:
    """Export a local transformer encoder to ``out_dir/model.onnx`` + ``tokenizer.json``.

    The graph takes ``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64,
    dynamic batch and sequence axes) and returns ``last_hidden_state``; pooling and
    normalisation happen in :class:`~toolsift.encoders.OnnxEncoder`. Attention is
    exported in eager mode, whose plain MatMul/Softmax pattern onnxruntime fuses.

    Args:
        src_dir: A sentence-transformers model directory (``modules.json``) or a plain
            Hugging Face BERT directory, with ``config.json``, weights and
            ``tokenizer.json``. Read from disk only.
        out_dir: Output directory, created if missing.
        quantize: Apply onnxruntime dynamic int8 quantization with per-channel weight
            scales (per-tensor scales lose noticeably more accuracy on this model).

    Returns:
        The path of the written ``model.onnx``.

    Raises:
        EncoderError: torch, transformers or onnxruntime (for ``quantize``) is missing,
            or ``src_dir`` lacks ``tokenizer.json``.
    """
    src, out = Path(src_dir), Path(out_dir)
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
    torch = _require("torch")
    transformers = _require("transformers")
    quantization = _require("onnxruntime.quantization") if quantize else None

    model = transformers.AutoModel.from_pretrained(
        str(tok_dir), attn_implementation="eager", local_files_only=True
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
    out.mkdir(parents=True, exist_ok=True)
    target = out / MODEL_FILENAME
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "model.fp32.onnx" if quantize else target
        with torch.no_grad():
            torch.onnx.export(
                _TokenStates(),
                dummy,
                str(fp32),
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
        if quantization is not None:
            quantization.quantize_dynamic(
                str(fp32),
                str(target),
                per_channel=True,
                weight_type=quantization.QuantType.QInt8,
            )
    shutil.copyfile(tokenizer_file, out / TOKENIZER_FILENAME)
    return target
