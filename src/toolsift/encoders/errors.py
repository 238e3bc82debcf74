"""The encoders' errors, in a module of their own so that every encoder module can raise
them without importing the package (whose ``__init__`` imports those modules)."""

from __future__ import annotations

from toolsift.errors import ToolsiftError

__all__ = ["EncoderError", "EncoderInputError"]


class EncoderError(ToolsiftError):
    """An encoder cannot be built or run: missing model file, package or bad model."""


class EncoderInputError(EncoderError, TypeError):
    """The texts given to :meth:`OnnxEncoder.encode` are not a sequence of ``str``."""
