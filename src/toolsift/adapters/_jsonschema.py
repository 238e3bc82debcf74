"""JSON Schema objects to toolsift parameters and response text.

Tool formats from OpenAI, Anthropic and MCP all describe inputs as a JSON Schema
``{"type": "object", "properties": {...}, "required": [...]}``. Its properties become
:class:`~toolsift.schema.Parameter` objects, and the properties of nested objects become
dotted sub-parameters (``address.city``, ``stops[].name``): naming, required flags and
bounds are described in :mod:`toolsift.adapters._nested`.

Required flags of top-level parameters follow one rule for every format: a parameter is
required unless the source explicitly marks it optional. The explicit marks are

* a ``required`` array on the object that does not list the property,
* ``"required": false`` or ``"optional": true`` on the property itself,
* with ``nullable_optional=True`` (OpenAI strict mode, where every property must be
  listed in ``required``), a type that admits ``"null"``.

A schema without a ``required`` key therefore yields all-required top-level parameters.

Types: JSON Schema names plus legacy spellings (``"dict"``, ``"float"``, ``"list"``...),
see :mod:`toolsift.adapters._jsontypes`; an unknown type is a
:class:`~toolsift.errors.SchemaError` naming the path. Titles generated from names
(``"search_notesOutput"``) never stand in for descriptions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import SchemaError
from ..schema import Parameter
from ._jsontypes import JSON_TYPES, TYPE_ALIASES, is_generated_title, type_name
from ._jsontypes import description as _description
from ._nested import MAX_DEPTH, MAX_PARAMETERS, read_parameters

__all__ = [
    "JSON_TYPES",
    "MAX_DEPTH",
    "MAX_PARAMETERS",
    "TYPE_ALIASES",
    "describe_fields",
    "describe_output",
    "is_generated_title",
    "parameters_from_schema",
    "type_name",
]


def parameters_from_schema(
    schema: Any, *, where: str, nullable_optional: bool = False,
    max_depth: int = MAX_DEPTH, max_parameters: int = MAX_PARAMETERS,
) -> tuple[Parameter, ...]:
    """Properties of an object schema as parameters, nested objects flattened.

    Args:
        schema: A JSON Schema of ``"type": "object"`` (or a legacy spelling such as
            ``"dict"``); ``None`` or ``{}`` means no parameters.
        where: Location of the schema for error messages, relative to the tool
            (``".inputSchema"``).
        nullable_optional: Treat a property whose type admits ``"null"`` as optional.
        max_depth: Deepest sub-parameter kept; ``1`` reads top-level properties only.
        max_parameters: Most parameters returned (top-level ones are always kept).

    Returns:
        One parameter per property in the schema's order, each followed by its
        sub-parameters (``address``, ``address.city``, ``address.zip``, ``notes``).

    Raises:
        SchemaError: If the schema is not an object schema, or a property is malformed
            or has an unknown type.
    """
    return read_parameters(schema, where=where, nullable_optional=nullable_optional,
                           max_depth=max_depth, max_parameters=max_parameters)


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _field_line(name: str, type_: str, desc: str) -> str:
    line = f"{name} ({type_})" if type_ and type_ != "any" else name
    desc = desc.strip().rstrip(".;")
    return f"{line}: {desc}" if desc else line


def describe_fields(fields: Mapping[str, Any], *, lead: str = "Returns an object with") -> str:
    """A sentence listing named output fields.

    Args:
        fields: ``{name: {"type": ..., "description": ...}}``; entries that are not
            objects are listed by name only.
        lead: Opening words of the sentence.

    Returns:
        e.g. ``"Returns an object with: token (str): the session token."``, or ``""``
        when ``fields`` is empty.
    """
    lines = []
    for name, spec in fields.items():
        if isinstance(spec, Mapping):
            desc = spec.get("description")
            lines.append(
                _field_line(str(name), type_name(spec), desc if isinstance(desc, str) else "")
            )
        else:
            lines.append(str(name))
    return f"{lead}: {'; '.join(lines)}." if lines else ""


def describe_output(schema: Any, *, where: str, name: str | None = None) -> str:
    """A readable sentence describing what a tool returns, from its output schema.

    A ``title`` stands in for a missing ``description`` unless a generator derived it
    from a name (FastMCP's ``"search_notesOutput"``).

    Args:
        schema: A JSON Schema of the tool's result (MCP ``outputSchema``), or ``None``.
        where: Location of the schema for error messages.
        name: The tool's name, so that a title merely restating it is dropped too.

    Returns:
        e.g. ``"Current conditions. Returns an object with: temperature (number):
        current temperature in Celsius; humidity (integer): relative humidity."``;
        ``""`` for a missing or empty schema.

    Raises:
        SchemaError: If ``schema`` is present but not an object.
    """
    if schema is None:
        return ""
    if not isinstance(schema, Mapping):
        raise SchemaError(where, f"expected a JSON Schema object, got {type(schema).__name__}")
    parts: list[str] = []
    desc = _description(schema, where, name=name)
    if desc.strip():
        desc = desc.strip()
        parts.append(desc if desc.endswith((".", "!", "?")) else desc + ".")
    props = schema.get("properties")
    items = schema.get("items")
    if isinstance(props, Mapping) and props:
        parts.append(describe_fields(props))
    elif isinstance(items, Mapping) and isinstance(items.get("properties"), Mapping) and (
        items["properties"]
    ):
        parts.append(
            describe_fields(items["properties"], lead="Returns a list of objects, each with")
        )
    elif isinstance(items, Mapping):
        item_type = type_name(items)
        item_desc = _description(items, where + ".items").strip().rstrip(".")
        tail = f": {item_desc}" if item_desc else ""
        parts.append(f"Returns a list of {item_type} values{tail}.")
    elif schema:
        t = type_name(schema)
        if t != "any":
            parts.append(f"Returns {_article(t)} {t}.")
    return " ".join(parts)
