"""The structured query's wire form, defined once, and its generated JSON Schema.

``{"tool_needs": [{"user_intent", "tool_description", "expected_response"}],
"extracted_arguments": {"role": "what it is"}, "request": "the user's words"}`` is
:class:`StructuredQuery`; the JSON
Schema ``find_tools`` advertises is generated from it (:func:`structured_query_schema`).
:class:`~toolsift.schema.Query` is what it becomes inside toolsift. This module needs
neither the compiled core nor the search path (the gateway imports it).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, Field

from .no_match import NO_MATCH_HINT, NO_MATCH_HINT_DENSE, NO_MATCH_NOTE  # re-exported
from .query_caps import MAX_ARGUMENTS, MAX_NEEDS

__all__ = ["NO_MATCH_HINT", "NO_MATCH_HINT_DENSE", "NO_MATCH_NOTE", "StructuredQuery", "ToolNeedSpec", "structured_query_schema"]


class ToolNeedSpec(BaseModel):
    """One tool the request needs, described from three angles."""

    user_intent: str = Field("", description="What the user wants done.")
    tool_description: str = Field("", description="What a fitting tool's description would say.")
    expected_response: str = Field("", description="What a fitting tool would return.")


class StructuredQuery(BaseModel):
    """Structured form: the tools you need and the argument roles you already know."""

    # The caps of toolsift.query_caps, stated where a client reads them (the nesting cap
    # needs no keyword: this shape is three levels deep and every leaf is a string).
    tool_needs: Annotated[list[ToolNeedSpec], Field(min_length=1, max_length=MAX_NEEDS)]
    extracted_arguments: dict[str, str] = Field(
        default_factory=dict, description="Argument roles found in the request: {name: what it is}.",
        json_schema_extra={"maxProperties": MAX_ARGUMENTS})
    request: str = Field("", description="The user's request, verbatim, if you have it: its exact words are "
                                         "matched beside your rewrite.")


def _inline(schema: Any, defs: Mapping[str, Any]) -> Any:
    """``schema`` with ``$ref``s to ``defs`` inlined and pydantic's titles dropped: tool
    hosts handle self-contained schemas best."""
    if isinstance(schema, list):
        return [_inline(s, defs) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return _inline(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    out = {}
    for key, value in schema.items():
        if key in ("title", "$defs"):
            continue
        if key == "properties":  # keys here are property names, not keywords
            out[key] = {name: _inline(sub, defs) for name, sub in value.items()}
        else:
            out[key] = _inline(value, defs)
    return out


@functools.cache
def _schema() -> dict[str, Any]:
    raw = StructuredQuery.model_json_schema()
    return _inline(raw, raw.get("$defs", {}))


def structured_query_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`StructuredQuery` (self-contained, a fresh copy)."""
    return copy.deepcopy(_schema())
