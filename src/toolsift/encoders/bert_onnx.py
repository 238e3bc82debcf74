"""Build a BERT encoder's ONNX graph straight from its ``config.json`` + safetensors.

No torch: the graph is written node by node with :mod:`onnx.helper` and the weights are
read with :mod:`safetensors.numpy`. It computes exactly Hugging Face ``BertModel``'s
``last_hidden_state`` in fp32 (absolute positions, exact erf GELU, additive mask of
``finfo(float32).min``), so pooled vectors match sentence-transformers to float
rounding. The node pattern follows what the PyTorch exporter emits for eager attention,
because onnxruntime's transformer optimizer recognises that pattern and fuses it into
its Attention / SkipLayerNormalization / BiasGelu kernels.

Both libraries are needed at export time only and imported lazily.
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from toolsift.encoders.errors import EncoderError

__all__ = ["BertConfig", "build_bert_onnx", "load_bert_weights"]

OPSET = 17
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "last_hidden_state"
_WEIGHTS_FILE = "model.safetensors"


def require_export_module(module: str) -> ModuleType:
    """Import a library only exporting needs, or raise an :class:`EncoderError` that says
    what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise EncoderError(
            f"export needs {module!r} (export time only, never at query time): "
            + ("pip install torch transformers" if module in ("torch", "transformers")
               else "pip install 'toolsift[export]'")
        ) from exc


class BertConfig:
    """The ``config.json`` fields the graph depends on, validated.

    Attributes:
        hidden: Hidden size.
        heads: Attention heads.
        layers: Transformer layers.
        intermediate: Feed-forward size.
        eps: LayerNorm epsilon.
    """

    def __init__(self, config: Mapping[str, Any], *, where: str = "config.json") -> None:
        def need(key: str) -> int:
            value = config.get(key)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise EncoderError(f"{where}: {key!r} must be a positive integer, got {value!r}")
            return value

        model_type = config.get("model_type")
        if model_type != "bert":
            raise EncoderError(
                f"{where}: model_type {model_type!r} is not 'bert'; export other "
                "architectures with backend='torch'"
            )
        if config.get("hidden_act", "gelu") != "gelu":
            raise EncoderError(f"{where}: hidden_act {config.get('hidden_act')!r} unsupported (only 'gelu')")
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise EncoderError(
                f"{where}: position_embedding_type {config.get('position_embedding_type')!r} "
                "unsupported (only 'absolute')"
            )
        self.hidden = need("hidden_size")
        self.heads = need("num_attention_heads")
        self.layers = need("num_hidden_layers")
        self.intermediate = need("intermediate_size")
        if self.hidden % self.heads:
            raise EncoderError(f"{where}: hidden_size {self.hidden} is not a multiple of "
                               f"num_attention_heads {self.heads}")
        self.eps = float(config.get("layer_norm_eps", 1e-12))

    @classmethod
    def from_dir(cls, model_dir: Path) -> BertConfig:
        """Read and validate ``model_dir/config.json``."""
        path = model_dir / "config.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise EncoderError(f"{path}: not found") from None
        except (OSError, ValueError) as exc:
            raise EncoderError(f"{path}: not readable JSON ({exc})") from None
        if not isinstance(data, dict):
            raise EncoderError(f"{path}: not a JSON object")
        return cls(data, where=str(path))


