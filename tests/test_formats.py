"""Formats both ways: every host format is read and written by one module, and what a
writer produces reads back as the same tool (real catalogues from tests/fixtures and the
benchmark data beside the repository)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field, create_model

from toolsift import ToolIndex
from toolsift.adapters import demo_catalog_path, load_catalog
from toolsift.adapters.anthropic import from_anthropic
from toolsift.adapters.mcp import from_mcp, mcp_tool
from toolsift.adapters.openai import from_openai
from toolsift.adapters.openapi import load_openapi
from toolsift.adapters._writing import description_of
from toolsift.adapters.writers import WRITE_FORMATS, input_schema, to_format
from toolsift.errors import FormatError
from toolsift.schema import Parameter, Tool

from .conftest import dataset

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "openapi"
READERS = {"openai": from_openai, "openai-responses": from_openai, "anthropic": from_anthropic, "mcp": from_mcp}


def _catalogues() -> dict[str, list[Tool]]:
    data = {
        "demo": list(load_catalog(demo_catalog_path())),
        "apibank-mftr": list(load_catalog(
            dataset("mftr-apibank") / "dataset/augmented_tools/apibank/gpt-4o-mini_tools.json")),
        "apigen-toolret": list(load_catalog(dataset("mftr-apigen") / "dataset/from_toolret/apigen/tools.json")),
        "gorilla-toolret": list(load_catalog(
            dataset("mftr-gorilla-huggingface") / "dataset/from_toolret/gorilla-huggingface/tools.json")),
        "petstore": list(load_openapi(FIXTURES / "petstore.json")),
        "payments": list(load_openapi(FIXTURES / "payments.yaml")),
    }
    return data


@pytest.fixture(scope="module")
def catalogues() -> dict[str, list[Tool]]:
    return _catalogues()


def _top(tool: Tool) -> list[tuple[str, bool, str]]:
    return [(p.name, p.required, p.description) for p in tool.top_level_parameters]


@pytest.mark.parametrize("fmt", WRITE_FORMATS)
def test_real_catalogues_round_trip(catalogues, fmt):
    read = READERS[fmt]
    for name, tools in catalogues.items():
        written = [to_format(t, fmt) for t in tools]
        for t, w in zip(tools, written):
            # The schema in the payload is the tool's (validated in the next test).
            body = w["function"] if fmt == "openai" else w
            key = {"anthropic": "input_schema", "mcp": "inputSchema"}.get(fmt, "parameters")
            assert body[key] == input_schema(t), (name, t.id)
        first = read(json.loads(json.dumps(written)))
        assert [t.name for t in first] == [t.name for t in tools], name
        for orig, back in zip(tools, first):
            # What the format carries survives: name, description, the tool's own
            # arguments with their required flags and descriptions.
            assert back.description == description_of(orig), (name, orig.id)
            assert [(n, r) for n, r, _ in _top(back)] == [(n, r) for n, r, _ in _top(orig)], (name, orig.id)
            assert [d for _, _, d in _top(back)] == [d for _, _, d in _top(orig)], (name, orig.id)
        # read -> write -> read is a fixed point: the same tools, the same payload.
        rewritten = [to_format(t, fmt) for t in first]
        assert rewritten == written, name
        assert read(rewritten) == first, name


def test_written_schemas_are_valid_json_schema(catalogues):
    # One metaschema validator for all (check_schema builds a new one per call).
    meta = Draft202012Validator(Draft202012Validator.META_SCHEMA)
    for name, tools in catalogues.items():
        # Big catalogues in a fixed stride: the metaschema check costs ~5 ms a schema, and
        # every tool of one catalogue goes through the same writer path.
        for t in tools[::max(1, len(tools) // 300)]:
            schema = input_schema(t)
            errors = [e.message for e in meta.iter_errors(schema)]
            assert not errors, (name, t.id, errors)
            assert schema["type"] == "object"


def _fastmcp_style_tools() -> list[dict]:
    """An MCP tools/list as pydantic-based servers (FastMCP) generate it: argument and
    result models titled after the function, property titles restating names."""

    class Note(BaseModel):
        title: str = Field(description="note title")
        body: str

    args = create_model("search_notesArguments", query=(str, Field(description="words to look for")),
                        max_results=(int, 10))
    out = create_model("search_notesOutput", result=(list[Note], ...))
    plain = create_model("count_notesOutput", result=(int, ...))
    return [
        {"name": "search_notes", "description": "Search the user's notes.",
         "inputSchema": args.model_json_schema(), "outputSchema": out.model_json_schema()},
        {"name": "count_notes", "title": "Count notes",
         "inputSchema": create_model("count_notesArguments").model_json_schema(),
         "outputSchema": plain.model_json_schema()},
    ]


def test_mcp_reader_keeps_generated_titles_out_of_text():
    entries = _fastmcp_style_tools()
    assert entries[0]["outputSchema"]["title"] == "search_notesOutput"  # the generator's title is there
    tools = from_mcp(entries)
    for t in tools:
        texts = [t.description, t.response] + [p.description for p in t.parameters]
        for text in texts:
            assert "Output" not in text and "Arguments" not in text, (t.name, text)
    search, count = tools
    assert search.response.startswith("Returns an object with: result (array)")
    assert "Search the user's notes." == search.description
    assert {p.name: p.description for p in search.parameters}["max_results"] == ""  # "Max Results" restates the name
    # A person's title ("Count notes") still stands in for a missing description.
    assert count.description == "Count notes" and count.response == "Returns an object with: result (integer)."
    # Written back, the MCP entry is the one read (title and output schema kept verbatim).
    assert [t.to_mcp() for t in tools] == entries
    assert from_mcp([t.to_mcp() for t in tools]) == tools


def test_mcp_reader_reads_pydantic_enums_and_drops_class_names():
    from enum import Enum

    class Units(str, Enum):
        """Measurement system."""

        metric = "metric"
        imperial = "imperial"

    class WeatherReport(BaseModel):
        temp: float = Field(description="temperature in Celsius")

    args = create_model("get_weatherArguments", city=(str, ...), unit_system=(Units, Units.metric))
    entries = [
        {"name": "get_weather", "description": "Weather now.", "inputSchema": args.model_json_schema(),
         "outputSchema": WeatherReport.model_json_schema()},  # a model returned as is: title "WeatherReport"
    ]
    tool = from_mcp(entries)[0]
    units = {p.name: p for p in tool.parameters}["unit_system"]
    # The enum behind the $ref gives the type and the values; its class name is no description.
    assert (units.type, units.description, units.required) == (
        "string", "Measurement system. One of: metric, imperial.", False)
    assert tool.response == "Returns an object with: temp (number): temperature in Celsius."
    assert "WeatherReport" not in tool.response and "Units" not in units.description
    # The written schema is still the source's, $ref and all.
    assert tool.to_mcp()["inputSchema"] == entries[0]["inputSchema"]
    # A person's one-word or spaced title is kept where it stands in for a description.
    assert from_mcp([{"name": "w", "inputSchema": {"type": "object"},
                      "outputSchema": {"type": "object", "title": "Weather"}}])[0].response.startswith("Weather.")


def test_sources_are_written_back_verbatim_across_formats():
    params = {"type": "object", "properties": {
        "city": {"type": "string", "enum": ["Oslo", "Rome"], "default": "Oslo"},
        "when": {"$ref": "#/$defs/day"}}, "required": ["city"],
        "$defs": {"day": {"type": "string", "format": "date"}}}
    chat = {"type": "function", "function": {"name": "weather", "description": "Weather.", "parameters": params}}
    flat = {"type": "function", "name": "weather", "description": "Weather.", "parameters": params, "strict": True}
    anth = {"name": "weather", "description": "Weather.", "input_schema": params}
    mcp = {"name": "weather", "description": "Weather.", "inputSchema": params}
    tools = [from_openai([chat])[0], from_anthropic([anth])[0], from_mcp([mcp])[0]]
    assert tools[0] == tools[1] == tools[2]
    for t in tools:
        assert t.to_openai() == chat
        assert t.to_anthropic() == anth
        assert t.to_mcp() == mcp
        assert t.to_openai(api="responses") == {k: v for k, v in flat.items() if k != "strict"}
    strict = from_openai([flat])[0]
    assert strict.to_openai(api="responses") == flat
    assert strict.to_openai() == {"type": "function", "function": {k: v for k, v in flat.items() if k != "type"}}
    assert from_openai([strict.to_openai()]) == [strict]


def test_native_tool_tags_and_examples_survive_mcp():
    tool = Tool(id="geo", name="geo", description="Geocode.", parameters=(Parameter("q", "string", "address"),),
                examples=("where is 1 Main St",), tags=("maps", "read-only"))
    out = tool.to_mcp(examples=True)
    assert out["annotations"] == {"readOnlyHint": True}
    assert out["_meta"] == {"toolsift/tags": ["maps"], "toolsift/examples": ["where is 1 Main St"]}
    back = mcp_tool(out)
    assert back == tool
    assert "toolsift/examples" not in tool.to_mcp()["_meta"]  # off by default: hosts do not need them


def test_hits_convert_directly(demo_catalog):
    index = ToolIndex.build(demo_catalog)
    hits = index.search("send an email to a colleague", k=3)
    assert [h.to_openai() for h in hits] == [to_format(h.tool, "openai") for h in hits]
    assert [h.to_openai(api="responses") for h in hits] == [to_format(h.tool, "openai-responses") for h in hits]
    assert [h.to_anthropic() for h in hits] == [h.tool.to_anthropic() for h in hits]
    assert [h.to_mcp() for h in hits] == [h.tool.to_format("mcp") for h in hits]
    first = hits[0].to_openai()
    assert first["type"] == "function" and first["function"]["name"] == hits[0].name


def test_unknown_format_and_api_are_typed_errors(demo_catalog):
    tool = demo_catalog[0]
    with pytest.raises(FormatError, match="unknown tool format 'gemini'.*openai, openai-responses"):
        tool.to_format("gemini")
    with pytest.raises(FormatError, match="unknown OpenAI api 'completions'"):
        tool.to_openai(api="completions")
    with pytest.raises(ValueError):  # FormatError is a ValueError, as the gateway's callers expect
        to_format(tool, "xml")


def test_gateway_formats_still_exports_the_writers():
    from toolsift.gateway import formats

    for name in ("to_openai", "to_anthropic", "to_mcp", "to_format", "input_schema", "source_format", "FORMATS"):
        assert hasattr(formats, name)
    assert set(formats.FORMATS) <= set(WRITE_FORMATS)


def test_readme_openai_loop_runs_against_a_stub_client(demo_catalog):
    """The README's OpenAI loop, executed as written with a recording stand-in for the
    client (no network): the tools it passes are the hits' Chat Completions schemas."""
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"The OpenAI loop.*?```python\n(.*?)```", readme, re.S)
    assert block, "README.md must show the OpenAI loop"
    # The block imports the SDK; the stand-in below takes its place (the block's other
    # lines run as written; tests/test_doc_blocks.py runs it whole against a loopback server).
    code = block.group(1).replace("from openai import OpenAI\n", "")
    assert "index.search(user_message" in code and "OpenAI().chat.completions.create(" in code

    sent: dict = {}

    class OpenAI:
        def __init__(self):
            self.chat = self
            self.completions = self

        def create(self, **kwargs):
            sent.update(kwargs)
            return "reply"

    index = ToolIndex.build(demo_catalog)
    scope = {"index": index, "OpenAI": OpenAI}
    exec(compile(code, "README.md", "exec"), scope)
    hits = index.search(scope["user_message"], k=5, token_budget=2000, format="openai")
    assert scope["reply"] == "reply" and sent["tools"] == [h.to_openai() for h in hits] and hits
    for tool in sent["tools"]:
        assert tool["type"] == "function" and {"name", "parameters"} <= set(tool["function"])
