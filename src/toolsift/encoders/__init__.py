"""Sentence encoders for the dense retrieval path.

The encoder runs an ONNX graph with onnxruntime and tokenizes with the Rust
``tokenizers`` library, so query-time encoding never imports torch. Model files are
read from local disk only (an installed model package or a directory); nothing is
downloaded.

Example:
    >>> from toolsift.encoders import OnnxEncoder
    >>> enc = OnnxEncoder(threads=1)            # default: all-MiniLM-L6-v2, int8
    >>> enc.encode(["send a slack message"]).shape
    (1, 384)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolsift.lazy import lazy_exports

if TYPE_CHECKING:
    from toolsift.encoders.errors import EncoderError, EncoderInputError
    from toolsift.encoders.models import ModelFiles, default_model, resolve_model
    from toolsift.encoders.onnx import OnnxEncoder

# Resolved on first use: the package's modules (the embedding cache, fingerprints) are
# imported by every index load, the ONNX runner (thread pools, onnxruntime's wrapper)
# only by an index that embeds.
__getattr__, __dir__ = lazy_exports(__name__, {
    "EncoderError": "errors", "EncoderInputError": "errors", "ModelFiles": "models",
    "default_model": "models", "resolve_model": "models", "OnnxEncoder": "onnx",
}, globals())

__all__ = [
    "EncoderError",
    "EncoderInputError",
    "ModelFiles",
    "OnnxEncoder",
    "default_model",
    "resolve_model",
]
