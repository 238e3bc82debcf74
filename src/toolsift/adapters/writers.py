"""Tools to host tool schemas, by format name.

Each format is read and written in its own module (:mod:`.openai`, :mod:`.anthropic`,
:mod:`.mcp`); this module only maps a format name to its writer, for callers that pick
the format at run time (the gateway's ``format`` argument, ``search(token_budget=...,
format=...)``, the CLI's ``--format``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import FormatError
from ..schema import Tool
from ._writing import input_schema, source_format
from .anthropic import to_anthropic
from .mcp import to_mcp
from .openai import to_openai

__all__ = ["WRITE_FORMATS", "check_format", "input_schema", "source_format", "to_format"]


def _responses(tool: Tool) -> dict[str, Any]:
    return to_openai(tool, api="responses")


_WRITERS: dict[str, Callable[[Tool], dict[str, Any]]] = {
    "openai": to_openai,
    "openai-responses": _responses,
    "anthropic": to_anthropic,
    "mcp": to_mcp,
}

#: Format names :func:`to_format` writes: ``"openai"`` (Chat Completions),
#: ``"openai-responses"`` (Responses API, flat), ``"anthropic"`` and ``"mcp"``.
WRITE_FORMATS: tuple[str, ...] = tuple(_WRITERS)


def check_format(format: str) -> str:
    """``format`` if :func:`to_format` can write it.

    Raises:
        FormatError: Naming the unknown format and the known ones.
    """
    if not isinstance(format, str) or format not in _WRITERS:
        raise FormatError(f"unknown tool format {format!r}; expected one of {', '.join(WRITE_FORMATS)}")
    return format


def to_format(tool: Tool, format: str) -> dict[str, Any]:
    """The tool in host ``format`` (one of :data:`WRITE_FORMATS`), a fresh dict.

    Raises:
        FormatError: For an unknown format (a ``ValueError`` too).
    """
    return _WRITERS[check_format(format)](tool)
