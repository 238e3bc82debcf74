"""JSON Schema objects to toolsift parameters and response text.

Tool formats from OpenAI, Anthropic and MCP all describe inputs as a JSON Schema
``{"type": "object", "properties": {...}, "required": [...]}``. Only top-level
properties become :class:`~toolsift.schema.Parameter` objects: retrieval needs to know
*which* roles a tool takes, not the shape of nested values.

Required flags follow one rule for every format: a parameter is required unless the
source explicitly marks it optional. The explicit marks are

* a ``required`` array on the object that does not list the property,
* ``"required": false`` or ``"optional": true`` on the property itself,
* with ``nullable_optional=True`` (OpenAI strict mode, where every property must be
  listed in ``required``), a type that admits ``"null"``.

A schema without a ``required`` key therefore yields all-required parameters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import SchemaError
from ..schema import Parameter
from ._common import relocate

__all__ = ["parameters_from_schema", "type_name", "describe_output", "describe_fields"]

# Long enums (country codes, time zones) would swamp a parameter's description.
_MAX_ENUM_VALUES = 20


def type_name(schema: Mapping[str, Any]) -> str:
    """A short type label for a property schema.

    Lists of types are joined with ``"|"``; ``anyOf``/``oneOf`` alternatives likewise;
    a ``$ref`` is named by its last path segment.

    Args:
        schema: The property's JSON Schema.

    Returns:
        e.g. ``"string"``, ``"string|null"``, ``"Address"``, or ``"any"`` if unknown.
    """
    t = schema.get("type")
    if isinstance(t, str) and t:
        return t
    if isinstance(t, list) and t:
        return "|".join(str(x) for x in t)
    for key in ("anyOf", "oneOf"):
        alternatives = schema.get(key)
        if isinstance(alternatives, list) and alternatives:
            names: list[str] = []
            for alt in alternatives:
                name = type_name(alt) if isinstance(alt, Mapping) else "any"
                for part in name.split("|"):
                    if part not in names:
                        names.append(part)
            return "|".join(names)
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref:
        return ref.rstrip("/").rsplit("/", 1)[-1] or "any"
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        return "string"
    return "any"


def _enum_text(values: list[Any]) -> str:
    shown = [v if isinstance(v, str) else json.dumps(v) for v in values[:_MAX_ENUM_VALUES]]
    hidden = len(values) - _MAX_ENUM_VALUES
    more = f", ... ({hidden} more)" if hidden > 0 else ""
    return "One of: " + ", ".join(shown) + more + "."


def _description(schema: Mapping[str, Any], where: str) -> str:
    desc = schema.get("description")
    if desc is None:
        desc = schema.get("title")
    if desc is None:
        desc = ""
    if not isinstance(desc, str):
        raise SchemaError(where + ".description", f"expected a string, got {type(desc).__name__}")
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        desc = f"{desc.rstrip()} {_enum_text(enum)}".strip()
    return desc


def _example(schema: Mapping[str, Any]) -> Any:
    examples = schema.get("examples")
    if isinstance(examples, list):
        if examples:
            return examples[0]
    elif examples is not None:
        # Some generators write a single value where JSON Schema wants a list.
        return examples
    if "example" in schema:
        return schema["example"]
    return schema.get("default")


def _is_required(
    name: str, prop: Mapping[str, Any], required: list[str] | None, nullable_optional: bool
) -> bool:
    if prop.get("required") is False or prop.get("optional") is True:
        return False
    if nullable_optional:
        t = prop.get("type")
        if t == "null" or (isinstance(t, list) and "null" in t):
            return False
    return True if required is None else name in required


def _object_schema(schema: Any, where: str) -> Mapping[str, Any] | None:
    """``schema`` checked to be an object schema, or ``None`` when it is empty."""
    if schema is None:
        return None
    if not isinstance(schema, Mapping):
        raise SchemaError(
            where, f"expected a JSON Schema object, got {type(schema).__name__}"
        )
    t = schema.get("type")
    if t is not None and t != "object" and not (isinstance(t, list) and "object" in t):
        raise SchemaError(where, f'expected a schema with "type": "object", got "type": {t!r}')
    return schema


def parameters_from_schema(
    schema: Any, *, where: str, nullable_optional: bool = False
) -> tuple[Parameter, ...]:
    """Top-level properties of an object schema as parameters.

    Args:
        schema: A JSON Schema of ``"type": "object"``; ``None`` or ``{}`` means no
            parameters.
        where: Location of the schema for error messages, relative to the tool
            (``".inputSchema"``).
        nullable_optional: Treat a property whose type admits ``"null"`` as optional.

    Returns:
        One parameter per property, in the schema's order.

    Raises:
        SchemaError: If the schema is not an object schema, or a property is malformed.
    """
    obj = _object_schema(schema, where)
    if obj is None:
        return ()
    props = obj.get("properties")
    if props is None:
        return ()
    if not isinstance(props, Mapping):
        raise SchemaError(
            where + ".properties",
            f"expected an object of property schemas, got {type(props).__name__}",
        )
    required = obj.get("required")
    if required is not None and not (
        isinstance(required, list) and all(isinstance(r, str) for r in required)
    ):
        raise SchemaError(where + ".required", "expected a list of property names")
    params: list[Parameter] = []
    for name, prop in props.items():
        at = f"{where}.properties[{name!r}]"
        if prop is True:
            prop = {}  # JSON Schema ``true``: anything goes
        if not isinstance(prop, Mapping):
            raise SchemaError(at, f"expected a property schema object, got {type(prop).__name__}")
        try:
            params.append(
                Parameter(
                    name=name,
                    type=type_name(prop),
                    description=_description(prop, at),
                    required=_is_required(name, prop, required, nullable_optional),
                    example=_example(prop),
                )
            )
        except SchemaError as exc:
            if exc.where.startswith(where):
                raise
            raise relocate(at, exc) from None
    return tuple(params)


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


def describe_output(schema: Any, *, where: str) -> str:
    """A readable sentence describing what a tool returns, from its output schema.

    Args:
        schema: A JSON Schema of the tool's result (MCP ``outputSchema``), or ``None``.
        where: Location of the schema for error messages.

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
    desc = _description(schema, where)
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
