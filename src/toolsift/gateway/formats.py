"""Tool schemas in the host APIs' native formats, for the gateway.

The writers live beside the readers, one module per format
(:mod:`toolsift.adapters.openai`, :mod:`~toolsift.adapters.anthropic`,
:mod:`~toolsift.adapters.mcp`); this module re-exports them under the names the
gateway and integrations have always imported. :data:`FORMATS` are the formats the
gateway serves; :func:`to_format` also writes ``"openai-responses"``.
"""

from __future__ import annotations

from ..adapters.anthropic import to_anthropic
from ..adapters.mcp import to_mcp
from ..adapters.openai import to_openai
from ..adapters.writers import WRITE_FORMATS, input_schema, source_format, to_format
from .config import FORMATS

__all__ = [
    "FORMATS",
    "WRITE_FORMATS",
    "input_schema",
    "source_format",
    "to_anthropic",
    "to_format",
    "to_mcp",
    "to_openai",
]
