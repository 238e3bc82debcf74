"""Reading single JSON Schema nodes: type names, descriptions, examples, required flags.

Types are read strictly for parameters: the seven JSON Schema type names (plus ``"any"``)
and the legacy spellings in :data:`TYPE_ALIASES` (``"dict"`` from BFCL/Gorilla function
docs, Python names such as ``"float"`` or ``"list"``), mapped to their JSON Schema name.
Any other type raises :class:`~toolsift.errors.SchemaError` naming the schema path.

Titles stand in for missing descriptions only when a person wrote them: titles that code
generators derive from names (pydantic's ``"Max Results"`` for ``max_results``, FastMCP's
``"search_notesArguments"`` / ``"search_notesOutput"`` model names) carry no information
and are never indexed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..errors import SchemaError

__all__ = [
    "JSON_TYPES",
    "TYPE_ALIASES",
    "declared_types",
    "description",
    "example",
    "is_generated_title",
    "is_required",
    "json_type",
    "param_type",
    "type_name",
]

# Long enums (country codes, time zones) would swamp a parameter's description.
_MAX_ENUM_VALUES = 20

# anyOf inside anyOf ... is legal JSON Schema; a bound keeps hostile input from
# exhausting the stack.
_MAX_ALTERNATIVE_HOPS = 8

#: The type names JSON Schema defines, plus ``"any"`` (no constraint), toolsift's label
#: for a schema that does not say.
JSON_TYPES: frozenset[str] = frozenset(
    {"string", "number", "integer", "boolean", "array", "object", "null", "any"}
)

#: Legacy and language-specific type spellings found in real tool catalogues, mapped to
#: JSON Schema names. Matched case-insensitively (BFCL's Java/JavaScript categories write
#: ``"String"``, ``"HashMap"``; ToolRet's apigen writes ``"Dict"``, ``"List"``).
TYPE_ALIASES: Mapping[str, str] = {
    "dict": "object", "map": "object", "hashmap": "object", "hashtable": "object",
    "float": "number", "double": "number",
    "int": "integer", "long": "integer", "short": "integer", "byte": "integer",
    "bool": "boolean",
    "list": "array", "tuple": "array", "set": "array", "arraylist": "array",
    "str": "string", "text": "string", "char": "string",
    "none": "null",
}

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
# Suffixes code generators append to a function name to name its argument/result model
# (FastMCP: "<fn>Arguments", "<fn>Output"; pydantic/zod helpers: "<Fn>Input", ...).
_GENERATED_SUFFIX = re.compile(
    r"(?:Arguments|Args|Input|Inputs|Output|Outputs|Params|Parameters|Request|Response"
    r"|Result|Results|Schema|Model)$"
)
_NON_ALNUM = re.compile(r"[^0-9a-z]+")
# Words joined as code: camelCase / PascalCase ("WeatherReport") or snake_case.
_CODE_NAME = re.compile(r"[a-z0-9][A-Z]|[A-Za-z0-9]_[A-Za-z0-9]")


def _squash(text: str) -> str:
    return _NON_ALNUM.sub("", text.casefold())


def is_generated_title(title: str, name: str | None = None) -> bool:
    """Whether a schema ``title`` was derived from a name by a code generator.

    Args:
        title: The ``title`` value.
        name: The property's (or tool's) name, when known.

    Returns:
        ``True`` for blank titles, titles that only restate ``name`` (``"Max Results"``
        for ``max_results``), model names made of one identifier ending in a generator
        suffix (``"search_notesOutput"``, ``"WeatherArguments"``) and other identifiers
        written as code (``"WeatherReport"``, ``"weather_report"``); ``False`` for text a
        person wrote (``"Search query"``, ``"Weather"``).
    """
    stripped = title.strip()
    if not stripped:
        return True
    if name is not None and _squash(stripped) == _squash(name):
        return True
    if not _IDENTIFIER.match(stripped):
        return False
    # One identifier written as code (a model or function name) rather than prose.
    return bool(_GENERATED_SUFFIX.search(stripped) or _CODE_NAME.search(stripped))


def json_type(value: str, where: str) -> str:
    """The JSON Schema name of one ``type`` value.

    Args:
        value: A ``type`` string as the source wrote it.
        where: Location of the ``type`` key, for errors.

    Returns:
        One of :data:`JSON_TYPES`.

    Raises:
        SchemaError: If ``value`` is neither a JSON Schema type nor a known alias.
    """
    key = value.strip().lower()
    if key in JSON_TYPES:
        return key
    alias = TYPE_ALIASES.get(key)
    if alias is None:
        raise SchemaError(
            where,
            f"unknown type {value[:60]!r}; expected one of {', '.join(sorted(JSON_TYPES))} "
            f"or a legacy spelling ({', '.join(sorted(TYPE_ALIASES))})",
        )
    return alias


def declared_types(schema: Mapping[str, Any], where: str) -> list[str] | None:
    """The JSON Schema names of ``schema["type"]`` (a string or a list), ``None`` if absent.

    Args:
        schema: Any schema node.
        where: Location of ``schema``, for errors.

    Raises:
        SchemaError: For a type that is not a string or a list of strings, or unknown.
    """
    t = schema.get("type")
    if t is None:
        return None
    at = where + ".type"
    if isinstance(t, str):
        return [json_type(t, at)]
    if isinstance(t, list) and t:
        out: list[str] = []
        for i, v in enumerate(t):
            if not isinstance(v, str):
                raise SchemaError(f"{at}[{i}]", f"expected a type name, got {type(v).__name__}")
            name = json_type(v, f"{at}[{i}]")
            if name not in out:
                out.append(name)
        return out
    raise SchemaError(at, f"expected a type name or a list of them, got {t!r}"[:200])


def param_type(schema: Mapping[str, Any], where: str, _hops: int = 0) -> str:
    """The type label of a parameter's schema, with every declared type checked.

    Like :func:`type_name`, but legacy spellings are mapped to JSON Schema names and an
    unknown ``type`` (here or in an ``anyOf``/``oneOf`` alternative) raises.

    Args:
        schema: The property's JSON Schema.
        where: Location of ``schema``, for errors.

    Returns:
        e.g. ``"object"`` for ``"type": "dict"``, ``"number|null"``, ``"Address"``.

    Raises:
        SchemaError: Naming the ``type`` key that is not understood.
    """
    declared = declared_types(schema, where)
    if declared is not None:
        return "|".join(declared)
    for key in ("anyOf", "oneOf"):
        alternatives = schema.get(key)
        if isinstance(alternatives, list) and alternatives and _hops < _MAX_ALTERNATIVE_HOPS:
            names: list[str] = []
            for i, alt in enumerate(alternatives):
                name = (param_type(alt, f"{where}.{key}[{i}]", _hops + 1)
                        if isinstance(alt, Mapping) else "any")
                for part in name.split("|"):
                    if part not in names:
                        names.append(part)
            return "|".join(names)
    return type_name(schema, _hops)


def type_name(schema: Mapping[str, Any], _hops: int = 0) -> str:
    """A short type label for a schema, as the source spells it.

    Lists of types are joined with ``"|"``; ``anyOf``/``oneOf`` alternatives likewise;
    a ``$ref`` is named by its last path segment. Nothing is validated: this labels
    free-form result schemas too (:func:`param_type` is the strict reader).

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
        if isinstance(alternatives, list) and alternatives and _hops < _MAX_ALTERNATIVE_HOPS:
            names: list[str] = []
            for alt in alternatives:
                name = type_name(alt, _hops + 1) if isinstance(alt, Mapping) else "any"
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


