"""Fuzzing every catalogue adapter: random payloads give a toolsift error or tools,
never another exception type and never a hang."""

from __future__ import annotations

from typing import Any

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolsift.adapters import FORMATS, load_catalog
from toolsift.adapters.gemini import from_gemini
from toolsift.adapters.langchain import from_langchain
from toolsift.adapters.openapi import from_openapi
from toolsift.adapters.python import from_callable
from toolsift.errors import ToolsiftError
from toolsift.schema import Catalog

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Keys every format looks for, so random objects often reach deep into the readers.
KEYS = st.sampled_from([
    "name", "description", "parameters", "type", "properties", "required", "items", "function",
    "inputSchema", "input_schema", "outputSchema", "tools", "functions", "functionDeclarations",
    "args_schema", "args", "enum", "$ref", "jsonrpc", "result", "documentation", "id", "examples",
    "format", "nullable", "anyOf", "title", "default", "optional", "_meta", "annotations",
]) | st.text(max_size=6)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=12) \
    | st.sampled_from(["object", "string", "OBJECT", "array", "null", "#/components/schemas/A", "toolsift"])
JSONISH = st.recursive(SCALARS, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(KEYS, kids, max_size=5),
                       max_leaves=25)


def only_typed_errors(fn: Any, payload: Any) -> None:
    try:
        tools = fn(payload)
        Catalog(tools)
    except ToolsiftError:
        pass


READERS = {"openapi": from_openapi, "gemini": from_gemini, "langchain": from_langchain}


@settings(max_examples=600, **SETTINGS)
@given(fmt=st.sampled_from(("auto", *FORMATS)), payload=JSONISH)
def test_existing_formats_on_random_json(fmt: str, payload: Any) -> None:
    only_typed_errors(lambda p: list(load_catalog(p, format=fmt)), payload)


@settings(max_examples=600, **SETTINGS)
@given(fmt=st.sampled_from(sorted(READERS)), payload=JSONISH)
def test_new_formats_on_random_json(fmt: str, payload: Any) -> None:
    only_typed_errors(READERS[fmt], payload)


TOOL_ENTRY = st.fixed_dictionaries(
    {"name": st.text(max_size=8) | st.none()},
    optional={"description": SCALARS, "parameters": JSONISH, "inputSchema": JSONISH, "input_schema": JSONISH,
              "args_schema": JSONISH, "args": JSONISH, "type": SCALARS, "function": JSONISH},
)


@pytest.mark.slow
@settings(max_examples=400, **SETTINGS)
@given(fmt=st.sampled_from(("auto", *FORMATS, *READERS)), tools=st.lists(TOOL_ENTRY, max_size=4),
       wrap=st.sampled_from(["list", "tools", "decl"]))
def test_tool_shaped_payloads(fmt: str, tools: list[Any], wrap: str) -> None:
    payload: Any = {"list": tools, "tools": {"tools": tools}, "decl": {"functionDeclarations": tools}}[wrap]
    if fmt in READERS:
        only_typed_errors(READERS[fmt], payload)
    else:
        only_typed_errors(lambda p: list(load_catalog(p, format=fmt)), payload)


# OpenAPI-ish documents: real structure with random leaves and references, including
# self-references and references into nowhere.
REFS = st.sampled_from(["#/components/schemas/A", "#/components/schemas/B", "#/components/parameters/P",
                        "#/components/schemas/Missing", "#/paths", "other.yaml#/X", "#", "#/components/schemas/A/properties/x"])
SCHEMA = st.recursive(
    st.fixed_dictionaries({}, optional={"type": SCALARS, "description": SCALARS, "enum": JSONISH,
                                        "nullable": st.booleans(), "example": SCALARS}) | st.builds(lambda r: {"$ref": r}, REFS),
    lambda kids: st.fixed_dictionaries({}, optional={
        "type": st.just("object") | SCALARS, "properties": st.dictionaries(st.text(max_size=4), kids, max_size=4),
        "required": st.lists(st.text(max_size=4), max_size=3) | SCALARS, "items": kids,
        "allOf": st.lists(kids, max_size=3), "oneOf": st.lists(kids, max_size=2), "$ref": REFS}),
    max_leaves=12,
)
PARAM = st.fixed_dictionaries({}, optional={
    "name": st.text(max_size=5) | SCALARS, "in": st.sampled_from(["path", "query", "header", "cookie", "body", 3]),
    "required": st.booleans() | SCALARS, "schema": SCHEMA, "description": SCALARS, "example": JSONISH,
    "examples": JSONISH, "content": JSONISH}) | st.builds(lambda r: {"$ref": r}, REFS)
MEDIA = st.dictionaries(st.sampled_from(["application/json", "application/x-www-form-urlencoded", "text/plain",
                                         "application/vnd+json", "*/*"]),
                        st.fixed_dictionaries({}, optional={"schema": SCHEMA, "examples": JSONISH}) | SCALARS,
                        max_size=2)
