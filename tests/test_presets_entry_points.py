"""One definition of defaults: the CLI, the library, the gateway and the integrations
build the same index from the same catalogue (toolsift.presets), so they give the same
hits, ids and scores alike."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import pytest

from toolsift import ToolIndex
from toolsift.adapters import load_catalog
from toolsift.cli import main
from toolsift.presets import PRESETS, default_preset, preset_config

from .conftest import dataset

QUERIES = (
    "send an email",
    "get the weather forecast for tomorrow",
    "schedule a doctor appointment",
    "check my account balance",
    "delete the alarm I set for 7am",
)
STRUCTURED = {
    "tool_needs": [{"user_intent": "add an alarm at 7am", "tool_description": "Add an alarm clock at a time",
                    "expected_response": "status"}],
    "extracted_arguments": {"time": "alarm time"},
}
CATALOG = "dataset/from_toolret/apibank/tools.json"


def _cli(*argv: str) -> str:
    buf = io.StringIO()
    assert main(list(argv), out=buf) == 0
    return buf.getvalue()


def _cli_hits(index_dir, query, *, structured: bool = False) -> list[tuple[str, float]]:
    args = ["search", str(index_dir), json.dumps(query) if structured else query, "--json", "-k", "10"]
    doc = json.loads(_cli(*args, *(["--structured"] if structured else [])))
    return [(h["id"], h["score"]) for h in doc["hits"]]


def _lib_hits(index, query) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in index.search(query, k=10)]


@pytest.fixture(scope="module")
def catalog_path():
    return dataset("mftr-apibank") / CATALOG


@pytest.mark.parametrize("preset", [None, *PRESETS])
def test_cli_and_library_give_identical_hits(tmp_path, catalog_path, preset):
    argv = ["index", str(catalog_path), str(tmp_path / "idx"), "--quiet"]
    if preset is not None:
        argv += ["--preset", preset]
    _cli(*argv)
    lib = ToolIndex.build(load_catalog(catalog_path), preset=preset)
    saved = ToolIndex.load(tmp_path / "idx")
    assert saved.config == lib.config == preset_config(preset)
    for q in QUERIES:
        hits = _cli_hits(tmp_path / "idx", q)
        assert len(hits) == 10
        assert hits == _lib_hits(lib, q), q  # ids and scores, exactly
    assert _cli_hits(tmp_path / "idx", STRUCTURED, structured=True) == _lib_hits(lib, STRUCTURED)


def test_cli_flags_override_one_setting_of_the_preset(tmp_path, catalog_path):
    _cli("index", str(catalog_path), str(tmp_path / "idx"), "--quiet", "--preset", "bm25",
         "--k1", "0.9", "--no-stem", "--threads", "2")
    base = preset_config("bm25")
    want = replace(base, bm25=replace(base.bm25, k1=0.9), analyzer=replace(base.analyzer, stemmer=None), threads=2)
    got = ToolIndex.load(tmp_path / "idx").config
    assert got == want
    assert got.bm25.b == base.bm25.b and got.analyzer.stopwords == base.analyzer.stopwords


def test_build_without_arguments_is_the_default_preset(demo_catalog):
    assert ToolIndex.build(demo_catalog).config == preset_config(default_preset())


def test_integrations_and_gateway_build_the_default_preset(demo_catalog):
    from toolsift.integrations._toolset import as_index

    assert as_index(list(demo_catalog)).config == preset_config(default_preset())
    assert as_index(list(demo_catalog), preset="bm25").config == preset_config("bm25")


def test_serve_config_preset_key():
    from toolsift.errors import ConfigError
    from toolsift.gateway.upstream import ServeConfig

    assert ServeConfig.from_dict({"preset": "bm25"}).preset == "bm25"
    assert ServeConfig.from_dict({}).preset is None
    with pytest.raises(ConfigError, match="preset"):
        ServeConfig.from_dict({"preset": "fast"})


def test_gateway_index_is_the_preset_and_is_saved_for_learn(tmp_path, demo_catalog):
    import anyio

    from toolsift.gateway.server import open_runtime
    from toolsift.gateway.upstream import ServeConfig

    (tmp_path / "gw.json").write_text(json.dumps({"preset": "bm25", "save_index": "gw.idx"}))
    config = ServeConfig.load(tmp_path / "gw.json")
    assert config.save_index == str(tmp_path / "gw.idx")  # relative to the config file

    async def serve_once():
        async with open_runtime(config, local_tools=list(demo_catalog)) as rt:
            return rt.gateway.index

    served = anyio.run(serve_once)
    lib = ToolIndex.build(demo_catalog, preset="bm25")
    saved = ToolIndex.load(tmp_path / "gw.idx")
    assert served.config == saved.config == lib.config
    for q in QUERIES:
        assert _lib_hits(served, q) == _lib_hits(saved, q) == _lib_hits(lib, q)


def test_every_integration_takes_the_preset(demo_catalog):
    from openai import OpenAI

    from toolsift.errors import ConfigError
    from toolsift.integrations.langchain import ToolsiftRetriever
    from toolsift.integrations.langgraph import make_retrieve_tools
    from toolsift.integrations.llama_index import ToolsiftNodeRetriever
    from toolsift.integrations.openai import wrap

    tools = list(demo_catalog)
    want = preset_config("bm25")
    assert wrap(OpenAI(api_key="x", base_url="http://127.0.0.1:9"), tools, preset="bm25").search.index.config == want
    assert ToolsiftRetriever.from_tools(tools, preset="bm25").index.config == want
    assert ToolsiftNodeRetriever(tools, preset="bm25").index.config == want
    retrieve, _ = make_retrieve_tools(tools, preset="bm25", k=3)
    assert retrieve("send an email") == [h.id for h in ToolIndex.build(tools, preset="bm25").search("send an email", k=3)
                                         if h.matched]
    with pytest.raises(ConfigError, match="preset"):
        ToolsiftRetriever.from_tools(ToolIndex.build(tools), preset="hybrid")
