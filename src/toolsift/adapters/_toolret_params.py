"""Fields of raw ToolRet documentation: parameters (list, dict, code or Gorilla
argument forms), response text, tags, ids and names, for :mod:`.benchmark`."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from ..errors import SchemaError
from ..schema import Parameter
from ._common import relocate, text_or_empty
from ._jsonschema import describe_fields
from ._pysig import parse_signature

# apigen types spell optionality inside the type: "str, optional", "int, optional, default=100".
_TYPE_SUFFIX = re.compile(r",\s*(optional|default)\b.*$", re.IGNORECASE | re.DOTALL)
# Gorilla argument lists mix real names with pasted code; only name-like entries are kept.
_ARG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\- ]{0,63}$")
_NO_ARGS = {"", "n/a", "na", "none", "null"}


def _unquote(text: str) -> str:
    """Drop one pair of double quotes wrapping the whole text (apibank stores them)."""
    s = text.strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        return s[1:-1].strip()
    return text


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return "any"


def _type_text(value: Any) -> str:
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, list) and value:
        return "|".join(str(v) for v in value)
    return "any"


def _param(where: str, **fields: Any) -> Parameter:
    try:
        return Parameter(**fields)
    except SchemaError as exc:
        raise relocate(where, exc) from None


def _params_from_list(items: list[Any], where: str) -> list[Parameter]:
    """OpenAPI-like ``[{name, in, schema{type, default}, description}]`` (apibank).

    Required unless the entry says ``"required": false``; the schema default (always
    null in the data) serves as the example.
    """
    out = []
    for i, p in enumerate(items):
        at = f"{where}[{i}]"
        if not isinstance(p, Mapping):
            raise SchemaError(at, f"expected a parameter object, got {type(p).__name__}")
        schema: Mapping[str, Any] = p["schema"] if isinstance(p.get("schema"), Mapping) else {}
        out.append(
            _param(
                at,
                name=p.get("name"),
                type=_type_text(p.get("type", schema.get("type"))),
                description=text_or_empty(p.get("description"), at + ".description"),
                required=p.get("required") is not False,
                example=p.get("example", schema.get("default")),
            )
        )
    return out


def _params_from_dict(items: Mapping[str, Any], where: str) -> list[Parameter]:
    """``{name: {description, type, default}}`` (apigen / xLAM).

    Optional iff the type text says so (``"str, optional"``). The ``default`` key is
    *not* an optional mark: the data gives one to 4,525 parameters whose type does not
    say optional, where it is an example value (``'AAPL'``) or an empty placeholder.
    A non-empty default is kept as the example.
    """
    out = []
    for name, p in items.items():
        at = f"{where}[{name!r}]"
        if not isinstance(p, Mapping):
            raise SchemaError(at, f"expected a parameter object, got {type(p).__name__}")
        raw_type = p.get("type")
        optional = isinstance(raw_type, str) and "optional" in raw_type.lower()
        ptype = _TYPE_SUFFIX.sub("", raw_type).strip() if isinstance(raw_type, str) else raw_type
        default = p.get("default")
        example = p.get("example", None if default in (None, "") else default)
        out.append(
            _param(
                at,
                name=name,
                type=_type_text(ptype),
                description=text_or_empty(p.get("description"), at + ".description"),
                required=not optional and p.get("required") is not False,
                example=example,
            )
        )
    return out


def _literal(source: str) -> Any:
    if not source:
        return None
    try:
        return ast.literal_eval(source)
    except (ValueError, SyntaxError):
        return source


def _params_from_code(code: str) -> tuple[list[Parameter], str, str]:
    """Parameters, response text and function name from a Python stub (toolink,
    apibank's one-liner).

    A parameter with a default value is optional: that is Python's own explicit mark.
    The response reads ``"Returns <annotation>: <last return expression>"``.
    """
    sig = parse_signature(code)
    if sig is None:
        return [], "", ""
    params = [
        Parameter(name=name, type=ann or "any", required=not has_default,
                  example=_literal(default))
        for name, ann, has_default, default in sig.params
    ]
    if sig.returns and sig.return_expr:
        response = f"Returns {sig.returns}: {sig.return_expr}"
    elif sig.returns or sig.return_expr:
        response = f"Returns {sig.returns or sig.return_expr}"
    else:
        response = ""
    return params, response, sig.name


def _gorilla_params(args: Any) -> list[Parameter]:
    """Parameters from a Gorilla ``api_arguments`` value.

    The field is a ``{name: example}`` object, a list of names, a comma-separated
    string, or null. Entries that are not name-like (pasted code such as
    ``"model = AutoModel.from_pretrained(...)"``) are dropped; the record in
    ``source`` still has them. Nothing marks an argument optional, so all are required.
    """
    pairs: list[tuple[str, Any]] = []
    if isinstance(args, Mapping):
        pairs = [(str(k), v) for k, v in args.items()]
    elif isinstance(args, list):
        pairs = [(v, None) for v in args if isinstance(v, str)]
    elif isinstance(args, str):
        pairs = [(part, None) for part in args.split(",")]
    out: list[Parameter] = []
    seen: set[str] = set()
    for raw, example in pairs:
        name = raw.strip()
        if name.lower() in _NO_ARGS or not _ARG_NAME.match(name) or name in seen:
            continue
        seen.add(name)
        out.append(Parameter(name=name, type=_json_type(example), required=True, example=example))
    return out


def _response(doc: Mapping[str, Any]) -> str:
    responses = doc.get("responses", doc.get("response"))
    if isinstance(responses, Mapping):
        return describe_fields(responses)
    if isinstance(responses, str):
        return responses
    return ""


def _tags(record: Mapping[str, Any], doc: Mapping[str, Any]) -> tuple[str, ...]:
    tags: list[str] = []
    for value in (record.get("type"), doc.get("category"), doc.get("domain"),
                  doc.get("framework"), doc.get("functionality")):
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and v.strip() and v not in tags:
                tags.append(v)
    return tuple(tags)


def _is_json_schema(raw: Mapping[str, Any]) -> bool:
    """Whether a ``parameters`` object is a JSON Schema rather than ``{name: spec}``.

    apigen has a tool whose parameter is literally named ``properties``; its value is a
    parameter spec (``"type": "str, optional"``), not a map of property schemas.
    """
    if raw.get("type") == "object":
        return True
    props = raw.get("properties")
    return (
        isinstance(props, Mapping)
        and not isinstance(props.get("type"), str)
        and all(isinstance(v, Mapping) for v in props.values())
    )


def _record_id(record: Mapping[str, Any]) -> str:
    rid = record.get("id")
    if not isinstance(rid, str) or not rid.strip():
        raise SchemaError(".id", f"a benchmark record needs a non-empty string id, got {rid!r}")
    return rid


def _doc_name(doc: Mapping[str, Any], fallback: str) -> str:
    for key in ("name", "api_name", "tool_name"):
        value = doc.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return fallback
