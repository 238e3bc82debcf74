"""LangChain-style tools to toolsift tools, without importing LangChain.

Accepted entries, in a list or under ``{"tools": [...]}``:

* dicts ``{"name", "description", "args_schema"}`` where ``args_schema`` is a JSON
  Schema object (or a pydantic model class),
* dicts ``{"name", "description", "args"}`` where ``args`` is LangChain's ``tool.args``:
  the properties map alone. With no ``required`` list, a property carrying a
  ``default`` is optional (pydantic writes defaults only for optional fields),
* objects with ``.name``, ``.description`` and ``.args_schema`` (a pydantic v2 model
  class, read with ``model_json_schema()``; v1's ``schema()`` also works) or ``.args``.

Required flags otherwise follow :mod:`toolsift.adapters._jsonschema`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import CatalogFormatError, SchemaError, ToolsiftError
from ..schema import Tool
from ._common import item_label, located, require_name, text_or_empty
from ._jsonschema import parameters_from_schema

__all__ = ["from_langchain", "langchain_tool"]


def _model_schema(model: Any, where: str) -> Any:
    """The JSON Schema of a pydantic model class (v2, else v1), or ``model`` itself."""
    if isinstance(model, Mapping) or model is None:
        return model
    for method in ("model_json_schema", "schema"):
        fn = getattr(model, method, None)
        if callable(fn):
            try:
                return fn()
            except ToolsiftError:
                raise
            except Exception as exc:  # noqa: BLE001 - user models can fail in any way
                raise SchemaError(where, f"{method}() failed: {type(exc).__name__}: {exc}"[:300]) from None
    raise SchemaError(where, f"expected a JSON Schema or a pydantic model class, got {type(model).__name__}")


def _args_schema(args: Any, where: str) -> dict[str, Any]:
    if not isinstance(args, Mapping):
        raise SchemaError(where, f"expected an object of argument schemas, got {type(args).__name__}")
    required = [k for k, v in args.items() if not (isinstance(v, Mapping) and "default" in v)]
    return {"type": "object", "properties": dict(args), "required": required}


def _as_mapping(entry: Any) -> Mapping[str, Any]:
    """A dict view of a tool object (attributes read once; no LangChain import)."""
    if isinstance(entry, Mapping):
        return entry
    out: dict[str, Any] = {}
    for key in ("name", "description", "args_schema", "args"):
        try:
            value = getattr(entry, key, None)
        except Exception:  # noqa: BLE001 - a property that raises means "absent"
            value = None
        if value is not None:
            out[key] = value
    if "name" not in out:
        raise SchemaError("", f"expected a tool dict or an object with .name, got {type(entry).__name__}")
    if "args_schema" in out:
        out.pop("args", None)  # ``.args`` is derived from ``.args_schema``; read the source
    return out


def langchain_tool(entry: Any) -> Tool:
    """Convert one LangChain-style tool.

    Args:
        entry: A tool dict or a tool object (see the module docstring).

    Returns:
        The tool, its id equal to its name. ``source`` holds name, description and the
        argument JSON Schema.

    Raises:
        SchemaError: With a location relative to the entry (e.g. ``".args_schema"``).
    """
    data = _as_mapping(entry)
    name = require_name(data)
    description = text_or_empty(data.get("description"), ".description")
    if data.get("args_schema") is not None:
        schema = _model_schema(data["args_schema"], ".args_schema")
        params = parameters_from_schema(schema, where=".args_schema")
    elif data.get("args") is not None:
        schema = _args_schema(data["args"], ".args")
        params = parameters_from_schema(schema, where=".args")
    else:
        schema, params = None, ()
    source = dict(data) if isinstance(entry, Mapping) else {
        "name": name, "description": description, "args_schema": schema}
    return Tool(id=name, name=name, description=description, parameters=params, source=source)


def from_langchain(payload: Any) -> list[Tool]:
    """Tools from LangChain-style tool dicts or objects.

    Args:
        payload: A list of tools, or ``{"tools": [...]}``.

    Returns:
        One tool per entry, in order.

    Raises:
        CatalogFormatError: If no tool list is found.
        SchemaError: Naming the entry, e.g. ``"tools[1] (name='x').args_schema"``.
    """
    if isinstance(payload, Mapping):
        if "tools" not in payload:
            raise CatalogFormatError(
                f"langchain: expected a list of tools or an object with 'tools'; "
                f"got an object with keys {sorted(map(str, payload))[:8]}"
            )
        payload = payload["tools"]
    if not isinstance(payload, (list, tuple)):
        raise CatalogFormatError(
            f"langchain: expected a list of tools, got {type(payload).__name__}"
        )
    tools: list[Tool] = []
    for i, entry in enumerate(payload):
        label_src = entry if isinstance(entry, Mapping) else {"name": getattr(entry, "name", None)}
        where = item_label("tools", i, label_src)
        if isinstance(entry, (str, bytes, int, float, bool, list)) or entry is None:
            raise SchemaError(where, f"expected a tool object, got {type(entry).__name__}")
        with located(where):
            tools.append(langchain_tool(entry))
    return tools
