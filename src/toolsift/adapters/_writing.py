"""What every format writer shares: the tool's source format, its argument schema and
its description.

A tool read from MCP, OpenAI or Anthropic keeps its original payload in
:attr:`Tool.source <toolsift.schema.Tool.source>`; its JSON Schema is written back as the
source wrote it (defaults, enums, nested objects, ``$defs`` intact), only re-wrapped for
the requested host. A tool from any other source (native catalogue, benchmark, OpenAPI,
Python function) gets a schema built from its :class:`~toolsift.schema.Parameter` list.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..schema import Tool

__all__ = ["HINT_TAGS", "description_of", "input_schema", "source_body", "source_format"]

_JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})
# Type names written by Python-function and benchmark sources.
_TYPE_ALIASES = {
    "str": "string", "text": "string", "int": "integer", "float": "number", "double": "number",
    "bool": "boolean", "list": "array", "tuple": "array", "dict": "object", "none": "null",
}
#: Tags the MCP reader makes from behaviour hints, and the MCP annotation each stands for.
HINT_TAGS = {
    "read-only": "readOnlyHint",
    "destructive": "destructiveHint",
    "idempotent": "idempotentHint",
    "open-world": "openWorldHint",
}


def source_format(tool: Tool) -> str | None:
    """The host format ``tool.source`` is written in, judged by its keys.

    Returns:
        ``"mcp"``, ``"openai"``, ``"anthropic"``, or ``None`` for any other source
        (including OpenAPI operations, whose source is not a tool definition).
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


def source_body(tool: Tool) -> Mapping[str, Any]:
    """The part of the source holding name, description and schema (``{}`` if none).

    For an OpenAI Chat Completions tool that is the inner ``function`` object; for the
    flat Responses form, Anthropic and MCP it is the source itself.
    """
    src = tool.source or {}
    fmt = source_format(tool)
    if fmt == "openai" and isinstance(src.get("function"), Mapping):
        return src["function"]
    return src if fmt else {}


def _source_schema(tool: Tool) -> Any:
    fmt = source_format(tool)
    body = source_body(tool)
    if fmt == "mcp":
        return body.get("inputSchema")
    if fmt == "anthropic":
        return body.get("input_schema")
    if fmt == "openai":
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
    an object schema built from the top-level parameters, with a ``required`` list.
    """
    schema = _source_schema(tool)
    if isinstance(schema, Mapping):
        out = copy.deepcopy(dict(schema))
        # Hosts reject a function schema without a type; sources sometimes omit it.
        out.setdefault("type", "object")
        return out
    return _built_schema(tool)


def description_of(tool: Tool) -> str:
    """The description to write: the source's own text if it has one, else the tool's.

    The source's text wins because :attr:`Tool.description` may hold a stand-in (an
    MCP title) or an LLM-standardised rewrite meant for retrieval, not for the host.
    """
    desc = source_body(tool).get("description")
    return desc if isinstance(desc, str) and desc.strip() else tool.description