OPERATION = st.fixed_dictionaries({}, optional={
    "operationId": st.sampled_from(["op", "op2", "", None, 3]) | st.text(max_size=4),
    "summary": SCALARS, "description": SCALARS, "tags": JSONISH, "deprecated": st.booleans(),
    "x-examples": JSONISH, "parameters": st.lists(PARAM, max_size=3) | SCALARS,
    "requestBody": st.fixed_dictionaries({}, optional={"required": SCALARS, "content": MEDIA | SCALARS,
                                                       "description": SCALARS}) | st.builds(lambda r: {"$ref": r}, REFS),
    "responses": st.dictionaries(st.sampled_from(["200", "201", "2XX", "default", 204, "404"]),
                                 st.fixed_dictionaries({}, optional={"description": SCALARS, "content": MEDIA})
                                 | st.builds(lambda r: {"$ref": r}, REFS), max_size=2) | SCALARS,
})
PATH_ITEM = st.dictionaries(st.sampled_from(["get", "post", "PUT", "delete", "summary", "servers"]), OPERATION | SCALARS,
                            max_size=3) | st.builds(lambda r: {"$ref": r}, REFS)
OPENAPI = st.fixed_dictionaries({
    "openapi": st.sampled_from(["3.0.3", "3.1.0", "2.0", 3]),
    "paths": st.dictionaries(st.sampled_from(["/a", "/a/{id}", "/b/{x}/c", "", "/"]), PATH_ITEM, max_size=3) | SCALARS,
    "components": st.fixed_dictionaries({"schemas": st.fixed_dictionaries({"A": SCHEMA, "B": SCHEMA}),
                                         "parameters": st.fixed_dictionaries({"P": PARAM})}),
})


@pytest.mark.slow
@settings(max_examples=1000, **SETTINGS)
@given(spec=OPENAPI)
def test_openapi_documents(spec: dict[str, Any]) -> None:
    only_typed_errors(from_openapi, spec)


@settings(max_examples=300, **SETTINGS)
@given(doc=st.text(max_size=300) | st.sampled_from([
    "Args:\n  x: y\nReturns:\n  z", "Parameters\n----------\nx : int\n", ":param x:\n:returns:", ":raises:",
    "Args:\n    a (int, optional): b\n\n    Returns:", "x\n---\n:param"]))
def test_python_docstrings(doc: str) -> None:
    def fn(a: int, b: str = "x", *args: Any, c: list[int] | None = None, **kw: Any) -> dict[str, Any]:
        return {}

    fn.__doc__ = doc
    only_typed_errors(lambda f: [from_callable(f)], fn)


# Nested object schemas with legacy type spellings, local references and cycles of
# references: reading them gives a toolsift error or bounded, consistent parameters.
# Mostly well-formed (so that nesting is actually reached), with a rare bad type.
NESTED_TYPES = st.sampled_from(["object", "dict", "Dict", "object", "dict", "array", "list", "string", "float",
                                "int", "any", "bogus"]) \
    | st.lists(st.sampled_from(["dict", "object", "null", "None"]), min_size=1, max_size=2)
NESTED_REFS = st.sampled_from(["#/$defs/A", "#/$defs/B", "#/$defs/Missing", "#", "#/properties", "#/$defs/A/items"])
NESTED_TEXT = st.none() | st.text(max_size=8) | st.sampled_from(["fooOutput", "A", "a"])
NESTED = st.recursive(
    st.fixed_dictionaries({}, optional={"type": NESTED_TYPES, "description": NESTED_TEXT, "title": NESTED_TEXT})
    | st.builds(lambda r: {"$ref": r}, NESTED_REFS),
    lambda kids: st.fixed_dictionaries({"properties": st.dictionaries(
        st.sampled_from(["a", "b", "c", "d_e"]), kids, min_size=1, max_size=4)}, optional={
        "type": NESTED_TYPES, "required": st.lists(st.sampled_from(["a", "b", "c"]), max_size=3),
        "items": kids, "anyOf": st.lists(kids, max_size=2), "allOf": st.lists(kids, max_size=2),
        "$ref": NESTED_REFS}),
    max_leaves=40,
)


@pytest.mark.slow
@settings(max_examples=200, **SETTINGS)
@given(root=NESTED, defs=st.fixed_dictionaries({"A": NESTED, "B": NESTED}),
       max_depth=st.integers(1, 5), max_parameters=st.integers(1, 70))
def test_nested_schemas_are_bounded(root: Any, defs: Any, max_depth: int, max_parameters: int) -> None:
    from toolsift.adapters._jsonschema import parameters_from_schema
    from toolsift.schema import Tool

    schema = {**root, "$defs": defs} if isinstance(root, dict) else root
    try:
        got = parameters_from_schema(schema, where=".p", max_depth=max_depth, max_parameters=max_parameters)
        tool = Tool(id="t", name="t", parameters=got)
    except ToolsiftError:
        return
    assert got == parameters_from_schema(schema, where=".p", max_depth=max_depth, max_parameters=max_parameters)
    top = tool.top_level_parameters
    assert len(got) <= max(max_parameters, len(top))
    names = [p.name for p in got]
    by = {p.name: p for p in got}
    for i, p in enumerate(got):
        parent = tool.parent_of(p.name)
        depth = 1
        while parent is not None:
            assert names.index(parent) < i  # a parent comes before its sub-parameters
            assert by[parent].required or not p.required  # no required child of an optional one
            depth += 1
            parent = tool.parent_of(parent)
        assert depth <= max_depth