def description(schema: Mapping[str, Any], where: str, *, name: str | None = None) -> str:
    """The description of a schema, its enum values appended.

    ``title`` stands in for a missing ``description`` unless a generator derived it from
    a name (:func:`is_generated_title`).

    Args:
        schema: A property (or result) schema.
        where: Location of ``schema``, for errors.
        name: The property's (or tool's) name, to recognise titles that only restate it.

    Raises:
        SchemaError: If ``description`` or ``title`` is not a string.
    """
    desc = schema.get("description")
    key = "description"
    if desc is None:
        desc, key = schema.get("title"), "title"
        if isinstance(desc, str) and is_generated_title(desc, name):
            desc = None
    if desc is None:
        desc = ""
    if not isinstance(desc, str):
        raise SchemaError(f"{where}.{key}", f"expected a string, got {type(desc).__name__}")
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        desc = f"{desc.rstrip()} {_enum_text(enum)}".strip()
    return desc


def example(schema: Mapping[str, Any]) -> Any:
    """The first example value of a schema (``examples``, ``example``, else ``default``)."""
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


def is_required(
    name: str, prop: Mapping[str, Any], required: list[str] | None, nullable_optional: bool
) -> bool:
    """Whether property ``name`` is required, judged by its object's ``required`` list
    (``None``: the object has none, so everything is) and its own explicit marks."""
    if prop.get("required") is False or prop.get("optional") is True:
        return False
    if nullable_optional:
        t = prop.get("type")
        types = [t] if isinstance(t, str) else t if isinstance(t, list) else []
        if any(isinstance(x, str) and x.strip().lower() in ("null", "none") for x in types):
            return False
    return True if required is None else name in required
