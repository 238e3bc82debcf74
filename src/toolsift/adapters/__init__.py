"""Catalogue adapters: read tool definitions from common formats into a :class:`Catalog`.

Supported formats (:data:`FORMATS`):

* ``"native"``: a list of :meth:`Tool.to_dict` objects, or
  ``{"format": "toolsift", "tools": [...]}``.
* ``"openai"``: OpenAI function tools (Chat Completions, Responses API, legacy
  ``functions``).
* ``"anthropic"``: Anthropic ``{"name", "description", "input_schema"}`` tools.
* ``"mcp"``: an MCP ``tools/list`` result, bare or in a JSON-RPC response.
* ``"toolret"``: ToolRet benchmark ``tools.json`` records.
* ``"mftr-augmented"``: MFTR LLM-standardized benchmark tools.

OpenAI (Chat Completions and Responses), Anthropic and MCP are also written, by the module
that reads them (:func:`to_openai`, :func:`to_anthropic`, :func:`to_mcp`; by name:
:func:`to_format` with one of :data:`WRITE_FORMATS`); ``Tool.to_openai()`` and friends
call these.

JSON Schema inputs (OpenAI, Anthropic, MCP, Gemini, LangChain, OpenAPI bodies) accept
legacy type spellings such as BFCL's ``"type": "dict"``, and properties of nested objects
become sub-parameters of their own (``address.city``, ``stops[].name``); the tool's
``source`` keeps the schema exactly as given. See :mod:`toolsift.adapters._nested`.

Example:
    >>> from toolsift.adapters import load_catalog
    >>> catalog = load_catalog("tools.json")            # format detected from content
    >>> catalog = load_catalog(payload, format="mcp")   # already-parsed payload
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import CatalogFormatError, SchemaError
from ..schema import Catalog, Tool
from ._common import checked_path, read_json
from .anthropic import anthropic_tool, from_anthropic, to_anthropic
from .benchmark import (
    BenchmarkQuery,
    from_mftr_augmented,
    from_toolret,
    load_queries,
    mftr_augmented_tool,
    toolret_tool,
)
from .gemini import from_gemini, gemini_tool
from .langchain import from_langchain, langchain_tool
from .live_mcp import from_mcp_server, load_mcp_server
from .mcp import from_mcp, mcp_tool, to_mcp
from .native import NATIVE_FORMAT, from_native, native_tool
from .openai import from_openai, openai_tool, to_openai
from .openapi import from_openapi, load_openapi, read_openapi
from .python import from_callable, from_module
from .writers import WRITE_FORMATS, to_format

__all__ = [
    "as_catalog",
    "from_openapi",
    "load_openapi",
    "read_openapi",
    "from_gemini",
    "gemini_tool",
    "from_langchain",
    "langchain_tool",
    "from_callable",
    "from_module",
    "from_mcp_server",
    "load_mcp_server",
    "FORMATS",
    "load_catalog",
    "detect_format",
    "read_json",
    "from_native",
    "from_openai",
    "from_anthropic",
    "from_mcp",
    "from_toolret",
    "from_mftr_augmented",
    "native_tool",
    "openai_tool",
    "anthropic_tool",
    "mcp_tool",
    "toolret_tool",
    "mftr_augmented_tool",
    "BenchmarkQuery",
    "load_queries",
    "demo_catalog_path",
    "WRITE_FORMATS",
    "to_anthropic",
    "to_format",
    "to_mcp",
    "to_openai",
]

_READERS: dict[str, Callable[[Any], list[Tool]]] = {
    "openapi": from_openapi,
    "gemini": from_gemini,
    "langchain": from_langchain,
    "native": from_native,
    "openai": from_openai,
    "anthropic": from_anthropic,
    "mcp": from_mcp,
    "toolret": from_toolret,
    "mftr-augmented": from_mftr_augmented,
}

#: Format names accepted by :func:`load_catalog` (besides ``"auto"``).
FORMATS: tuple[str, ...] = tuple(_READERS)

_NATIVE_ONLY_KEYS = ("id", "response", "examples", "tags")


def _entry_format(entry: Mapping[str, Any]) -> str | None:
    """Format of one tool entry, judged by keys no other format uses."""
    if "documentation" in entry:
        return "toolret"
    if "augmented" in entry:
        return "mftr-augmented"
    if "inputSchema" in entry or "outputSchema" in entry:
        return "mcp"
    if "input_schema" in entry:
        return "anthropic"
    if isinstance(entry.get("function"), Mapping) or entry.get("type") is not None:
        return "openai"
    params = entry.get("parameters")
    if isinstance(params, list) or any(k in entry for k in _NATIVE_ONLY_KEYS):
        return "native"
    if isinstance(params, Mapping) or "name" in entry:
        return "openai"  # legacy ``functions`` entry: name, description, JSON Schema
    return None


def detect_format(payload: Any) -> str:
    """Guess the catalogue format of a parsed payload.

    Wrappers decide first (``{"format": "toolsift"}``, a JSON-RPC envelope, MCP's
    ``nextCursor``); otherwise the first tool entry's keys decide. An empty list is
    an empty native catalogue.

    Args:
        payload: The parsed JSON.

    Returns:
        One of :data:`FORMATS`.

    Raises:
        CatalogFormatError: If the format cannot be recognised.
    """
    entries: Any = payload
    if isinstance(payload, Mapping):
        if "openapi" in payload or "swagger" in payload:
            return "openapi"
        if "functionDeclarations" in payload or "function_declarations" in payload:
            return "gemini"
        if payload.get("format") == NATIVE_FORMAT:
            return "native"
        if "jsonrpc" in payload or "nextCursor" in payload:
            return "mcp"
        if "functions" in payload and "tools" not in payload:
            return "openai"
        entries = payload.get("tools")
        if not isinstance(entries, list):
            raise CatalogFormatError(
                "cannot detect the catalogue format: expected a list of tools or an object "
                f"with a 'tools' list; got an object with keys {sorted(map(str, payload))[:8]}"
            )
    elif not isinstance(entries, list):
        raise CatalogFormatError(
            f"cannot detect the catalogue format of a {type(payload).__name__}; "
            "expected a list of tools or an object"
        )
    first = next((e for e in entries if isinstance(e, Mapping)), None)
    if first is None:
        if entries:
            raise CatalogFormatError(
                "cannot detect the catalogue format: no tool entry is an object"
            )
        return "native"
    fmt = _entry_format(first)
    if fmt is None:
        raise CatalogFormatError(
            "cannot detect the catalogue format from a tool with keys "
            f"{sorted(map(str, first))[:8]}; pass format= one of {', '.join(FORMATS)}"
        )
    return fmt


def load_catalog(
    source: str | os.PathLike[str] | list[Any] | Mapping[str, Any],
    *,
    format: str = "auto",
    name: str | None = None,
) -> Catalog:
    """Load a tool catalogue from a JSON file or a parsed payload.

    Args:
        source: Path to a JSON file, or the already-parsed list/object.
        format: One of :data:`FORMATS`, or ``"auto"`` to detect it (:func:`detect_format`).
        name: Catalogue name; defaults to the file name, or ``"catalog"``.

    Returns:
        The catalogue, tools in source order.

    Raises:
        CatalogFormatError: If the file cannot be read or parsed (the message names the
            file, and the line and column of a JSON syntax error), if a string source
            cannot be a path (empty, a NUL byte, JSON text passed instead of a path), or
            if the format is unknown or does not match the payload.
        SchemaError: If a tool is invalid or two tools share an id; the message names
            the file (for file sources) and the tool's position, e.g.
            ``"tools.json: tools[3] (name='send_mail').inputSchema: ..."``.
    """
    if format != "auto" and format not in _READERS:
        raise CatalogFormatError(
            f"unknown catalogue format {format!r}; expected 'auto' or one of {', '.join(FORMATS)}"
        )
    label = ""
    if isinstance(source, (str, os.PathLike)):
        path = checked_path(source)
        label = str(path)
        yaml_file = label.lower().endswith((".yaml", ".yml"))
        payload = read_openapi(path) if (format == "openapi" or yaml_file) else read_json(path)
        name = name or path.name
    elif isinstance(source, (list, Mapping)):
        payload = source
    else:
        raise CatalogFormatError(
            f"expected a path or a parsed JSON list/object, got {type(source).__name__}"
        )
    try:
        fmt = detect_format(payload) if format == "auto" else format
        tools = _READERS[fmt](payload)
        # Named "tools" while checking ids so a duplicate reads "tools[5] (id='x')",
        # like every other location; the caller's name is set afterwards.
        catalog = Catalog(tools, name="tools")
        catalog.name = name or "catalog"
        return catalog
    except CatalogFormatError as exc:
        if label:
            raise CatalogFormatError(f"{label}: {exc}") from None
        raise
    except SchemaError as exc:
        if label:
            raise type(exc)(label, str(exc)) from None
        raise


def as_catalog(tools: Any) -> Catalog:
    """Any tool source toolsift accepts, as a :class:`Catalog`: a catalogue, a list of
    :class:`Tool`, a path or parsed payload :func:`load_catalog` reads (OpenAI,
    Anthropic, MCP, OpenAPI ... tool dicts, in any mix of one format), or tool objects
    with ``.name``, ``.description`` and ``.args_schema`` (LangChain, LlamaIndex).

    Raises:
        SchemaError, CatalogFormatError: ``tools`` cannot be read.
    """
    if isinstance(tools, Catalog):
        return tools
    if isinstance(tools, (str, os.PathLike, Mapping)):
        return load_catalog(tools)
    if isinstance(tools, Iterable):
        items = list(tools)
        if all(isinstance(t, Tool) for t in items):
            return Catalog(items)
        # Tool objects rather than JSON (LangChain BaseTool, LlamaIndex FunctionTool
        # metadata ...) are read by the LangChain reader, which takes any object with
        # .name, .description and .args_schema.
        objects = not any(isinstance(t, (Mapping, Tool)) for t in items)
        return load_catalog(items, format="langchain") if objects else load_catalog(items)
    raise SchemaError("tools", f"expected a Catalog, a list of tools or a catalogue path/payload, "
                               f"got {type(tools).__name__}")


def demo_catalog_path() -> Path:
    """Path of the demo catalogue shipped with toolsift (MCP ``tools/list`` format)."""
    return Path(__file__).resolve().parent.parent / "data" / "demo_tools.json"
