"""MCP tools, both ways: ``tools/list`` results to toolsift tools (:func:`from_mcp`) and
tools to MCP tool objects (:func:`to_mcp`).

Accepted payloads:

* the result object ``{"tools": [...], "nextCursor": ...}``,
* the whole JSON-RPC response ``{"jsonrpc": "2.0", "id": ..., "result": {"tools": [...]}}``,
* a plain list of MCP tool objects.

Each tool ``{"name", "title"?, "description"?, "inputSchema", "outputSchema"?,
"annotations"?, "_meta"?}`` maps to the four fields as follows: ``inputSchema`` gives
the parameters, nested objects flattened (see :mod:`toolsift.adapters._jsonschema`);
``outputSchema`` becomes a sentence for ``response`` (titles a generator derived from
the tool name, such as FastMCP's ``"<name>Output"``, are left out);
``_meta["toolsift/examples"]`` gives ``examples``; ``_meta["toolsift/tags"]`` plus the
behaviour hints set to ``true`` in ``annotations`` give ``tags``. ``title`` stands in for a missing description.

:func:`to_mcp` writes the same keys back, so reading what it wrote gives the same tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import CatalogFormatError, SchemaError
from ..schema import Tool
from ._common import map_tools, require_name, text_or_empty, tool_list
from ._jsonschema import describe_output, parameters_from_schema
from ._writing import HINT_TAGS
from .writers import EXAMPLES_KEY, TAGS_KEY, to_mcp

__all__ = ["from_mcp", "mcp_tool", "to_mcp", "EXAMPLES_KEY", "TAGS_KEY"]

# Only hints explicitly set to true become tags: MCP's defaults (destructive unless
# told otherwise) say nothing about a particular tool.
_HINT_TAGS = {hint: tag for tag, hint in HINT_TAGS.items()}


def _string_list(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise SchemaError(where, f"expected a list of strings, got {type(value).__name__}")
    for i, v in enumerate(value):
        if not isinstance(v, str):
            raise SchemaError(f"{where}[{i}]", f"expected a string, got {type(v).__name__}")
    return list(value)


def _tags(entry: Mapping[str, Any], meta: Mapping[str, Any]) -> tuple[str, ...]:
    tags = _string_list(meta.get(TAGS_KEY), f"._meta[{TAGS_KEY!r}]")
    annotations = entry.get("annotations")
    if annotations is not None and not isinstance(annotations, Mapping):
        raise SchemaError(".annotations", f"expected an object, got {type(annotations).__name__}")
    for hint, tag in _HINT_TAGS.items():
        if annotations and annotations.get(hint) is True and tag not in tags:
            tags.append(tag)
    return tuple(tags)


def mcp_tool(entry: Mapping[str, Any]) -> Tool:
    """Convert one MCP tool object.

    Args:
        entry: One element of a ``tools/list`` result's ``tools``.

    Returns:
        The tool, its id equal to its name.

    Raises:
        SchemaError: With a location relative to ``entry`` (e.g. ``".inputSchema"``).
    """
    name = require_name(entry)
    meta = entry.get("_meta") or {}
    if not isinstance(meta, Mapping):
        raise SchemaError("._meta", f"expected an object, got {type(meta).__name__}")
    description = text_or_empty(entry.get("description"), ".description")
    if not description.strip():
        description = text_or_empty(entry.get("title"), ".title")
    return Tool(
        id=name,
        name=name,
        description=description,
        parameters=parameters_from_schema(entry.get("inputSchema"), where=".inputSchema"),
        response=describe_output(entry.get("outputSchema"), where=".outputSchema", name=name),
        examples=tuple(_string_list(meta.get(EXAMPLES_KEY), f"._meta[{EXAMPLES_KEY!r}]")),
        tags=_tags(entry, meta),
        source=entry,
    )


def _unwrap(payload: Any) -> tuple[str, Any]:
    """Strip a JSON-RPC envelope, returning ``(path prefix, tools/list result)``."""
    if isinstance(payload, Mapping) and "jsonrpc" in payload:
        if "error" in payload:
            err = payload["error"]
            if isinstance(err, Mapping):
                detail = f"code {err.get('code')}: {err.get('message')}"
            else:
                detail = repr(err)
            raise CatalogFormatError(f"mcp: the JSON-RPC response is an error ({detail})")
        if "result" not in payload:
            raise CatalogFormatError("mcp: the JSON-RPC response has no 'result'")
        return "result.", payload["result"]
    return "", payload


def from_mcp(payload: Any) -> list[Tool]:
    """Tools from an MCP ``tools/list`` result.

    Args:
        payload: A result object, a JSON-RPC response wrapping one, or a list of tools.

    Returns:
        One tool per entry.

    Raises:
        CatalogFormatError: If the payload is a JSON-RPC error or holds no tool list.
        SchemaError: Naming the entry, e.g. ``"result.tools[3] (name='x').inputSchema"``.
    """
    outer, result = _unwrap(payload)
    prefix, entries = tool_list(result, fmt="mcp")
    return map_tools(outer + prefix, entries, mcp_tool)
