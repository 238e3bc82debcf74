"""toolsift as the tool retrieval of a ``langgraph-bigtool`` agent (extra ``langgraph``).

``langgraph_bigtool.create_agent(llm, tool_registry, retrieve_tools_function=...,
retrieve_tools_coroutine=...)`` takes a function that maps the model's query to a list
of tool ids, the keys of ``tool_registry``; its name, docstring and type hints become
the retrieval tool the model sees. :func:`make_retrieve_tools` returns that function and
its coroutine twin, searching a toolsift index instead of a LangGraph store (no
embeddings, no store needed)::

    from langgraph_bigtool import create_agent
    from toolsift.integrations.langgraph import make_retrieve_tools

    registry = {tool.name: tool for tool in all_tools}          # LangChain tools
    retrieve, aretrieve = make_retrieve_tools(all_tools, k=3, registry=registry)
    agent = create_agent(llm, registry, retrieve_tools_function=retrieve,
                         retrieve_tools_coroutine=aretrieve).compile()

The ids returned are toolsift tool ids. Tools read from LangChain, OpenAI, Anthropic or
MCP definitions have their name as id, so a registry keyed by tool name fits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..errors import SchemaError
from ._toolset import ToolsSource, as_index

__all__ = ["make_retrieve_tools"]


def make_retrieve_tools(tools: ToolsSource, *, k: int = 5, registry: Mapping[str, Any] | None = None,
                        only_matched: bool = True, preset: str | None = None, complete: bool = False
                        ) -> tuple[Callable[[str], list[str]], Callable[[str], Awaitable[list[str]]]]:
    """The ``retrieve_tools`` function and coroutine for ``langgraph_bigtool.create_agent``.

    Args:
        tools: An index, or anything to build one from (LangChain tools, any catalogue).
        k: Tool ids returned per query at most.
        registry: The agent's ``tool_registry``; when given, every indexed tool id must
            be one of its keys, so the agent can never be handed an id it cannot bind.
        only_matched: Drop tools no field matched.
        preset: Index configuration when ``tools`` is not an index yet (:mod:`toolsift.presets`).
        complete: Return tool sets (``ToolIndex.search(complete=True)``): the producers
            of the found tools' missing inputs come along.

    Returns:
        ``(retrieve_tools, aretrieve_tools)``, both ``(query: str) -> list[str]``.

    Raises:
        SchemaError: An indexed tool id is missing from ``registry``.
        QueryError: ``k`` is not an integer >= 1 (a SchemaError too).
    """
    from ..search.query import check_k

    check_k(k)
    index = as_index(tools, preset=preset)
    if registry is not None:
        missing = [tid for tid in index.catalog.ids if tid not in registry]
        if missing:
            raise SchemaError("registry", f"{len(missing)} indexed tool id(s) are not registry keys, "
                              f"e.g. {', '.join(map(repr, missing[:5]))}")

    def retrieve_tools(query: str) -> list[str]:
        """Find the tools that can do a task. Describe the action you need in plain words."""
        return [h.id for h in index.search(query, k=k, complete=complete) if h.matched or not only_matched]

    async def aretrieve_tools(query: str) -> list[str]:
        """Find the tools that can do a task. Describe the action you need in plain words."""
        # A search is sub-millisecond but CPU-bound: run it off the event loop thread.
        return await asyncio.to_thread(retrieve_tools, query)

    return retrieve_tools, aretrieve_tools
