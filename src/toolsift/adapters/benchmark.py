"""Tool-retrieval benchmark files (ToolRet raw tools, MFTR standardized tools, queries).

Three kinds of file are read:

* ToolRet ``tools.json``: ``[{"id", "documentation": {...}, "type"}]`` where the
  documentation schema depends on the source benchmark (see :func:`toolret_tool`).
* MFTR ``augmented_tools/<ds>/gpt-4o-mini_tools.json``: LLM-standardized four-field docs
  (see :func:`mftr_augmented_tool`).
* ToolRet ``queries.json`` and MFTR rewritten-query / fold files (see :func:`load_queries`).

Every tool keeps its whole record in :attr:`Tool.source`, so a full-document baseline
can still be built from the raw text.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import re
from collections import Counter
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from ..errors import CatalogFormatError, QueryError, SchemaError
from ..schema import Parameter, Query, Tool
from ._common import located, map_tools, read_json, relocate, text_or_empty, tool_list
from ._jsonschema import describe_fields, parameters_from_schema
from ._pysig import parse_signature, prose

__all__ = [
    "from_toolret",
    "toolret_tool",
    "from_mftr_augmented",
    "mftr_augmented_tool",
    "BenchmarkQuery",
    "load_queries",
]

logger = logging.getLogger(__name__)

# apigen types spell optionality inside the type: "str, optional", "int, optional, default=100".
_TYPE_SUFFIX = re.compile(r",\s*(optional|default)\b.*$", re.IGNORECASE | re.DOTALL)
# Gorilla argument lists mix real names with pasted code; only name-like entries are kept.
_ARG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\- ]{0,63}$")
_NO_ARGS = {"", "n/a", "na", "none", "null"}
_NEED_KEYS = ("user_intent", "tool_description", "expected_response")


# --------------------------------------------------------------------------- tools


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
        schema = p.get("schema") if isinstance(p.get("schema"), Mapping) else {}
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


def toolret_tool(record: Mapping[str, Any]) -> Tool:
    """Convert one ToolRet ``tools.json`` record.

    The documentation schema is recognised by shape rather than dataset name, so other
    ToolRet subsets load too:

    * ``api_call`` present (Gorilla): parameters from ``api_arguments``
      (see :func:`_gorilla_params`); ``domain``/``framework``/``functionality`` become tags.
    * ``func_description`` present (ToolLink): parameters and response from the Python
      stub; a parameter with a default is optional. An empty name or description
      falls back to the stub's function name and the prose around the stub.
    * ``parameters`` a list (apibank): all required unless ``"required": false``.
    * ``parameters`` a string (apibank's ``"(image: str)"``): parsed as a signature.
    * ``parameters`` a JSON Schema object: the JSON Schema rules.
    * ``parameters`` an object of objects (apigen): optional iff the type says
      ``optional``; ``default`` alone does not make a parameter optional.

    ``responses`` (``{name: {type, description}}``) becomes a sentence for
    ``response``. The name is ``documentation.name`` (the record id if absent).

    Args:
        record: ``{"id", "documentation", "type"}``.

    Returns:
        The tool, id = record id.

    Raises:
        SchemaError: With a location relative to ``record``.
    """
    rid = _record_id(record)
    doc = record.get("documentation")
    if not isinstance(doc, Mapping):
        raise SchemaError(".documentation", f"expected an object, got {type(doc).__name__}")
    description = doc.get("description")
    description = _unquote(description) if isinstance(description, str) else ""
    response = _response(doc)
    raw = doc.get("parameters")
    at = ".documentation.parameters"
    code_name = ""
    if "api_call" in doc:
        params = _gorilla_params(doc.get("api_arguments"))
    elif isinstance(doc.get("func_description"), str):
        code = doc["func_description"]
        params, response, code_name = _params_from_code(code)
        if not description.strip():
            # toolink_tool_636 leaves name and description empty and documents the
            # tool in prose ("Name: ... Utility: ...") around the stub instead.
            description = prose(code)
    elif isinstance(raw, str):
        params, _, _ = _params_from_code(raw)
    elif isinstance(raw, list):
        params = _params_from_list(raw, at)
    elif isinstance(raw, Mapping) and _is_json_schema(raw):
        params = list(parameters_from_schema(raw, where=at))
    elif isinstance(raw, Mapping):
        params = _params_from_dict(raw, at)
    else:
        params = []
    return Tool(
        id=rid,
        name=_doc_name(doc, code_name or rid),
        description=description,
        parameters=params,
        response=response,
        tags=_tags(record, doc),
        source=record,
    )


def from_toolret(payload: Any) -> list[Tool]:
    """Tools from a ToolRet ``tools.json`` payload (a list of records).

    Raises:
        CatalogFormatError: If the payload is not a list.
        SchemaError: Naming the record, e.g. ``"tools[7] (id='apigen_tool_7')"``.
    """
    prefix, entries = tool_list(payload, fmt="toolret")
    return map_tools(prefix, entries, toolret_tool)


def _intents(examples: Any, where: str) -> list[str]:
    if examples is None:
        return []
    if not isinstance(examples, list):
        raise SchemaError(where, f"expected a list, got {type(examples).__name__}")
    out = []
    for i, e in enumerate(examples):
        intent = e.get("user_intent") if isinstance(e, Mapping) else e
        intent = text_or_empty(intent, f"{where}[{i}].user_intent")
        if intent.strip():
            out.append(intent)
    return out


def mftr_augmented_tool(record: Mapping[str, Any]) -> Tool:
    """Convert one MFTR standardized record.

    ``augmented.parameters`` is ``{name: {type, description, required, example}}``;
    ``required`` is taken as given (default true). ``examples`` are the
    ``user_intent`` strings. The name is ``origin_documentation.name``.

    Args:
        record: ``{"id", "type", "origin_documentation", "augmented"}``.

    Returns:
        The tool, id = record id.

    Raises:
        SchemaError: With a location relative to ``record``.
    """
    rid = _record_id(record)
    aug = record.get("augmented")
    if not isinstance(aug, Mapping):
        raise SchemaError(".augmented", f"expected an object, got {type(aug).__name__}")
    origin = record.get("origin_documentation")
    origin = origin if isinstance(origin, Mapping) else {}
    raw = aug.get("parameters") or {}
    if not isinstance(raw, Mapping):
        raise SchemaError(".augmented.parameters", f"expected an object, got {type(raw).__name__}")
    params = []
    for name, p in raw.items():
        at = f".augmented.parameters[{name!r}]"
        if not isinstance(p, Mapping):
            raise SchemaError(at, f"expected a parameter object, got {type(p).__name__}")
        params.append(
            _param(
                at,
                name=name,
                type=_type_text(p.get("type")),
                description=text_or_empty(p.get("description"), at + ".description"),
                required=p.get("required", True),
                example=p.get("example", p.get("default")),
            )
        )
    return Tool(
        id=rid,
        name=_doc_name(origin, rid),
        description=text_or_empty(aug.get("description"), ".augmented.description"),
        parameters=params,
        response=text_or_empty(aug.get("response"), ".augmented.response"),
        examples=_intents(aug.get("examples"), ".augmented.examples"),
        tags=_tags(record, {}),
        source=record,
    )


def from_mftr_augmented(payload: Any) -> list[Tool]:
    """Tools from an MFTR ``augmented_tools/.../*_tools.json`` payload.

    Raises:
        CatalogFormatError: If the payload is not a list.
        SchemaError: Naming the record.
    """
    prefix, entries = tool_list(payload, fmt="mftr-augmented")
    return map_tools(prefix, entries, mftr_augmented_tool)


# ------------------------------------------------------------------------- queries


@dataclass(frozen=True, slots=True)
class BenchmarkQuery:
    """One benchmark query with its relevance labels.

    Attributes:
        id: Query id (``"apibank_query_3"``).
        text: The raw query text.
        labels: Ids of the relevant tools.
        rewritten: The LLM-rewritten structured query, when the file has one; its
            ``text`` is the raw query text.
    """

    id: str
    text: str
    labels: tuple[str, ...]
    rewritten: Query | None = None


def _labels(raw: Any, where: str) -> tuple[str, ...]:
    if not isinstance(raw, list):
        raise QueryError(where, f"expected a list of labels, got {type(raw).__name__}")
    out: list[str] = []
    for i, label in enumerate(raw):
        tool_id = label.get("id") if isinstance(label, Mapping) else label
        if not isinstance(tool_id, str) or not tool_id:
            raise QueryError(f"{where}[{i}]", f"expected a tool id, got {tool_id!r}")
        relevance = label.get("relevance", 1) if isinstance(label, Mapping) else 1
        if relevance and tool_id not in out:
            out.append(tool_id)
    return tuple(out)


def _argument_text(value: Any) -> str:
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)


def _rewritten(raw: Any, text: str, stats: MutableMapping[str, int]) -> Query | None:
    """The structured query, after dropping what the LLM left empty.

    Needs whose three texts are all empty are dropped (a :class:`ToolNeed` refuses
    them); non-string argument values are JSON-encoded, null ones become ``""``.
    If no need is left the query has no rewrite.
    """
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise QueryError(".rewritten_query", f"expected an object, got {type(raw).__name__}")
    needs = raw.get("tool_needs", raw.get("needs"))
    if not isinstance(needs, list):
        raise QueryError(".rewritten_query.tool_needs", "expected a list of tool needs")
    kept = []
    for need in needs:
        if isinstance(need, Mapping) and not any(
            isinstance(need.get(k), str) and need[k].strip() for k in _NEED_KEYS
        ):
            stats["empty_needs"] += 1
            continue
        kept.append(need)
    args = raw.get("extracted_arguments", raw.get("arguments")) or {}
    if not isinstance(args, Mapping):
        raise QueryError(".rewritten_query.extracted_arguments", "expected an object")
    clean: dict[str, str] = {}
    for key, value in args.items():
        if not isinstance(key, str) or not key.strip():
            stats["blank_argument_names"] += 1
            continue
        if not isinstance(value, str):
            stats["non_string_arguments"] += 1
            value = _argument_text(value)
        clean[key] = value
    if not kept:
        stats["queries_without_needs"] += 1
        return None
    return Query.from_dict(
        {"tool_needs": kept, "extracted_arguments": clean, "text": text}, where=".rewritten_query"
    )


def _query(record: Mapping[str, Any], stats: MutableMapping[str, int]) -> BenchmarkQuery:
    qid = record.get("id")
    if not isinstance(qid, str) or not qid.strip():
        raise QueryError(".id", f"a query needs a non-empty string id, got {qid!r}")
    text = record.get("query")
    if not isinstance(text, str) or not text.strip():
        raise QueryError(".query", "the query text is missing or empty")
    return BenchmarkQuery(
        id=qid,
        text=text,
        labels=_labels(record.get("labels", []), ".labels"),
        rewritten=_rewritten(record.get("rewritten_query"), text, stats),
    )


def load_queries(
    source: str | os.PathLike[str] | list[Any],
    *,
    stats: MutableMapping[str, int] | None = None,
) -> list[BenchmarkQuery]:
    """Read ToolRet ``queries.json`` or an MFTR rewritten-query / fold file.

    Args:
        source: A path to the JSON file, or its already-parsed list of records.
        stats: If given, receives counts of data repairs: ``empty_needs`` (tool needs
            with no text, dropped), ``non_string_arguments`` (argument values that
            were not strings, JSON-encoded), ``blank_argument_names`` (dropped),
            ``queries_without_needs`` (rewrite dropped, ``rewritten`` is ``None``).

    Returns:
        The queries in file order.

    Raises:
        CatalogFormatError: If the file cannot be read or is not a list.
        QueryError: Naming the record, e.g. ``"queries[4] (id='apibank_query_4').query"``.
    """
    label = "queries"
    payload = source
    if isinstance(source, (str, os.PathLike)):
        label = os.fspath(source)
        payload = read_json(source)
    if not isinstance(payload, list):
        raise CatalogFormatError(
            f"{label}: expected a list of query records, got {type(payload).__name__}"
        )
    counts: Counter[str] = Counter()
    out: list[BenchmarkQuery] = []
    for i, record in enumerate(payload):
        where = f"queries[{i}]"
        if isinstance(record, Mapping) and isinstance(record.get("id"), str):
            where += f" (id={record['id']!r})"
        if not isinstance(record, Mapping):
            raise QueryError(where, f"expected a query object, got {type(record).__name__}")
        with located(where):
            out.append(_query(record, counts))
    if counts:
        logger.warning("%s: repaired rewritten queries: %s", label, dict(counts))
    if stats is not None:
        for key in ("empty_needs", "non_string_arguments", "blank_argument_names",
                    "queries_without_needs"):
            stats[key] = stats.get(key, 0) + counts[key]
    return out
