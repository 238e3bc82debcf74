"""OpenAI function tools, both ways: tool lists to toolsift tools (:func:`from_openai`)
and tools to OpenAI tool definitions (:func:`to_openai`).

Three spellings of the same tool are accepted, in one list or mixed:

* Chat Completions: ``{"type": "function", "function": {"name", "description", "parameters"}}``
* Responses API (flat): ``{"type": "function", "name", "description", "parameters", "strict"}``
* legacy ``functions=[...]``: ``{"name", "description", "parameters"}``

Responses API ``"custom"`` tools (free-form input) become tools without parameters.
Built-in tools (``web_search``, ``file_search``, ``code_interpreter`` ...) have no
name or description of their own, so there is nothing to index: they are skipped.

Required flags: see :mod:`toolsift.adapters._jsonschema`. When a tool sets
``"strict": true`` every property must be listed in ``required``, and OpenAI's
documented way to make one optional is a type that admits ``null``; such properties
are marked optional.

:func:`to_openai` writes the Chat Completions form (``api="chat"``) or the flat Responses
form (``api="responses"``); :func:`from_openai` reads both back to the same tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import SchemaError
from ..schema import Parameter, Tool
from ._common import map_tools, require_name, text_or_empty, tool_list
from ._jsonschema import parameters_from_schema
from .writers import OPENAI_APIS, to_openai

__all__ = ["OPENAI_APIS", "from_openai", "openai_tool", "to_openai"]

#: The OpenAI APIs :func:`to_openai` writes for: Chat Completions and Responses.

_NAMED_TYPES = ("function", "custom")


def openai_tool(entry: Mapping[str, Any]) -> Tool | None:
    """Convert one OpenAI tool definition.

    Args:
        entry: One element of a ``tools`` (or legacy ``functions``) list.

    Returns:
        The tool, or ``None`` for a built-in tool type that has nothing to index.

    Raises:
        SchemaError: With a location relative to ``entry`` (e.g. ``".function.name"``).
    """
    kind = entry.get("type")
    if kind is not None and kind not in _NAMED_TYPES:
        if not isinstance(kind, str):
            raise SchemaError(".type", f"expected a string, got {type(kind).__name__}")
        return None
    if "function" in entry:
        body = entry["function"]
        base = ".function"
        if not isinstance(body, Mapping):
            raise SchemaError(base, f"expected an object, got {type(body).__name__}")
    else:
        body, base = entry, ""
    name = require_name(body, path=f"{base}.name")
    strict = body.get("strict") is True or entry.get("strict") is True
    params: tuple[Parameter, ...] = ()
    if kind != "custom":
        params = parameters_from_schema(
            body.get("parameters"), where=f"{base}.parameters", nullable_optional=strict
        )
    return Tool(
        id=name,
        name=name,
        description=text_or_empty(body.get("description"), f"{base}.description"),
        parameters=params,
        source=entry,
    )


def from_openai(payload: Any) -> list[Tool]:
    """Tools from an OpenAI ``tools`` list.

    Args:
        payload: A list of tool definitions, or an object holding one under
            ``"tools"`` or (legacy) ``"functions"``.

    Returns:
        One tool per function/custom tool, ids equal to names.

    Raises:
        CatalogFormatError: If no tool list is found.
        SchemaError: Naming the entry, e.g. ``"tools[2] (name='x').function.parameters"``.
    """
    prefix, entries = tool_list(payload, fmt="openai", keys=("tools", "functions"))
    return map_tools(prefix, entries, openai_tool)