def load_bert_weights(model_dir: Path, config: BertConfig) -> dict[str, np.ndarray]:
    """The float safetensors weights of ``model_dir`` as float32, keyed without a
    ``bert.`` prefix, each checked for presence and shape against ``config`` (integer
    buffers such as ``position_ids`` are dropped).

    Raises:
        EncoderError: The file is missing or unreadable, or a tensor is missing or has
            the wrong shape.
    """
    st = require_export_module("safetensors.numpy")
    errors = (require_export_module("safetensors").SafetensorError, OSError, ValueError)
    path = model_dir / _WEIGHTS_FILE
    if not path.is_file():
        raise EncoderError(f"{path}: not found (only safetensors weights are read)")
    try:
        raw = st.load_file(str(path))
    except errors as exc:
        raise EncoderError(f"{path}: not a readable safetensors file ({exc})") from None
    weights = {k.removeprefix("bert."): v for k, v in raw.items()}
    h, i = config.hidden, config.intermediate
    shapes: dict[str, tuple[int, ...]] = {
        "embeddings.LayerNorm.weight": (h,),
        "embeddings.LayerNorm.bias": (h,),
    }
    for n in range(config.layers):
        p = f"encoder.layer.{n}."
        for m in ("attention.self.query", "attention.self.key", "attention.self.value",
                  "attention.output.dense"):
            shapes[p + m + ".weight"] = (h, h)
            shapes[p + m + ".bias"] = (h,)
        shapes[p + "intermediate.dense.weight"] = (i, h)
        shapes[p + "intermediate.dense.bias"] = (i,)
        shapes[p + "output.dense.weight"] = (h, i)
        shapes[p + "output.dense.bias"] = (h,)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[p + ln + ".weight"] = (h,)
            shapes[p + ln + ".bias"] = (h,)
    for name, shape in shapes.items():
        if name not in weights:
            raise EncoderError(f"{path}: tensor {name!r} missing")
        if tuple(weights[name].shape) != shape:
            raise EncoderError(f"{path}: tensor {name!r} has shape {tuple(weights[name].shape)}, "
                               f"expected {shape}")
    for name in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
        key = f"embeddings.{name}.weight"
        w = weights.get(key)
        if w is None or w.ndim != 2 or w.shape[1] != h:
            raise EncoderError(f"{path}: tensor {key!r} missing or not [n, {h}]")
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in weights.items()
            if v.dtype.kind == "f"}


class _Graph:
    """Accumulates nodes and initializers with unique names."""

    def __init__(self, helper: ModuleType, numpy_helper: ModuleType) -> None:
        self.h, self.nh = helper, numpy_helper
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(self.nh.from_array(np.asarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], name: str | None = None, **attrs: Any) -> str:
        self._n += 1
        out = name or f"{op_type.lower()}_{self._n}"
        self.nodes.append(self.h.make_node(op_type, inputs, [out], name=f"{op_type}_{self._n}", **attrs))
        return out

    def linear(self, x: str, weights: Mapping[str, np.ndarray], prefix: str) -> str:
        # MatMul then Add(bias), the PyTorch exporter's nn.Linear pattern.
        w = self.const(prefix + ".weight_t", weights[prefix + ".weight"].T.copy())
        b = self.const(prefix + ".bias", weights[prefix + ".bias"])
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def layer_norm(self, x: str, weights: Mapping[str, np.ndarray], prefix: str, eps: float,
                   name: str | None = None) -> str:
        g = self.const(prefix + ".weight", weights[prefix + ".weight"])
        b = self.const(prefix + ".bias", weights[prefix + ".bias"])
        return self.op("LayerNormalization", [x, g, b], name=name, axis=-1, epsilon=eps)


