"""Anthropic Messages API tools, both ways: tool lists to toolsift tools
(:func:`from_anthropic`) and tools to Anthropic tool definitions (:func:`to_anthropic`).

A client tool is ``{"name", "description", "input_schema"}`` (plus optional keys such
as ``cache_control`` that do not affect retrieval). Server tools
(``{"type": "web_search_20250305", "name": "web_search"}``) carry a name but no
schema; they load as tools without parameters.

Required flags: see :mod:`toolsift.adapters._jsonschema`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..schema import Tool
from ._common import map_tools, require_name, text_or_empty, tool_list
from ._jsonschema import parameters_from_schema
from .writers import to_anthropic

__all__ = ["from_anthropic", "anthropic_tool", "to_anthropic"]


def anthropic_tool(entry: Mapping[str, Any]) -> Tool:
    """Convert one Anthropic tool definition.

    Args:
        entry: One element of a ``tools`` list.

    Returns:
        The tool, its id equal to its name.

    Raises:
        SchemaError: With a location relative to ``entry`` (e.g. ``".input_schema"``).
    """
    name = require_name(entry)
    return Tool(
        id=name,
        name=name,
        description=text_or_empty(entry.get("description"), ".description"),
        parameters=parameters_from_schema(entry.get("input_schema"), where=".input_schema"),
        source=entry,
    )


def from_anthropic(payload: Any) -> list[Tool]:
    """Tools from an Anthropic ``tools`` list.

    Args:
        payload: A list of tool definitions or an object with a ``"tools"`` list.

    Returns:
        One tool per entry.

    Raises:
        CatalogFormatError: If no tool list is found.
        SchemaError: Naming the entry, e.g. ``"tools[0] (name='x').input_schema"``.
    """
    prefix, entries = tool_list(payload, fmt="anthropic")
    return map_tools(prefix, entries, anthropic_tool)
