"""Nested object parameters, legacy JSON-schema type spellings and generated titles in
the catalogue adapters (bad path strings and search: test_adapters_search.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from toolsift.adapters import detect_format, from_mcp, from_openai, load_catalog, load_openapi
from toolsift.adapters._jsonschema import is_generated_title, parameters_from_schema
from toolsift.errors import SchemaError
from toolsift.gateway.formats import input_schema, to_mcp, to_openai
from toolsift.index.fields import field_documents
from toolsift.schema import Catalog, Parameter, Tool

# A BFCL/Gorilla-style function doc (legacy ``functions`` entry, "type": "dict"), shaped
# like the benchmark's multi-level "live" entries: a nested object, an array of objects,
# a defaulted enum and a Python-style "float".
BFCL_TOOL: dict[str, Any] = {
    "name": "book_flight",
    "description": "Book a flight itinerary for one passenger.",
    "parameters": {
        "type": "dict",
        "properties": {
            "passenger": {
                "type": "dict",
                "description": "Who is flying.",
                "properties": {
                    "full_name": {"type": "string", "description": "Name as printed in the passport."},
                    "age": {"type": "integer", "description": "Age in years."},
                    "address": {
                        "type": "dict",
                        "properties": {
                            "city": {"type": "string", "description": "City of residence."},
                            "postal_code": {"type": "string"},
                        },
                        "required": ["city"],
                    },
                },
                "required": ["full_name", "address"],
            },
            "legs": {
                "type": "array",
                "description": "Flight segments in order.",
                "items": {
                    "type": "dict",
                    "properties": {
                        "origin": {"type": "string", "description": "IATA code of the departure airport."},
                        "destination": {"type": "string", "description": "IATA code of the arrival airport."},
                        "date": {"type": "string", "description": "Departure date, YYYY-MM-DD."},
                    },
                    "required": ["origin", "destination"],
                },
            },
            "cabin": {"type": "string", "enum": ["economy", "business"], "default": "economy"},
            "price_cap": {"type": "float", "description": "Highest acceptable fare."},
        },
        "required": ["passenger", "legs"],
    },
}

BFCL_EXPECTED = [  # (name, type, required), depth-first
    ("passenger", "object", True),
    ("passenger.full_name", "string", True),
    ("passenger.age", "integer", False),
    ("passenger.address", "object", True),
    ("passenger.address.city", "string", True),
    ("passenger.address.postal_code", "string", False),
    ("legs", "array", True),
    ("legs[].origin", "string", True),
    ("legs[].destination", "string", True),
    ("legs[].date", "string", False),
    ("cabin", "string", False),
    ("price_cap", "number", False),
]


def shape(tool: Tool) -> list[tuple[str, str, bool]]:
    return [(p.name, p.type, p.required) for p in tool.parameters]


def params(schema: Any, **kw: Any) -> list[tuple[str, str, bool]]:
    return [(p.name, p.type, p.required) for p in parameters_from_schema(schema, where=".parameters", **kw)]


# ------------------------------------------------------------ BFCL "dict" schemas


def test_bfcl_dict_tool_flattened() -> None:
    assert detect_format([BFCL_TOOL]) == "openai"
    (tool,) = load_catalog([BFCL_TOOL])
    # passenger.address is listed in passenger's required, so it is required; city too
    # (required by address, which is required); legs[] fields follow the items' list.
    shape_ = shape(tool)
    assert [n for n, _, _ in shape_] == [n for n, _, _ in BFCL_EXPECTED]
    assert shape_ == [(n, t, r) for n, t, r in BFCL_EXPECTED]
    by = {p.name: p for p in tool.parameters}
    assert by["legs[].origin"].description == "IATA code of the departure airport."
    assert by["cabin"].description == "One of: economy, business." and by["cabin"].example == "economy"
    assert tool.parent_of("passenger.address.city") == "passenger.address"
    assert tool.parent_of("legs[].date") == "legs"
    assert [p.name for p in tool.top_level_parameters] == ["passenger", "legs", "cabin", "price_cap"]


def test_optional_parent_makes_children_optional() -> None:
    schema = copy.deepcopy(BFCL_TOOL["parameters"])
    schema["required"] = ["legs"]
    flags = {n: r for n, _, r in params(schema)}
    assert flags["passenger"] is False
    assert not any(r for n, r in flags.items() if n.startswith("passenger."))
    assert flags["legs[].origin"] is True


@pytest.mark.parametrize("wrap", ["chat", "responses", "functions", "tools"])
def test_dict_type_in_every_openai_spelling(wrap: str) -> None:
    body = copy.deepcopy(BFCL_TOOL)
    payload = {
        "chat": [{"type": "function", "function": body}],
        "responses": [{"type": "function", **body}],
        "functions": {"functions": [body]},
        "tools": {"tools": [body]},
    }[wrap]
    (tool,) = from_openai(payload)
    assert shape(tool) == BFCL_EXPECTED


def test_nested_required_follows_json_schema() -> None:
    schema = {"type": "object", "properties": {
        "a": {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "string", "required": True}}},
        "b": {"type": "object", "required": ["x", "y"], "properties": {
            "x": {"type": "string", "optional": True}, "y": {"type": ["string", "null"]}}},
    }}
    # No "required" on a nested object: nothing in it is required, except a draft-3 mark.
    assert params(schema) == [("a", "object", True), ("a.x", "string", False), ("a.y", "string", True),
                              ("b", "object", True), ("b.x", "string", False), ("b.y", "string|null", True)]
    # OpenAI strict mode: a nullable type is the way to say "optional", nested too.
    assert dict((n, r) for n, _, r in params(schema, nullable_optional=True))["b.y"] is False


# ------------------------------------------------------------ legacy type spellings


@pytest.mark.parametrize(("legacy", "expected"), [
    ("dict", "object"), ("Dict", "object"), ("HashMap", "object"), ("float", "number"),
    ("double", "number"), ("int", "integer"), ("long", "integer"), ("bool", "boolean"),
    ("Boolean", "boolean"), ("list", "array"), ("tuple", "array"), ("List", "array"),
    ("set", "array"), ("str", "string"), ("String", "string"), ("any", "any"), ("None", "null"),
    (["int", "None"], "integer|null"), (["float", "number"], "number"),
])
def test_legacy_types_are_mapped(legacy: Any, expected: str) -> None:
    schema = {"type": "dict", "properties": {"v": {"type": legacy}}}
    assert params(schema) == [("v", expected, True)]
    in_any_of = {"type": "object", "properties": {"v": {"anyOf": [{"type": legacy}, {"type": "null"}]}}}
    assert params(in_any_of)[0][1] == (expected if expected.endswith("null") else expected + "|null")


@pytest.mark.parametrize(("schema", "where", "what"), [
    ({"type": "object", "properties": {"when": {"type": "datetime"}}},
     ".parameters.properties['when'].type", "unknown type 'datetime'"),
    ({"type": "dict", "properties": {"a": {"type": "dict", "properties": {"b": {"type": "date"}}}}},
     ".parameters.properties['a'].properties['b'].type", "unknown type 'date'"),
    ({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "dict", "properties": {
        "z": {"type": ["string", "file"]}}}}}},
     ".parameters.properties['l'].items.properties['z'].type[1]", "unknown type 'file'"),
    ({"type": "object", "properties": {"u": {"anyOf": [{"type": "string"}, {"type": "uuid"}]}}},
     ".parameters.properties['u'].anyOf[1].type", "unknown type 'uuid'"),
    ({"type": "object", "properties": {"n": {"type": 5}}},
     ".parameters.properties['n'].type", "expected a type name"),
    ({"type": "record", "properties": {}}, ".parameters.type", "unknown type 'record'"),
    ({"type": "list", "items": {}}, ".parameters", '"type": "object"'),
])
def test_unknown_types_name_tool_and_path(schema: dict[str, Any], where: str, what: str) -> None:
    entries = [{"name": "ok", "parameters": {"type": "dict"}}, {"name": "bad", "parameters": schema}]
    with pytest.raises(SchemaError) as err:
        load_catalog(entries)
    assert err.value.where == f"tools[1] (name='bad'){where}"
    assert what in str(err.value)


# ------------------------------------------------------------ bounds


def chain(depth: int) -> dict[str, Any]:
    """``{"type": "object", "properties": {"n": {... depth levels ...}}}``, built iteratively."""
    leaf: dict[str, Any] = {"type": "string", "description": "bottom"}
    for _ in range(depth):
        leaf = {"type": "object", "properties": {"n": leaf}, "required": ["n"]}
    return leaf


def test_depth_is_bounded_without_recursion() -> None:
    # Far deeper than the interpreter's recursion limit: reading must stay iterative.
    names = [n for n, _, _ in params(chain(20_000))]
    assert names == ["n", "n.n", "n.n.n", "n.n.n.n"]
    assert [n for n, _, _ in params(chain(3))] == ["n", "n.n", "n.n.n"]
    assert [n for n, _, _ in params(chain(20_000), max_depth=2)] == ["n", "n.n"]
    assert [n for n, _, _ in params(chain(20_000), max_depth=1)] == ["n"]


def test_content_past_the_bounds_is_not_read() -> None:
    deep = chain(6)
    node = deep
    for _ in range(6):
        node = node["properties"]["n"]
    node["type"] = "not-a-type"  # depth 7: never read
    assert len(params(deep)) == 4
    node = deep["properties"]["n"]["properties"]["n"]
    node["type"] = "not-a-type"  # depth 2: read, rejected
    with pytest.raises(SchemaError, match=r"properties\['n'\]\.properties\['n'\]\.type"):
        params(deep)


def grid(tops: int, kids: int, grandkids: int) -> dict[str, Any]:
    return {"type": "object", "properties": {
        f"t{i}": {"type": "object", "properties": {
            f"k{j}": {"type": "object", "properties": {f"g{m}": {"type": "string"} for m in range(grandkids)}}
            for j in range(kids)}}
        for i in range(tops)}}


def test_parameter_budget_is_breadth_first_and_deterministic() -> None:
    got = [n for n, _, _ in params(grid(10, 10, 10))]
    assert len(got) == 64
    # 10 top-level + 54 depth-2 sub-parameters in schema order (t0..t4 complete, t5 has
    # four); no depth-3 one makes it in. Output is depth-first.
    kept = {(i, j) for i in range(10) for j in range(10) if i * 10 + j < 54}
    expected = []
    for i in range(10):
        expected.append(f"t{i}")
        expected += [f"t{i}.k{j}" for j in range(10) if (i, j) in kept]
    assert got == expected
    assert got == [n for n, _, _ in params(grid(10, 10, 10))]
    # Room for everything: all three levels come out, depth-first.
    small = [n for n, _, _ in params(grid(2, 2, 2))]
    assert small == ["t0", "t0.k0", "t0.k0.g0", "t0.k0.g1", "t0.k1", "t0.k1.g0", "t0.k1.g1",
                     "t1", "t1.k0", "t1.k0.g0", "t1.k0.g1", "t1.k1", "t1.k1.g0", "t1.k1.g1"]


def test_top_level_parameters_are_never_dropped() -> None:
    got = [n for n, _, _ in params(grid(100, 3, 0))]
    assert got == [f"t{i}" for i in range(100)]
    assert len(params(grid(3, 3, 3), max_parameters=5)) == 5


def test_local_refs_and_cycles() -> None:
    schema = {
        "type": "object",
        "$defs": {"Node": {"type": "object", "required": ["value"], "properties": {
            "value": {"type": "integer", "description": "Stored value."},
            "next": {"$ref": "#/$defs/Node"}}}},
        "properties": {"head": {"$ref": "#/$defs/Node", "description": "First node."},
                       "loop": {"$ref": "#/$defs/Loop"}, "gone": {"$ref": "#/$defs/Missing"}},
    }
    schema["$defs"]["Loop"] = {"$ref": "#/$defs/Loop"}
    assert params(schema) == [
        ("head", "Node", True), ("head.value", "integer", True), ("head.next", "Node", False),
        ("head.next.value", "integer", False), ("head.next.next", "Node", False),
        ("head.next.next.value", "integer", False), ("head.next.next.next", "Node", False),
        ("loop", "Loop", True), ("gone", "Missing", True)]
    # A mapping that contains itself (only possible from Python, not JSON) is bounded too.
    me: dict[str, Any] = {"type": "object"}
    me["properties"] = {"me": me}
    assert [n for n, _, _ in params(me)] == ["me", "me.me", "me.me.me", "me.me.me.me"]


def test_optional_model_through_any_of_and_all_of() -> None:
    # pydantic's Optional[Address] and the older allOf-wrapped $ref.
    schema = {"type": "object", "$defs": {"Address": {"type": "object", "required": ["city"], "properties": {
        "city": {"type": "string", "title": "City"}, "zip": {"type": "string", "title": "Postal or ZIP code"}}}},
        "required": ["home", "work"],
        "properties": {"home": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}], "default": None},
                       "work": {"allOf": [{"$ref": "#/$defs/Address"}]}}}
    got = parameters_from_schema(schema, where=".x")
    assert [(p.name, p.required) for p in got] == [
        ("home", True), ("home.city", True), ("home.zip", False),
        ("work", True), ("work.city", True), ("work.zip", False)]
    by = {p.name: p for p in got}
    assert by["home.city"].description == ""  # pydantic's title restating the name
    assert by["home.zip"].description == "Postal or ZIP code"


def test_properties_past_the_budget_are_not_read() -> None:
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(100)}}
    wide["properties"]["p99"] = "not a schema"
    schema = {"type": "object", "properties": {"w": wide}}
    assert [n for n, _, _ in params(schema)][-1] == "w.p62"  # 1 + 63 sub-parameters
    with pytest.raises(SchemaError, match=r"properties\['w'\]\.properties\['p99'\]"):
        params(schema, max_parameters=200)


# ------------------------------------------------------------ the original schema


def test_original_schema_is_what_export_returns() -> None:
    chat = {"type": "function", "function": copy.deepcopy(BFCL_TOOL)}
    chat["function"]["parameters"]["type"] = "object"
    mcp = {"name": "book_flight_mcp", "description": "Book a flight.",
           "inputSchema": copy.deepcopy(chat["function"]["parameters"])}
    before = copy.deepcopy([chat, mcp])
    (t_chat,) = from_openai([chat])
    (t_mcp,) = from_mcp([mcp])
    assert [chat, mcp] == before  # reading never modifies the caller's payload
    assert t_chat.source == chat and t_mcp.source == mcp
    assert len(t_chat.parameters) == len(BFCL_EXPECTED)  # flattened for retrieval only
    assert to_openai(t_chat)["function"]["parameters"] == chat["function"]["parameters"]
    assert to_mcp(t_mcp)["inputSchema"] == mcp["inputSchema"]
    assert to_openai(t_mcp)["function"]["parameters"] == mcp["inputSchema"]
    # The native form keeps the source too, so a saved catalogue exports the same.
    (again,) = load_catalog([t_chat.to_dict()])
    assert to_openai(again)["function"]["parameters"] == chat["function"]["parameters"]


def test_built_schema_has_only_top_level_parameters() -> None:
    # A legacy entry has no host wrapper to return verbatim; the built schema must not
    # list sub-parameters as arguments of their own.
    (tool,) = load_catalog([BFCL_TOOL])
    schema = input_schema(tool)
    assert list(schema["properties"]) == ["passenger", "legs", "cabin", "price_cap"]
    assert schema["required"] == ["passenger", "legs"]
    assert schema["properties"]["passenger"]["type"] == "object"


def test_parent_of_rules() -> None:
    tool = Tool(id="t", name="t", parameters=(
        Parameter("filter.name"), Parameter("a"), Parameter("a.b"), Parameter("a.b.c"),
        Parameter("rows"), Parameter("rows[][].x"), Parameter("ids[]")))
    assert tool.parent_of("filter.name") is None  # a dot alone does not make a parent
    assert tool.parent_of("a.b.c") == "a.b"
    assert tool.parent_of("a.b") == "a"
    assert tool.parent_of("rows[][].x") == "rows"
    assert tool.parent_of("ids[]") is None
    assert [p.name for p in tool.top_level_parameters] == ["filter.name", "a", "rows", "ids[]"]


def test_openapi_clashing_body_field_keeps_its_sub_parameters() -> None:
    spec = {"openapi": "3.0.3", "paths": {"/orders": {"post": {
        "operationId": "createOrder",
        "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer"}}],
        "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
            "limit": {"type": "object", "properties": {"amount": {"type": "number"}}},
            "note": {"type": "string"}}}}}}}}}}
    (tool,) = load_openapi(spec)
    assert [p.name for p in tool.parameters] == ["limit", "body.limit", "body.limit.amount", "note"]
    assert tool.parent_of("body.limit.amount") == "body.limit"


# ------------------------------------------------------------ generated titles


FASTMCP_TOOL = {
    "name": "search_notes",
    "description": "Full-text search over the user's notes.",
    "inputSchema": {
        "type": "object", "title": "search_notesArguments", "required": ["query"],
        "properties": {
            "query": {"type": "string", "title": "Query"},
            "max_results": {"type": "integer", "title": "Max Results", "default": 10},
            "folder": {"type": "string", "title": "Folder to search in"},
        },
    },
    "outputSchema": {
        "type": "object", "title": "search_notesOutput", "required": ["result"],
        "properties": {"result": {"type": "array", "items": {"type": "string"}, "title": "Result"}},
    },
}


def test_mcp_generated_titles_are_not_indexed() -> None:
    (tool,) = from_mcp([FASTMCP_TOOL])
    assert "search_notesOutput" not in tool.response
    assert "Output" not in tool.response and "Arguments" not in tool.response
    assert tool.response == "Returns an object with: result (array)."
    by = {p.name: p.description for p in tool.parameters}
    assert by == {"query": "", "max_results": "", "folder": "Folder to search in"}
    # Nothing searchable carries the generated model names.
    docs = field_documents(Catalog([tool]), name_in_description=True, split_identifiers=True)
    text = " ".join(t for fd in docs.values() for t in fd.texts)
    assert "Output" not in text and "Arguments" not in text and "Max Results" not in text
    # A title a person wrote still stands in for a missing description.
    described = dict(FASTMCP_TOOL, outputSchema={"type": "object", "title": "Matching notes, best first"})
    (tool,) = from_mcp([described])
    assert tool.response.startswith("Matching notes, best first.")
    titled = dict(FASTMCP_TOOL, outputSchema={"type": "string", "title": "search_notes"})
    assert from_mcp([titled])[0].response == "Returns a string."


@pytest.mark.parametrize(("title", "name", "generated"), [
    ("search_notesOutput", None, True), ("search_notesArguments", None, True),
    ("WeatherResponse", None, True), ("get_weatherInput", "get_weather", True),
    ("Max Results", "max_results", True), ("maxResults", "max_results", True), ("  ", None, True),
    ("Search query", "query", False), ("Output of the last run", None, False),
    ("Address", "shipping_address", False), ("Folder to search in", "folder", False),
])
def test_is_generated_title(title: str, name: str | None, generated: bool) -> None:
    assert is_generated_title(title, name) is generated
