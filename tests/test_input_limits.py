"""What a catalogue may contain is decided when a Tool is built (issue 13): anything
accepted there can be saved; the rest is a typed error, and one line from the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc

import pytest

from tests.test_gateway_server import _env
from toolsift.adapters import load_catalog
from toolsift.errors import CatalogFormatError, SchemaError
from toolsift import schema as ts_schema
from toolsift.schema import Parameter, Tool
from toolsift.toolindex import ToolIndex


def _nested(depth: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


def _mcp(description: str = "fetch a thing", schema: dict | None = None) -> dict:
    return {"tools": [{"name": "fetch", "description": description,
                       "inputSchema": schema or {"type": "object", "properties": {}}}]}


def test_lone_surrogate_is_refused_at_build_time_with_the_place_named():
    with pytest.raises(SchemaError, match=r"tool 'fetch'\.description.*surrogate"):
        Tool(id="fetch", name="fetch", description="bad \ud800 text")
    with pytest.raises(SchemaError, match="surrogate"):
        Tool(id="fetch", name="fetch", parameters=(Parameter("q", example={"k": "\udfff"}),))
    with pytest.raises(SchemaError, match="surrogate"):
        Tool(id="fetch", name="fetch", source={"name": "\ud83d"})
    with pytest.raises(SchemaError, match="JSON keys are strings"):
        Tool(id="fetch", name="fetch", source={"inputSchema": {("a", "b"): 1}})
    assert Tool(id="ok", name="ok", description="emoji \U0001F600 fine").description.endswith("fine")


def test_deep_nesting_is_refused_at_build_time_and_shallower_saves(tmp_path):
    with pytest.raises(SchemaError, match=f"nested more than {ts_schema.MAX_NESTING}"):
        Tool(id="deep", name="deep", source={"inputSchema": _nested(500)})
    levels = getattr(ts_schema, "MAX_NESTING", 100) // 2 - 2  # two containers a level
    ok = Tool(id="deep", name="deep", description="deep but fine", source={"inputSchema": _nested(levels)})
    index = ToolIndex.build([ok])
    loaded = ToolIndex.load(index.save(tmp_path / "idx"))
    assert loaded.catalog[0].source == ok.source


def _deep(levels: int) -> str:
    return json.dumps(_mcp(schema={"type": "object", "properties": {"x": "DEEP"}})).replace(
        '"DEEP"', '{"type": "object", "properties": {"x": ' * levels + '{"type": "string"}' + "}}" * levels)


@pytest.mark.parametrize("text", [json.dumps(_mcp(description="bad \ud800 text")), _deep(500), _deep(200)])
def test_cli_index_prints_one_line_and_exits_2(tmp_path, text):
    src = tmp_path / "tools.json"
    # json.dumps escapes the lone surrogate as \ud800: valid JSON text, a broken string.
    src.write_text(text, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "toolsift", "index", str(src), str(tmp_path / "idx"), "--quiet"],
                          capture_output=True, text=True, timeout=300, env=_env())
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("toolsift: error:"), proc.stderr
    assert not (tmp_path / "idx").exists()


# --------------------------------------------------------------------------- YAML
def _bomb() -> str:
    lines = ['openapi: "3.0.0"', "info: {title: bomb, version: '1'}", 'a: &a ["' + "x" * 60 + '"]']
    prev = "a"
    for name in "bcdefgh":
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
        prev = name
    # Where an adapter keeps it: the operation (and so the tool's source) holds the bomb.
    lines.append("paths: {/x: {get: {operationId: fetch_x, summary: fetch x, x-data: *h}}}")
    return "\n".join(lines) + "\n"


def test_yaml_alias_bomb_fails_fast(tmp_path):
    text = _bomb()
    assert len(text) < 2000  # expands to 9**7 * 60 characters (~290 M)
    f = tmp_path / "bomb.yaml"
    f.write_text(text, encoding="utf-8")
    # Refused before expanding: the loader's peak allocation stays far below the
    # expansion's (measured in bytes, not seconds, so a busy machine cannot fail it).
    tracemalloc.start()
    try:
        with pytest.raises(CatalogFormatError, match="alias"):
            load_catalog(f)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000  # the expansion is ~290 MB of text


def test_yaml_anchors_of_ordinary_size_still_work(tmp_path):
    f = tmp_path / "spec.yaml"
    f.write_text("""openapi: "3.0.0"
info: {title: pets, version: "1"}
components:
  parameters:
    limit: &limit {name: limit, in: query, schema: {type: integer}, description: page size}
paths:
  /pets:
    get: {operationId: listPets, summary: List pets, parameters: [*limit]}
  /cats:
    get: {operationId: listCats, summary: List cats, parameters: [*limit]}
""", encoding="utf-8")
    tools = load_catalog(f)
    assert sorted(t.name for t in tools) == ["listCats", "listPets"]
    assert all(any(p.name == "limit" for p in t.parameters) for t in tools)
