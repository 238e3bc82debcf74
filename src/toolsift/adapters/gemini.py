"""Gemini function declarations to toolsift tools.

Accepted payloads (camelCase as in the REST API, snake_case as in the Python SDK):

* a list of declarations ``{"name", "description", "parameters"}``,
* ``{"functionDeclarations": [...]}`` (one Gemini ``Tool``),
* ``{"tools": [{"functionDeclarations": [...]}, {"googleSearch": {}}, ...]}`` or a list
  of such tool objects; built-in tools (search, code execution) have nothing to index.

``parameters`` is Gemini's OpenAPI-subset schema, whose types are often upper-case
enum names (``"OBJECT"``, ``"STRING"``); they are lower-cased before reading.
``parametersJsonSchema`` (plain JSON Schema) is used when ``parameters`` is absent, and
``response`` / ``responseJsonSchema`` become the response text. Required flags: see
:mod:`toolsift.adapters._jsonschema`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import CatalogFormatError, SchemaError
from ..schema import Tool
from ._common import item_label, located, map_tools, require_name, text_or_empty
from ._jsonschema import describe_output, parameters_from_schema

__all__ = ["from_gemini", "gemini_tool"]

_DECL_KEYS = ("functionDeclarations", "function_declarations")
# Deeper nesting than this is never read (only top-level properties matter) and would
# only risk recursion limits on hostile input.
_MAX_DEPTH = 32


def _lower_types(schema: Any, depth: int = 0) -> Any:
    """``schema`` with Gemini's enum-style type names in JSON Schema spelling."""
    if depth > _MAX_DEPTH:
        return schema
    if isinstance(schema, list):
        return [_lower_types(s, depth + 1) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {k: _lower_types(v, depth + 1) for k, v in schema.items()}
    t = out.get("type")
    if isinstance(t, str):
        out["type"] = t.lower() if t != "TYPE_UNSPECIFIED" else "any"
        if out.get("nullable") is True:
            out["type"] = [out["type"], "null"]
    return out


def _pick(entry: Mapping[str, Any], *keys: str) -> tuple[str, Any]:
    for key in keys:
        if entry.get(key) is not None:
            return key, entry[key]
    return keys[0], None


def gemini_tool(entry: Mapping[str, Any]) -> Tool:
    """Convert one Gemini ``FunctionDeclaration``.

    Args:
        entry: ``{"name", "description"?, "parameters"?, "response"?}``.

    Returns:
        The tool, its id equal to its name.

    Raises:
        SchemaError: With a location relative to ``entry`` (e.g. ``".parameters"``).
    """
    name = require_name(entry)
    pkey, params = _pick(entry, "parameters", "parametersJsonSchema", "parameters_json_schema")
    rkey, response = _pick(entry, "response", "responseJsonSchema", "response_json_schema")
    return Tool(
        id=name,
        name=name,
        description=text_or_empty(entry.get("description"), ".description"),
        parameters=parameters_from_schema(_lower_types(params), where=f".{pkey}"),
        response=describe_output(_lower_types(response), where=f".{rkey}"),
        source=entry,
    )


def _declarations(obj: Mapping[str, Any]) -> tuple[str, Any] | None:
    for key in _DECL_KEYS:
        if key in obj:
            return key, obj[key]
    return None


def _check_list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise CatalogFormatError(f"gemini: {where} must be a list, got {type(value).__name__}")
    return value


def from_gemini(payload: Any) -> list[Tool]:
    """Tools from Gemini function declarations.

    Args:
        payload: Declarations, a Gemini tool object, or a ``tools`` list of them.

    Returns:
        One tool per function declaration, in order.

    Raises:
        CatalogFormatError: If no declarations can be found.
        SchemaError: Naming the entry, e.g.
            ``"tools[0].functionDeclarations[2] (name='x').parameters"``.
    """
    if isinstance(payload, Mapping):
        found = _declarations(payload)
        if found is not None:
            key, decls = found
            return map_tools(key, _check_list(decls, repr(key)), gemini_tool)
        if "tools" not in payload:
            raise CatalogFormatError(
                "gemini: expected declarations, 'functionDeclarations' or 'tools'; "
                f"got an object with keys {sorted(map(str, payload))[:8]}"
            )
        prefix, entries = "tools", _check_list(payload["tools"], "'tools'")
    elif isinstance(payload, list):
        prefix, entries = "tools", payload
    else:
        raise CatalogFormatError(
            f"gemini: expected a list or an object, got {type(payload).__name__}"
        )
    tools: list[Tool] = []
    for i, entry in enumerate(entries):
        found = _declarations(entry) if isinstance(entry, Mapping) else None
        if found is not None:
            key, decls = found
            at = f"{prefix}[{i}].{key}"
            tools += map_tools(at, _check_list(decls, at), gemini_tool)
        elif isinstance(entry, Mapping) and "name" not in entry:
            continue  # a built-in tool such as {"googleSearch": {}}
        else:
            where = item_label(prefix, i, entry)
            if not isinstance(entry, Mapping):
                raise SchemaError(where, f"expected a tool object, got {type(entry).__name__}")
            with located(where):
                tools.append(gemini_tool(entry))
    return tools
