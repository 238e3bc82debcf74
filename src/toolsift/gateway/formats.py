"""Tool schemas in the host APIs' native formats.

A tool read from MCP, OpenAI or Anthropic keeps its original payload in
:attr:`Tool.source <toolsift.schema.Tool.source>`; its JSON Schema is returned as the
source wrote it (defaults, enums, nested objects, ``$defs`` intact), only re-wrapped for
the requested host. A tool from any other source (native catalogue, benchmark, Python
function) gets a schema built from its :class:`~toolsift.schema.Parameter` list.

The tool's *name* is always :attr:`Tool.name`, not the source's, so a tool renamed on
the way in (e.g. namespaced by an aggregating gateway) is called by its new name.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ..schema import Tool
from .config import FORMATS

__all__ = [
    "FORMATS",
    "input_schema",
    "source_format",
    "to_anthropic",
    "to_format",
    "to_mcp",
    "to_openai",
]

_JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})
# Type names written by Python-function and benchmark sources.
_TYPE_ALIASES = {
    "str": "string", "text": "string", "int": "integer", "float": "number", "double": "number",
    "bool": "boolean", "list": "array", "tuple": "array", "dict": "object", "none": "null",
}
# MCP behaviour hints and the tags the MCP adapter turns them into.
_HINT_TAGS = {
    "read-only": "readOnlyHint",
    "destructive": "destructiveHint",
    "idempotent": "idempotentHint",
    "open-world": "openWorldHint",
}
_MCP_KEYS = ("title", "description", "inputSchema", "outputSchema", "annotations", "_meta")


def source_format(tool: Tool) -> str | None:
    """The host format ``tool.source`` is written in, judged by its keys.

    Returns:
        ``"mcp"``, ``"openai"``, ``"anthropic"``, or ``None`` for any other source.
    """
    src = tool.source
    if not isinstance(src, Mapping):
        return None
    if "inputSchema" in src:
        return "mcp"
    if "input_schema" in src:
        return "anthropic"
    if isinstance(src.get("function"), Mapping) or src.get("type") in ("function", "custom"):
        return "openai"
    return None


def _source_schema(tool: Tool) -> Any:
    src = tool.source or {}
    fmt = source_format(tool)
    if fmt == "mcp":
        return src.get("inputSchema")
    if fmt == "anthropic":
        return src.get("input_schema")
    if fmt == "openai":
        body = src["function"] if isinstance(src.get("function"), Mapping) else src
        return body.get("parameters")
    return None


def _json_type(name: str) -> str | list[str] | None:
    """A JSON Schema ``type`` for a free-text parameter type, or ``None`` if unknown."""
    parts = [_TYPE_ALIASES.get(p.strip().lower(), p.strip().lower()) for p in name.split("|")]
    if not parts or any(p not in _JSON_TYPES for p in parts):
        # An unknown type ("Address", "any") is left open rather than guessed, so
        # validation never rejects values the tool would accept.
        return None
    return parts[0] if len(parts) == 1 else parts


def _built_schema(tool: Tool) -> dict[str, Any]:
    props: dict[str, Any] = {}
    # Sub-parameters (address.city) exist for retrieval; the call schema has only the
    # tool's own arguments.
    top = tool.top_level_parameters
    for p in top:
        prop: dict[str, Any] = {}
        t = _json_type(p.type)
        if t is not None:
            prop["type"] = t
        if p.description:
            prop["description"] = p.description
        if p.example is not None:
            prop["examples"] = [p.example]
        props[p.name] = prop
    return {
        "type": "object",
        "properties": props,
        "required": [p.name for p in top if p.required],
    }


def input_schema(tool: Tool) -> dict[str, Any]:
    """The JSON Schema of the tool's arguments (a fresh copy the caller may modify).

    The source's own schema when the tool came from MCP, OpenAI or Anthropic; otherwise
    an object schema built from the parameters, with a ``required`` list.
    """
    schema = _source_schema(tool)
    if isinstance(schema, Mapping):
        out = copy.deepcopy(dict(schema))
        # Hosts reject a function schema without a type; sources sometimes omit it.
        out.setdefault("type", "object")
        return out
    return _built_schema(tool)


def _body(tool: Tool) -> Mapping[str, Any]:
    src = tool.source or {}
    if source_format(tool) == "openai" and isinstance(src.get("function"), Mapping):
        return src["function"]
    return src if source_format(tool) else {}


def _description(tool: Tool, body: Mapping[str, Any]) -> str:
    desc = body.get("description")
    return desc if isinstance(desc, str) and desc.strip() else tool.description


def to_mcp(tool: Tool) -> dict[str, Any]:
    """The tool as an MCP ``tools/list`` entry.

    An MCP-sourced tool keeps its title, output schema, annotations and ``_meta``. Other
    tools get annotations from their behaviour tags and their remaining tags under
    ``_meta["toolsift/tags"]``, so risk labels survive the conversion (and the ETag,
    computed from this form, changes when they do).
    """
    src = tool.source or {}
    if source_format(tool) == "mcp":
        out: dict[str, Any] = {"name": tool.name}
        for key in _MCP_KEYS:
            if key in src:
                out[key] = copy.deepcopy(src[key])
        out["inputSchema"] = input_schema(tool)
        return out
    out = {"name": tool.name}
    desc = _description(tool, _body(tool))
    if desc:
        out["description"] = desc
    out["inputSchema"] = input_schema(tool)
    hints = {_HINT_TAGS[t]: True for t in tool.tags if t in _HINT_TAGS}
    if hints:
        out["annotations"] = hints
    rest = [t for t in tool.tags if t not in _HINT_TAGS]
    if rest:
        out["_meta"] = {"toolsift/tags": rest}
    return out



def to_openai(tool: Tool) -> dict[str, Any]:
    """The tool as an OpenAI Chat Completions tool: ``{"type": "function", "function": {...}}``.

    ``strict`` is kept when an OpenAI source set it.
    """
    body = _body(tool)
    fn: dict[str, Any] = {"name": tool.name}
    desc = _description(tool, body)
    if desc:
        fn["description"] = desc
    fn["parameters"] = input_schema(tool)
    src = tool.source or {}
    if source_format(tool) == "openai" and (body.get("strict") is True or src.get("strict") is True):
        fn["strict"] = True
    return {"type": "function", "function": fn}


def to_anthropic(tool: Tool) -> dict[str, Any]:
    """The tool as an Anthropic Messages API tool: ``{"name", "description", "input_schema"}``."""
    out: dict[str, Any] = {"name": tool.name}
    desc = _description(tool, _body(tool))
    if desc:
        out["description"] = desc
    out["input_schema"] = input_schema(tool)
    return out


_CONVERTERS = {"mcp": to_mcp, "openai": to_openai, "anthropic": to_anthropic}


def to_format(tool: Tool, format: str) -> dict[str, Any]:
    """The tool in host ``format`` (one of :data:`FORMATS`).

    Raises:
        ValueError: For an unknown format.
    """
    try:
        convert = _CONVERTERS[format]
    except KeyError:
        raise ValueError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}") from None
    return convert(tool)
