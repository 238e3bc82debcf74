"""LlamaIndex retrievers over toolsift, run through the real ``llama-index-core``."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.objects import ObjectRetriever
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.tools import FunctionTool

from toolsift import SchemaError, ToolIndex
from toolsift.adapters import demo_catalog_path, load_catalog
from toolsift.gateway.formats import to_openai
from toolsift.integrations.llama_index import ToolsiftNodeRetriever, tool_retriever

QUERY = "what is the weather forecast for Paris tomorrow"


@pytest.fixture(scope="module")
def index():
    return ToolIndex.build(load_catalog(demo_catalog_path()))


def test_node_retriever_returns_scored_tool_nodes(index):
    retriever = ToolsiftNodeRetriever(index, k=4)
    assert isinstance(retriever, BaseRetriever)
    nodes = retriever.retrieve(QUERY)
    hits = [h for h in index.search(QUERY, k=4) if h.matched]
    assert all(isinstance(n, NodeWithScore) for n in nodes)
    assert [n.node.node_id for n in nodes] == [h.id for h in hits]
    assert [n.score for n in nodes] == pytest.approx([h.score for h in hits])
    top = nodes[0].node
    assert top.metadata["name"] == hits[0].name and top.metadata["openai_tool"] == to_openai(hits[0].tool)
    assert "openai_tool" not in top.get_content(metadata_mode="llm")
    assert [n.node.node_id for n in asyncio.run(retriever.aretrieve(QUERY))] == [h.id for h in hits]
    assert [n.node.node_id for n in retriever.retrieve(QueryBundle(QUERY))] == [h.id for h in hits]
    with pytest.raises(SchemaError, match="k"):
        ToolsiftNodeRetriever(index, k=0)


def _tools():
    def get_weather_forecast(city: str, days: int) -> str:
        """Weather forecast for a city for the next days: temperature, rain and wind."""
        return "sunny"

    def send_email(to: str, subject: str, body: str) -> str:
        """Send an email message to a recipient."""
        return "sent"

    def lock_door(door: str) -> str:
        """Lock a smart door lock in the home."""
        return "locked"

    return [FunctionTool.from_defaults(fn) for fn in (get_weather_forecast, send_email, lock_door)]


def test_object_retriever_returns_the_tool_objects():
    tools = _tools()
    retriever = tool_retriever(tools, k=2)
    assert isinstance(retriever, ObjectRetriever)
    found = retriever.retrieve(QUERY)
    assert found[0] is tools[0]
    assert all(any(f is t for t in tools) for f in found)
    assert asyncio.run(retriever.aretrieve("lock the front door"))[0] is tools[2]
    # The found tool still runs as the LlamaIndex tool it is.
    assert found[0].call(city="Paris", days=1).content == "sunny"


def test_object_retriever_rejects_bad_tools():
    tools = _tools()
    with pytest.raises(SchemaError, match="duplicate"):
        tool_retriever([tools[0], tools[0]])
    with pytest.raises(SchemaError, match=r"tools\[1\]"):
        tool_retriever([tools[0], object()])
