"""The toolsift native catalogue format.

A native catalogue is a list of :meth:`Tool.to_dict <toolsift.schema.Tool.to_dict>`
objects, optionally wrapped as ``{"format": "toolsift", "tools": [...]}``. Parameters
carry an explicit ``required`` flag (default ``true``); ``id`` defaults to ``name``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import CatalogFormatError
from ..schema import Tool
from ._common import map_tools, require_name, tool_list

__all__ = ["from_native", "native_tool", "NATIVE_FORMAT"]

#: Value of the ``"format"`` key in a wrapped native catalogue.
NATIVE_FORMAT = "toolsift"


def native_tool(entry: Mapping[str, Any]) -> Tool:
    """Convert one native tool object.

    Mirrors :meth:`Tool.from_dict` but builds the tool directly, so that validation
    errors keep their own location (``".parameters[1]"``) instead of being folded into
    the message.

    Raises:
        SchemaError: With a location relative to ``entry``.
    """
    require_name(entry)
    # Tool.from_dict is the inverse of Tool.to_dict; locations stay relative to `entry`.
    return Tool.from_dict(entry, where="")


def from_native(payload: Any) -> list[Tool]:
    """Tools from a native catalogue.

    Args:
        payload: A list of tool objects or ``{"format": "toolsift", "tools": [...]}``.

    Returns:
        One tool per entry.

    Raises:
        CatalogFormatError: If the wrapper names another format or holds no tool list.
        SchemaError: Naming the entry, e.g. ``"tools[3] (name='x')"``.
    """
    if isinstance(payload, Mapping) and payload.get("format", NATIVE_FORMAT) != NATIVE_FORMAT:
        raise CatalogFormatError(
            f"native: expected \"format\": {NATIVE_FORMAT!r}, got {payload.get('format')!r}"
        )
    prefix, entries = tool_list(payload, fmt="native")
    return map_tools(prefix, entries, native_tool)
