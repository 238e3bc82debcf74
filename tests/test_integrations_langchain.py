"""LangChain retriever and langgraph-bigtool retrieval, run through the real libraries."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import StructuredTool

from toolsift import SchemaError
from toolsift.gateway.formats import input_schema, to_openai
from toolsift.integrations.langchain import ToolsiftRetriever
from toolsift.integrations.langgraph import make_retrieve_tools

QUERY = "send an email to my manager"


@pytest.fixture(scope="module")
def lc_tools(demo_catalog):
    """The demo catalogue as runnable LangChain tools (JSON Schema args)."""
    def runner(name):
        return lambda **kwargs: f"{name} ran with {sorted(kwargs)}"
    return [StructuredTool.from_function(func=runner(t.name), name=t.name, description=t.description,
                                         args_schema=input_schema(t)) for t in demo_catalog]


def test_retriever_returns_ranked_tool_documents(demo_index):
    retriever = ToolsiftRetriever(index=demo_index, k=4)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke(QUERY)
    hits = [h for h in demo_index.search(QUERY, k=4) if h.matched]
    assert [d.metadata["name"] for d in docs] == [h.name for h in hits]
    assert [d.metadata["score"] for d in docs] == pytest.approx([h.score for h in hits])
    assert [d.metadata["rank"] for d in docs] == [h.rank for h in hits]
    first = docs[0]
    assert isinstance(first, Document) and first.id == hits[0].id
    assert first.page_content.startswith(hits[0].name + ": ")
    assert first.metadata["openai_tool"] == to_openai(hits[0].tool)
    # Async, batch and LCEL go through the same method.
    assert asyncio.run(retriever.ainvoke(QUERY)) == docs
    assert retriever.batch([QUERY, "lock the front door"])[0] == docs
    chain = retriever | RunnableLambda(lambda ds: [d.metadata["name"] for d in ds])
    assert chain.invoke(QUERY) == [h.name for h in hits]


@pytest.mark.parametrize("which", ["demo_index", "demo_bm25_index"])
def test_only_matched(which, request):
    index = request.getfixturevalue(which)
    query = "zzqx email"
    matched = [h for h in index.search(query, k=60) if h.matched]
    # BM25 matches the tools that share "email"; the hybrid default adds only dense
    # candidates whose cosine beats their field's null floor (search/evidence.py).
    assert 0 < len(matched) < 60
    assert len(ToolsiftRetriever(index=index, k=60).invoke(query)) == len(matched)
    assert len(ToolsiftRetriever(index=index, k=60, only_matched=False).invoke(query)) == 60


def test_retriever_from_langchain_tools(lc_tools):
    retriever = ToolsiftRetriever.from_tools(lc_tools, k=3)
    names = [d.metadata["name"] for d in retriever.invoke("what is the weather forecast")]
    assert names and names[0] == "get_weather_forecast"


def test_bigtool_contract(demo_index, lc_tools):
    registry = {t.name: t for t in lc_tools}
    retrieve, aretrieve = make_retrieve_tools(lc_tools, k=3, registry=registry)
    # Built from LangChain tools, so compare with an demo_index built the same way.
    expected = [h.id for h in ToolsiftRetriever.from_tools(lc_tools).index.search(QUERY, k=3) if h.matched]
    assert retrieve(QUERY) == expected and asyncio.run(aretrieve(QUERY)) == expected
    assert retrieve.__name__ == "retrieve_tools"
    # What create_agent builds from it: a tool the model calls with one string.
    tool = StructuredTool.from_function(func=retrieve, coroutine=aretrieve)
    assert tool.name == "retrieve_tools" and list(tool.args) == ["query"]
    assert tool.invoke({"query": QUERY}) == expected
    with pytest.raises(SchemaError, match="registry"):
        make_retrieve_tools(demo_index, registry={"send_email": None})
    with pytest.raises(SchemaError, match="k"):
        make_retrieve_tools(demo_index, k=0)


def test_bigtool_agent_end_to_end(lc_tools):
    """A langgraph-bigtool agent with toolsift retrieval and a scripted chat model."""
    import langgraph_bigtool as bigtool
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langgraph.store.memory import InMemoryStore

    bound: list[list[str]] = []

    class ScriptedModel(GenericFakeChatModel):
        def bind_tools(self, tools, **kwargs):
            bound.append([convert_to_openai_tool(t)["function"]["name"] for t in tools])
            return self

    # Only the retrieval path: langgraph-bigtool 0.0.3 calls ToolNode.inject_tool_args,
    # which langgraph-prebuilt 1.x made private, so its own step that runs a found tool
    # fails whatever retrieval it uses (an upstream incompatibility, not toolsift's).
    model = ScriptedModel(messages=iter([
        AIMessage("", tool_calls=[{"name": "retrieve_tools", "args": {"query": QUERY}, "id": "r1"}]),
        AIMessage("I can use send_email now."),
    ]))
    registry = {t.name: t for t in lc_tools}
    retrieve, aretrieve = make_retrieve_tools(lc_tools, k=3, registry=registry)
    agent = bigtool.create_agent(model, registry, retrieve_tools_function=retrieve,
                                 retrieve_tools_coroutine=aretrieve).compile(store=InMemoryStore())
    state = agent.invoke({"messages": [("user", "Email the Q3 report to my boss")]})

    found = retrieve(QUERY)
    assert "send_email" in found
    assert state["selected_tool_ids"] == found
    # The model first sees only the retrieval tool, then also the tools toolsift found.
    assert bound == [["retrieve_tools"], ["retrieve_tools", *found]]
    (tool_message,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert tool_message.content == f"Available tools: {found}"
    assert state["messages"][-1].content == "I can use send_email now."

    # The async graph path uses the coroutine.
    bound.clear()
    model.messages = iter([
        AIMessage("", tool_calls=[{"name": "retrieve_tools", "args": {"query": "lock the door"},
                                   "id": "r2"}]),
        AIMessage("ok"),
    ])
    state = asyncio.run(agent.ainvoke({"messages": [("user", "lock up")]}))
    assert state["selected_tool_ids"] == retrieve("lock the door")
