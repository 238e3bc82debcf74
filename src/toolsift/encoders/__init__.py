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

from toolsift.errors import ToolsiftError

__all__ = [
    "EncoderError",
    "EncoderInputError",
    "ModelFiles",
    "OnnxEncoder",
    "default_model",
    "resolve_model",
]


class EncoderError(ToolsiftError):
    """An encoder cannot be built or run: missing model file, package or bad model."""


class EncoderInputError(EncoderError, TypeError):
    """The texts given to :meth:`OnnxEncoder.encode` are not a sequence of ``str``."""


# Imported after the error classes because both modules raise them.
from toolsift.encoders.models import ModelFiles, default_model, resolve_model
from toolsift.encoders.onnx import OnnxEncoder