def build_bert_onnx(model_dir: str | Path) -> Any:
    """The fp32 ONNX ``ModelProto`` of the BERT model in ``model_dir``.

    Args:
        model_dir: Folder with ``config.json`` (``model_type`` "bert") and
            ``model.safetensors`` (keys with or without the ``bert.`` prefix).

    Returns:
        An ``onnx.ModelProto`` (opset 17) taking int64 ``input_ids``,
        ``attention_mask`` and ``token_type_ids`` of shape [batch, sequence] and
        returning float32 ``last_hidden_state`` [batch, sequence, hidden]. It is checked
        with ``onnx.checker`` before it is returned.

    Raises:
        EncoderError: onnx or safetensors is missing, or the config or weights are not a
            supported BERT.
    """
    onnx = require_export_module("onnx")
    helper, numpy_helper, TensorProto = onnx.helper, onnx.numpy_helper, onnx.TensorProto
    src = Path(model_dir)
    cfg = BertConfig.from_dir(src)
    w = load_bert_weights(src, cfg)
    g = _Graph(helper, numpy_helper)
    hd = cfg.hidden // cfg.heads

    ids, mask, types = INPUT_NAMES
    # Embeddings: word + position (0..S-1) + token type, then LayerNorm.
    words = g.op("Gather", [g.const("embeddings.word_embeddings.weight",
                                    w["embeddings.word_embeddings.weight"]), ids])
    seq = g.op("Gather", [g.op("Shape", [ids]), g.const("one_i64", np.array(1, np.int64))], axis=0)
    positions = g.op("Unsqueeze", [g.op("Range", [g.const("zero_i64", np.array(0, np.int64)), seq,
                                                  "one_i64"]),
                                   g.const("axes_0", np.array([0], np.int64))])
    pos = g.op("Gather", [g.const("embeddings.position_embeddings.weight",
                                  w["embeddings.position_embeddings.weight"]), positions])
    tok = g.op("Gather", [g.const("embeddings.token_type_embeddings.weight",
                                  w["embeddings.token_type_embeddings.weight"]), types])
    x = g.layer_norm(g.op("Add", [g.op("Add", [words, pos]), tok]), w, "embeddings.LayerNorm", cfg.eps)

    # Additive mask [B, 1, 1, S]: 0 where attended, finfo(float32).min where padded.
    m = g.op("Unsqueeze", [g.op("Unsqueeze", [mask, "axes_1"]), "axes_2"])
    g.const("axes_1", np.array([1], np.int64))
    g.const("axes_2", np.array([2], np.int64))
    m = g.op("Cast", [m], to=TensorProto.FLOAT)
    m = g.op("Sub", [g.const("one_f32", np.array(1.0, np.float32)), m])
    additive = g.op("Mul", [m, g.const("mask_min", np.array(np.finfo(np.float32).min, np.float32))])

    split_heads = g.const("split_heads", np.array([0, 0, cfg.heads, hd], np.int64))
    merge_heads = g.const("merge_heads", np.array([0, 0, cfg.hidden], np.int64))
    scale = g.const("attn_scale", np.array(math.sqrt(hd), np.float32))
    sqrt2 = g.const("sqrt2", np.array(math.sqrt(2.0), np.float32))
    half = g.const("half", np.array(0.5, np.float32))
    for n in range(cfg.layers):
        p = f"encoder.layer.{n}."
        q = g.op("Transpose", [g.op("Reshape", [g.linear(x, w, p + "attention.self.query"), split_heads])],
                 perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [g.linear(x, w, p + "attention.self.key"), split_heads])],
                 perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [g.linear(x, w, p + "attention.self.value"), split_heads])],
                 perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Div", [g.op("MatMul", [q, k]), scale]), additive])
        ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), merge_heads])
        attn = g.linear(ctx, w, p + "attention.output.dense")
        x = g.layer_norm(g.op("Add", [attn, x]), w, p + "attention.output.LayerNorm", cfg.eps)
        inner = g.linear(x, w, p + "intermediate.dense")
        # Exact GELU as BertModel computes it: x * 0.5 * (1 + erf(x / sqrt(2))).
        gelu = g.op("Mul", [g.op("Mul", [inner, g.op("Add", [g.op("Erf", [g.op("Div", [inner, sqrt2])]),
                                                               "one_f32"])]), half])
        out = g.linear(gelu, w, p + "output.dense")
        last = n == cfg.layers - 1
        x = g.layer_norm(g.op("Add", [out, x]), w, p + "output.LayerNorm", cfg.eps,
                         name=OUTPUT_NAME if last else None)

    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        g.nodes, "bert",
        [helper.make_tensor_value_info(name, TensorProto.INT64, dims) for name in INPUT_NAMES],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, [*dims, cfg.hidden])],
        initializer=g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="toolsift")
    # The IR version of the installed onnx may be newer than onnxruntime reads.
    model.ir_version = min(model.ir_version, 8)
    onnx.checker.check_model(model, full_check=False)
    return model
