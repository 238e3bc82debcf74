"""Rule-based extraction of the four MFTR fields from raw tool documentation.

The MFTR authors standardised raw docs with an LLM; these rules do the deterministic
part of that job for the ToolRet schemas toolsift reads:

* **apibank**: ``parameters`` a list (or a ``"(image: str)"`` string), ``responses``
  ``{name: {type, description}}``.
* **apigen**: ``parameters`` ``{name: {description, type, default}}``.
* **gorilla** (HuggingFace APIBench): ``api_call``, ``api_arguments``, ``domain``,
  ``functionality``, ``description``.
* **toolink**: ``func_description`` (a Python stub) plus a prose ``description``.

Anything else is ``"generic"``: the tool's own fields, cleaned.

Every text produced here is cut out of, or templated around, text of the document
itself. Nothing is generated from world knowledge except one fixed table
(:data:`TASK_OUTPUTS`) that names the conventional output of a Hugging Face task; a
field the document says nothing about stays ``""`` so it gets no weight downstream.

This module dispatches on the schema; the text helpers (:mod:`.text`), prose phrase
finding (:mod:`.phrases`) and the Gorilla and toolink rules (:mod:`.gorilla`,
:mod:`.toolink`) live beside it and stay importable from here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..schema import Tool
from .fields import Fields
from .gorilla import TASK_OUTPUTS, _gorilla
from .phrases import mentioned_parameters, result_phrases
from .text import _join, _sentence, clean_text, name_words, sentences
from .toolink import _toolink

__all__ = [
    "TASK_OUTPUTS",
    "Fields",
    "clean_text",
    "derive_fields",
    "mentioned_parameters",
    "name_words",
    "raw_documentation",
    "result_phrases",
    "schema_of",
    "sentences",
]


def schema_of(doc: Mapping[str, Any]) -> str:
    """Name the raw schema of a ToolRet ``documentation`` object (by shape, like the
    adapter): ``"gorilla"``, ``"toolink"``, ``"apibank"``, ``"apigen"`` or ``"generic"``."""
    if "api_call" in doc:
        return "gorilla"
    if isinstance(doc.get("func_description"), str):
        return "toolink"
    params = doc.get("parameters")
    if isinstance(params, (list, str)) or "responses" in doc or "expressions" in doc:
        return "apibank"
    # A JSON Schema ({"type": "object", ...}) has string values, so it is not apigen.
    if isinstance(params, Mapping) and all(isinstance(v, Mapping) for v in params.values()):
        return "apigen"
    return "generic"


def _fallback_description(tool: Tool) -> str:
    """The tool name in words: the one thing every document says about the tool."""
    return _sentence(name_words(tool.name))


def _responses_text(responses: Any) -> str:
    """apibank ``{name: {type, description}}`` as one sentence."""
    if isinstance(responses, str):
        return clean_text(responses)
    if not isinstance(responses, Mapping) or not responses:
        return ""
    items: list[str] = []
    for name, spec in responses.items():
        if isinstance(spec, Mapping):
            ptype = spec.get("type") if isinstance(spec.get("type"), str) else ""
            desc = clean_text(spec.get("description")).rstrip(".")
            head = f"{name} ({ptype})" if ptype else str(name)
            items.append(f"{head}: {desc}" if desc else head)
        else:
            items.append(str(name))
    return "Returns " + "; ".join(items)


def _apibank(doc: Mapping[str, Any], tool: Tool) -> Fields:
    description = clean_text(doc.get("description"))
    response = _responses_text(doc.get("responses", doc.get("response")))
    if not response:
        response = _join(result_phrases(description))
    return Fields("apibank", description, _sentence(response),
                  mentioned_parameters(description, tool.parameters))


def _apigen(doc: Mapping[str, Any], tool: Tool) -> Fields:
    description = clean_text(doc.get("description"))
    return Fields("apigen", description, _join(result_phrases(description)),
                  mentioned_parameters(description, tool.parameters))


def _generic(doc: Mapping[str, Any], tool: Tool) -> Fields:
    description = clean_text(doc.get("description")) or clean_text(tool.description)
    response = clean_text(tool.response) or _responses_text(doc.get("responses")) \
        or _join(result_phrases(description))
    return Fields("generic", description, _sentence(response) if response else "",
                  mentioned_parameters(description, tool.parameters))


_RULES: Mapping[str, Callable[[Mapping[str, Any], Tool], Fields]] = {
    "apibank": _apibank,
    "apigen": _apigen,
    "gorilla": _gorilla,
    "toolink": _toolink,
    "generic": _generic,
}


def raw_documentation(tool: Tool) -> Mapping[str, Any] | None:
    """The ToolRet ``documentation`` object kept in ``tool.source``, if there is one."""
    source = tool.source
    if isinstance(source, Mapping) and isinstance(source.get("documentation"), Mapping):
        return source["documentation"]
    return None


def derive_fields(tool: Tool) -> Fields:
    """Apply the rules of the tool's raw schema.

    Works from the raw ToolRet record in ``tool.source`` when there is one, otherwise
    from the tool's own fields (schema ``"generic"``). A description left empty falls
    back to the tool name in words.

    Args:
        tool: A tool, typically from :func:`toolsift.adapters.toolret_tool`.

    Returns:
        The derived fields.
    """
    doc = raw_documentation(tool)
    if doc is None:
        fields = _generic({}, tool)
    else:
        fields = _RULES[schema_of(doc)](doc, tool)
    if not fields.description:
        fields = Fields(fields.schema, _fallback_description(tool), fields.response,
                        fields.parameter_descriptions)
    return fields
