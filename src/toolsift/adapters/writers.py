"""Tools to host tool schemas: OpenAI, Anthropic and MCP, and by format name.

The writers live here, below the schema, and the readers (:mod:`.openai`,
:mod:`.anthropic`, :mod:`.mcp`) re-export them, so ``Tool.to_openai()`` and friends
depend on this module alone: it reads a tool's attributes and imports nothing that
imports :mod:`toolsift.schema` (tests/test_import_cycles.py). :func:`to_format` maps a
format name to its writer, for callers that pick the format at run time (the gateway's
``format`` argument, ``search(token_budget=..., format=...)``, the CLI's ``--format``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import FormatError
from ._writing import HINT_TAGS, description_of, input_schema, source_body, source_format

if TYPE_CHECKING:
    from ..schema import Tool

__all__ = ["EXAMPLES_KEY", "OPENAI_APIS", "TAGS_KEY", "WRITE_FORMATS", "check_format", "input_schema",
           "source_format", "to_anthropic", "to_format", "to_mcp", "to_openai"]

#: The OpenAI APIs :func:`to_openai` writes for.
OPENAI_APIS: tuple[str, ...] = ("chat", "responses")
#: ``_meta`` key holding example user intents (a toolsift convention; MCP reserves
#: prefixed keys for exactly this kind of vendor extension).
EXAMPLES_KEY = "toolsift/examples"
#: ``_meta`` key holding free tags such as the tool's domain.
TAGS_KEY = "toolsift/tags"


def to_openai(tool: Tool, *, api: str = "chat") -> dict[str, Any]:
    """The tool as an OpenAI function tool.

    Args:
        tool: Any tool; :attr:`Tool.name` is written, not the source's name.
        api: ``"chat"`` for Chat Completions, ``{"type": "function", "function":
            {"name", "description", "parameters"}}``; ``"responses"`` for the Responses
            API's flat ``{"type": "function", "name", "description", "parameters"}``.

    Returns:
        A fresh dict the caller may modify. ``strict`` is kept when an OpenAI source set
        it; the parameters are the source's own JSON Schema when there is one.

    Raises:
        FormatError: For an ``api`` other than ``"chat"`` or ``"responses"``.
    """
    if api not in OPENAI_APIS:
        raise FormatError(f"unknown OpenAI api {api!r}; expected one of {', '.join(OPENAI_APIS)}")
    fn: dict[str, Any] = {"name": tool.name}
    desc = description_of(tool)
    if desc:
        fn["description"] = desc
    fn["parameters"] = input_schema(tool)
    src = tool.source or {}
    if source_format(tool) == "openai" and (source_body(tool).get("strict") is True or src.get("strict") is True):
        fn["strict"] = True
    if api == "responses":
        return {"type": "function", **fn}
    return {"type": "function", "function": fn}


def to_anthropic(tool: Tool) -> dict[str, Any]:
    """The tool as an Anthropic Messages API tool: ``{"name", "description"?, "input_schema"}``.

    Args:
        tool: Any tool; :attr:`Tool.name` is written, not the source's name.

    Returns:
        A fresh dict the caller may modify; ``input_schema`` is the source's own JSON
        Schema when there is one.
    """
    out: dict[str, Any] = {"name": tool.name}
    desc = description_of(tool)
    if desc:
        out["description"] = desc
    out["input_schema"] = input_schema(tool)
    return out


# Keys of an MCP tool object carried over verbatim when the tool came from MCP.
_MCP_KEYS = ("title", "description", "inputSchema", "outputSchema", "annotations", "_meta")


def to_mcp(tool: Tool, *, examples: bool = False) -> dict[str, Any]:
    """The tool as an MCP ``tools/list`` entry: ``{"name", "title"?, "description"?,
    "inputSchema", "outputSchema"?, "annotations"?, "_meta"?}``.

    An MCP-sourced tool keeps its title, output schema, annotations and ``_meta``
    verbatim. Any other tool gets annotations from its behaviour tags and its remaining
    tags under ``_meta["toolsift/tags"]``, so risk labels survive the conversion (and the
    gateway's ETag, computed from this form, changes when they do).

    Args:
        tool: Any tool; :attr:`Tool.name` is written, not the source's name, so a tool
            renamed on the way in (e.g. namespaced by a gateway) is called by its new name.
        examples: Also write the tool's example intents under
            ``_meta["toolsift/examples"]`` (for exporting a catalogue; off by default
            because a host's model never needs them and they cost tokens).

    Returns:
        A fresh dict the caller may modify.
    """
    src = tool.source or {}
    out: dict[str, Any] = {"name": tool.name}
    if source_format(tool) == "mcp":
        for key in _MCP_KEYS:
            if key in src:
                out[key] = copy.deepcopy(src[key])
        out["inputSchema"] = input_schema(tool)
        return out
    desc = description_of(tool)
    if desc:
        out["description"] = desc
    out["inputSchema"] = input_schema(tool)
    hints = {HINT_TAGS[t]: True for t in tool.tags if t in HINT_TAGS}
    if hints:
        out["annotations"] = hints
    meta: dict[str, Any] = {}
    rest = [t for t in tool.tags if t not in HINT_TAGS]
    if rest:
        meta[TAGS_KEY] = rest
    if examples and tool.examples:
        meta[EXAMPLES_KEY] = list(tool.examples)
    if meta:
        out["_meta"] = meta
    return out




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
