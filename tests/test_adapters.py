"""Tests for toolsift.adapters: every catalogue format, the benchmark files, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolsift.adapters import (
    FORMATS,
    BenchmarkQuery,
    demo_catalog_path,
    detect_format,
    from_anthropic,
    from_mcp,
    from_openai,
    load_catalog,
    load_queries,
)
from toolsift.errors import CatalogFormatError, QueryError, SchemaError
from toolsift.schema import MAX_TEXT_CHARS, Catalog, Tool

from .conftest import DATA, needs_data

RAW_COUNTS = {"apibank": 101, "apigen": 3605, "gorilla-huggingface": 907, "toolink": 1804}


def raw_tools_path(ds: str) -> Path:
    return DATA / f"mftr-{ds}" / "dataset" / "from_toolret" / ds / "tools.json"


def by_name(catalog: Catalog, name: str) -> Tool:
    return next(t for t in catalog if t.name == name)


def required_flags(tool: Tool) -> dict[str, bool]:
    return {p.name: p.required for p in tool.parameters}


# --------------------------------------------------------------------- benchmarks


@needs_data
@pytest.mark.parametrize("ds", sorted(RAW_COUNTS))
def test_toolret_raw_tools_all_load(ds: str) -> None:
    path = raw_tools_path(ds)
    records = json.loads(path.read_text(encoding="utf-8"))
    catalog = load_catalog(path)
    assert detect_format(records) == "toolret"
    assert len(catalog) == RAW_COUNTS[ds] == len(records)
    assert catalog.name == "tools.json"
    for tool, record in zip(catalog, records):
        assert tool.id == record["id"]
        assert tool.name.strip()
        assert tool.source == record  # the whole record is kept for full-doc baselines
        assert record["type"] in tool.tags


@needs_data
def test_apibank_raw_mapping() -> None:
    catalog = load_catalog(raw_tools_path("apibank"))
    token = catalog.get("apibank_tool_0")
    assert token.name == "GetUserToken"
    assert not token.description.startswith('"')  # apibank wraps descriptions in quotes
    assert required_flags(token) == {"username": True, "password": True}
    assert token.response.startswith("Returns an object with: token (str)")
    # The one record whose parameters are a Python signature string: "(image: str)".
    caption = catalog.get("apibank_tool_39")
    assert [(p.name, p.type) for p in caption.parameters] == [("image", "str")]


@needs_data
def test_apigen_optional_only_when_type_says_so() -> None:
    catalog = load_catalog(raw_tools_path("apigen"))
    giveaways = catalog.get("apigen_tool_0")
    (param,) = giveaways.parameters
    # Has a "default" key but its type is plain "str": required, default kept as example.
    assert (param.name, param.type, param.required, param.example) == ("type", "str", True, "game")
    optional = [p for t in catalog for p in t.parameters if not p.required]
    assert optional and all(p.type and "optional" not in p.type for p in optional)
    records = json.loads(raw_tools_path("apigen").read_text(encoding="utf-8"))
    expected = sum(
        "optional" in str(spec.get("type", "")).lower()
        for r in records
        for spec in r["documentation"]["parameters"].values()
    )
    assert len(optional) == expected
    # A parameter literally named "properties" must not make the dict look like JSON Schema.
    zips = catalog.get("apigen_tool_1744")
    assert required_flags(zips) == {"ids": True, "properties": False}


@needs_data
def test_gorilla_arguments_keep_names_drop_code() -> None:
    catalog = load_catalog(raw_tools_path("gorilla-huggingface"))
    for tool in catalog:
        for p in tool.parameters:
            assert "=" not in p.name and "(" not in p.name
            assert p.required
    first = catalog.get("gorilla_huggingface_tool_0")
    assert "Feature Extraction" in first.tags
    with_dict = next(
        t for t in catalog if isinstance(t.source["documentation"]["api_arguments"], dict)
        and t.source["documentation"]["api_arguments"]
    )
    args = with_dict.source["documentation"]["api_arguments"]
    assert [p.name for p in with_dict.parameters] == list(args)
    assert [p.example for p in with_dict.parameters] == list(args.values())


@needs_data
def test_toolink_signature_parsing() -> None:
    catalog = load_catalog(raw_tools_path("toolink"))
    fractions = catalog.get("toolink_tool_0")
    assert [p.name for p in fractions.parameters] == ["fraction_1", "fraction_2"]
    assert fractions.response == "Returns (numerator, denominator)"
    distance = by_name(catalog, "calculate_distance_traveled")
    assert required_flags(distance) == {"speed": True, "time": True, "round_up": False}
    assert distance.parameters[-1].example is False
    # Empty name and description in the record: recovered from the stub and its prose.
    digits = catalog.get("toolink_tool_636")
    assert digits.name == "count_digits"
    assert "counts the number of digits" in digits.description


@needs_data
def test_mftr_augmented_apibank() -> None:
    path = DATA / "mftr-apibank/dataset/augmented_tools/apibank/gpt-4o-mini_tools.json"
    records = json.loads(path.read_text(encoding="utf-8"))
    catalog = load_catalog(path)
    assert detect_format(records) == "mftr-augmented"
    assert len(catalog) == 101
    for tool, record in zip(catalog, records):
        aug = record["augmented"]
        assert tool.id == record["id"]
        assert tool.name == record["origin_documentation"]["name"]
        assert tool.description.strip() and tool.response.strip()
        assert len(tool.examples) == 3 and all(e.strip() for e in tool.examples)
        # Two tools take no input at all (their origin docs list no parameters either).
        assert bool(tool.parameters) == bool(record["origin_documentation"]["parameters"])
        assert {p.name: p.required for p in tool.parameters} == {
            n: s["required"] for n, s in aug["parameters"].items()
        }
    assert sum(1 for t in catalog if not t.parameters) == 2


def fold_files() -> list[Path]:
    return sorted(DATA.glob("mftr-*/dataset/train_and_test/*/fold_*/*_queries.json"))


@needs_data
def test_every_fold_file_loads_with_labels_and_rewrites() -> None:
    files = fold_files()
    assert len(files) == 5 * 2 + 3 * 5  # apibank has train+test, the others test only
    stats: dict[str, int] = {}
    for path in files:
        queries = load_queries(path, stats=stats)
        assert queries, path
        for q in queries:
            assert isinstance(q, BenchmarkQuery)
            assert q.text.strip() and q.labels
            assert q.rewritten is not None and q.rewritten.text == q.text
            assert q.rewritten.needs
    assert stats == {
        "empty_needs": 0,
        "non_string_arguments": 0,
        "blank_argument_names": 0,
        "queries_without_needs": 0,
    }


@needs_data
@pytest.mark.parametrize("ds", sorted(RAW_COUNTS))
def test_test_folds_cover_the_toolret_queries(ds: str) -> None:
    base = DATA / f"mftr-{ds}" / "dataset"
    raw = load_queries(base / "from_toolret" / ds / "queries.json")
    assert all(q.rewritten is None and q.labels for q in raw)
    tool_ids = {t.id for t in load_catalog(raw_tools_path(ds))}
    assert all(set(q.labels) <= tool_ids for q in raw)
    folds = [q for p in sorted((base / "train_and_test" / ds).glob("fold_*/test_queries.json"))
             for q in load_queries(p)]
    assert {q.id: q.labels for q in folds} == {q.id: q.labels for q in raw}


def test_load_queries_repairs_llm_output() -> None:
    records = [
        {
            "id": "q1",
            "query": "Email Ana the slides",
            "labels": [{"id": "t1", "relevance": 1}, {"id": "t9", "relevance": 0}],
            "rewritten_query": {
                "tool_needs": [
                    {"user_intent": "", "tool_description": " ", "expected_response": ""},
                    {"user_intent": "send the slides", "tool_description": "", "expected_response": ""},
                ],
                "extracted_arguments": {"recipient": "Ana", "count": 3, "flags": ["a"], "": "x"},
            },
        },
        {
            "id": "q2",
            "query": "What time is it?",
            "labels": ["t2"],
            "rewritten_query": {"tool_needs": [{"user_intent": ""}], "extracted_arguments": {}},
        },
    ]
    stats: dict[str, int] = {}
    q1, q2 = load_queries(records, stats=stats)
    assert q1.labels == ("t1",)
    assert q1.rewritten is not None and len(q1.rewritten.needs) == 1
    assert q1.rewritten.arguments == {"recipient": "Ana", "count": "3", "flags": '["a"]'}
    assert q2.labels == ("t2",) and q2.rewritten is None
    assert stats == {
        "empty_needs": 2,
        "non_string_arguments": 2,
        "blank_argument_names": 1,
        "queries_without_needs": 1,
    }


def test_load_queries_bad_record_names_position() -> None:
    records = [{"id": "a", "query": "x", "labels": []}, {"id": "b", "query": "  ", "labels": []}]
    with pytest.raises(QueryError, match=r"queries\[1\] \(id='b'\)\.query"):
        load_queries(records)


# ------------------------------------------------------------------ vendor formats

WEATHER_PARAMS = {
    "type": "object",
    "properties": {
        "location": {"type": "string", "description": "City and country, e.g. Paris, France"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
        "days": {"type": "integer", "description": "Days ahead", "examples": [3]},
    },
    "required": ["location"],
}


def test_openai_chat_completions_form() -> None:
    payload = [{"type": "function", "function": {
        "name": "get_forecast", "description": "Forecast for a city.", "parameters": WEATHER_PARAMS}}]
    (tool,) = load_catalog(payload)
    assert detect_format(payload) == "openai"
    assert (tool.id, tool.name, tool.description) == ("get_forecast", "get_forecast", "Forecast for a city.")
    assert required_flags(tool) == {"location": True, "unit": False, "days": False}
    unit = tool.parameters[1]
    assert unit.example == "celsius" and "One of: celsius, fahrenheit." in unit.description
    assert tool.parameters[2].example == 3
    assert tool.source == payload[0]


def test_openai_responses_and_legacy_forms() -> None:
    responses_form = {
        "type": "function",
        "name": "lookup_order",
        "description": "Look up an order by id.",
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {
                "order_id": {"type": "string"},
                "email": {"type": ["string", "null"], "description": "Buyer email, if known"},
            },
            "required": ["order_id", "email"],
            "additionalProperties": False,
        },
    }
    legacy = {"name": "get_time", "description": "Current time in a time zone.",
              "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}}
    builtin = {"type": "web_search_preview"}
    tools = from_openai({"tools": [responses_form, builtin, legacy]})
    assert [t.name for t in tools] == ["lookup_order", "get_time"]
    # Strict mode lists every property as required; nullable ones are the optional ones.
    assert required_flags(tools[0]) == {"order_id": True, "email": False}
    assert tools[0].parameters[1].type == "string|null"
    # No "required" array at all: every parameter is required.
    assert required_flags(tools[1]) == {"tz": True}
    assert detect_format([legacy]) == "openai"
    assert detect_format({"functions": [legacy]}) == "openai"
    assert [t.name for t in from_openai({"functions": [legacy]})] == ["get_time"]


def test_anthropic_form() -> None:
    payload = {"tools": [{
        "name": "create_ticket",
        "description": "Open a support ticket.",
        "input_schema": {
            "type": "object",
            "properties": {
                "subject": {"type": "string", "description": "One-line summary"},
                "priority": {"type": "string", "enum": ["low", "high"]},
                "notify": {"type": "boolean", "required": False},
                "body": {"type": "string"},
            },
            "required": ["subject", "notify", "body"],
        },
        "cache_control": {"type": "ephemeral"},
    }]}
    (tool,) = from_anthropic(payload)
    assert detect_format(payload) == "anthropic"
    # "notify" is in the required array but marked required: false on the property.
    assert required_flags(tool) == {"subject": True, "priority": False, "notify": False, "body": True}
    assert tool.parameters[0].document() == "subject (string): One-line summary"


MCP_TOOLS = [
    {
        "name": "get_current_weather",
        "title": "Current weather",
        "description": "Current conditions for a place.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "units": {"type": "string", "optional": True},
            },
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "temperature": {"type": "number", "description": "current temperature in Celsius."},
                "conditions": {"type": "string"},
            },
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
        "_meta": {"toolsift/examples": ["Is it cold in Oslo?"], "toolsift/tags": ["weather"]},
    },
    {
        "name": "wipe_device",
        "inputSchema": {"type": "object", "properties": {"device_id": {"type": "string"}},
                        "required": ["device_id"]},
        "annotations": {"destructiveHint": True},
    },
]


def test_mcp_plain_and_result_forms() -> None:
    for payload in (MCP_TOOLS, {"tools": MCP_TOOLS, "nextCursor": "abc"}):
        assert detect_format(payload) == "mcp"
        weather, wipe = load_catalog(payload)
        assert required_flags(weather) == {"city": True, "units": False}
        assert weather.response == (
            "Returns an object with: temperature (number): current temperature in Celsius; "
            "conditions (string)."
        )
        assert weather.examples == ("Is it cold in Oslo?",)
        assert weather.tags == ("weather", "read-only")
        assert wipe.description == "" and wipe.response == ""
        assert wipe.tags == ("destructive",)


def test_mcp_jsonrpc_wrapped_and_error() -> None:
    wrapped = {"jsonrpc": "2.0", "id": 7, "result": {"tools": MCP_TOOLS}}
    assert detect_format(wrapped) == "mcp"
    assert [t.name for t in from_mcp(wrapped)] == ["get_current_weather", "wipe_device"]
    bad = {"jsonrpc": "2.0", "id": 7, "result": {"tools": [{"inputSchema": {}}]}}
    with pytest.raises(SchemaError, match=r"result\.tools\[0\]\.name"):
        from_mcp(bad)
    with pytest.raises(CatalogFormatError, match="code -32601"):
        from_mcp({"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "no such method"}})


def test_mcp_title_stands_in_for_missing_description() -> None:
    (tool,) = from_mcp([{"name": "x", "title": "Do the thing", "inputSchema": {"type": "object"}}])
    assert tool.description == "Do the thing" and tool.parameters == ()


def test_native_round_trip(tmp_path: Path) -> None:
    original = load_catalog(MCP_TOOLS)
    path = tmp_path / "native.json"
    path.write_text(json.dumps({"format": "toolsift", "tools": original.to_list()}), encoding="utf-8")
    again = load_catalog(path)
    assert detect_format(original.to_list()) == "native"
    assert list(again) == list(original)
    assert list(load_catalog(original.to_list(), format="native")) == list(original)


# ------------------------------------------------------------------ demo catalogue


def test_demo_catalogue() -> None:
    path = demo_catalog_path()
    payload = json.loads(path.read_text(encoding="utf-8"))
    assert detect_format(payload) == "mcp"
    catalog = load_catalog(path)
    assert len(catalog) >= 48
    assert len({t.id for t in catalog}) == len(catalog)
    domains = set()
    for tool in catalog:
        assert tool.description.strip(), tool.id
        assert len(tool.examples) >= 1, tool.id
        assert tool.response.startswith("Returns"), tool.id
        assert tool.parameters, tool.id
        domains.update(t for t in tool.tags if t not in {"read-only", "destructive",
                                                          "idempotent", "open-world"})
    assert len(domains) >= 8
    flags = [p.required for t in catalog for p in t.parameters]
    assert True in flags and False in flags
    for a, b in [("send_email", "send_slack_message"), ("get_weather_forecast", "get_current_weather"),
                 ("refund_payment", "create_payment")]:
        assert a in catalog and b in catalog


# ------------------------------------------------------------------ detection, errors


def test_detect_format_edge_cases() -> None:
    assert detect_format([]) == "native"
    assert detect_format({"format": "toolsift", "tools": []}) == "native"
    assert detect_format([{"id": "a", "documentation": {}, "type": "web"}]) == "toolret"
    with pytest.raises(CatalogFormatError, match="cannot detect"):
        detect_format([{"foo": 1}])
    with pytest.raises(CatalogFormatError, match="cannot detect"):
        detect_format({"servers": []})
    with pytest.raises(CatalogFormatError):
        detect_format("tools")
    assert set(FORMATS) == {"native", "openai", "anthropic", "mcp", "toolret", "mftr-augmented",
                            "openapi", "gemini", "langchain"}


def test_malformed_json_names_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"tools": [\n  {"name": "a"},\n  {"name": "b",,}\n]}\n', encoding="utf-8")
    with pytest.raises(CatalogFormatError) as info:
        load_catalog(path)
    message = str(info.value)
    assert "broken.json" in message and "line 3" in message and "column" in message


def test_missing_file_is_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogFormatError, match="no such file"):
        load_catalog(tmp_path / "nope.json")


def test_tool_without_name_names_position(tmp_path: Path) -> None:
    tools: list[dict[str, Any]] = [
        {"name": f"t{i}", "description": "d", "input_schema": {"type": "object"}} for i in range(3)
    ]
    tools.append({"description": "nameless", "input_schema": {"type": "object"}})
    with pytest.raises(SchemaError, match=r"tools\[3\]\.name") as info:
        load_catalog(tools)
    assert "name" in str(info.value)
    path = tmp_path / "anthropic.json"
    path.write_text(json.dumps(tools), encoding="utf-8")
    with pytest.raises(SchemaError, match=r"anthropic\.json: tools\[3\]"):
        load_catalog(path)


def test_duplicate_ids_rejected() -> None:
    dup = [{"name": "send_mail", "inputSchema": {}}, {"name": "send_mail", "inputSchema": {}}]
    with pytest.raises(SchemaError, match="duplicate tool id"):
        load_catalog(dup, format="mcp")


def test_unknown_format_rejected() -> None:
    with pytest.raises(CatalogFormatError, match="unknown catalogue format 'yaml'"):
        load_catalog([], format="yaml")
    with pytest.raises(CatalogFormatError):
        load_catalog(42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ("string", r"tools\[1\] \(name='b'\)\.function\.parameters:"),
        ({"type": "string"}, r"tools\[1\] \(name='b'\)\.function\.parameters:"),
        ({"type": "object", "properties": {"to": "email"}},
         r"tools\[1\] \(name='b'\)\.function\.parameters\.properties\['to'\]"),
        ({"type": "object", "properties": {}, "required": "to"},
         r"tools\[1\] \(name='b'\)\.function\.parameters\.required"),
    ],
)
def test_non_object_parameter_schema_rejected(schema: Any, where: str) -> None:
    payload = [
        {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "b", "parameters": schema}},
    ]
    with pytest.raises(SchemaError, match=where):
        load_catalog(payload)


def test_megabyte_description_names_the_tool() -> None:
    payload = {"tools": [{"name": "ok", "inputSchema": {}},
                         {"name": "huge_tool", "description": "x" * 1_000_000, "inputSchema": {}}]}
    with pytest.raises(SchemaError) as info:
        load_catalog(payload)
    message = str(info.value)
    assert "huge_tool" in message and "tools[1]" in message
    assert f"{MAX_TEXT_CHARS:,}" in message


def test_format_mismatch_is_reported() -> None:
    with pytest.raises(SchemaError, match=r"tools\[0\] \(id='x'\)\.augmented"):
        load_catalog([{"id": "x", "documentation": {}}], format="mftr-augmented")
    with pytest.raises(CatalogFormatError, match="native"):
        load_catalog({"format": "other", "tools": []}, format="native")
