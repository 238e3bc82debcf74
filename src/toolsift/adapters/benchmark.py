"""Tool-retrieval benchmark files (ToolRet raw tools, MFTR standardized tools, queries).

Three kinds of file are read:

* ToolRet ``tools.json``: ``[{"id", "documentation": {...}, "type"}]`` where the
  documentation schema depends on the source benchmark (see :func:`toolret_tool`).
* MFTR ``augmented_tools/<ds>/gpt-4o-mini_tools.json``: LLM-standardized four-field docs
  (see :func:`mftr_augmented_tool`).
* ToolRet ``queries.json`` and MFTR rewritten-query / fold files (see :func:`load_queries`).

Every tool keeps its whole record in :attr:`Tool.source`, so a full-document baseline
can still be built from the raw text.

Query files are read by :mod:`.benchmark_queries` and raw documentation fields by
:mod:`._toolret_params`; their public names stay importable from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import SchemaError
from ..schema import Tool
from ._common import map_tools, text_or_empty, tool_list
from ._jsonschema import parameters_from_schema
from ._pysig import prose
from ._toolret_params import (
    _doc_name,
    _gorilla_params,
    _is_json_schema,
    _param,
    _params_from_code,
    _params_from_dict,
    _params_from_list,
    _record_id,
    _response,
    _tags,
    _type_text,
    _unquote,
)
from .benchmark_queries import BenchmarkQuery, load_queries

__all__ = [
    "from_toolret",
    "toolret_tool",
    "from_mftr_augmented",
    "mftr_augmented_tool",
    "BenchmarkQuery",
    "load_queries",
]



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
        parameters=tuple(params),
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
        parameters=tuple(params),
        response=text_or_empty(aug.get("response"), ".augmented.response"),
        examples=tuple(_intents(aug.get("examples"), ".augmented.examples")),
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
