"""LlamaIndex retrievers over a tool index (extra ``llama-index``; needs only ``llama-index-core``).

* :class:`ToolsiftNodeRetriever` is a ``llama_index.core.retrievers.BaseRetriever``:
  ``retrieve(query)`` returns one ``NodeWithScore`` per tool found (a ``TextNode`` whose
  id is the tool id, text ``"name: description"``, metadata ``name``, ``tool_id``,
  ``rank``, ``tags`` and ``openai_tool``).
* :func:`tool_retriever` wraps LlamaIndex tools (``FunctionTool`` ...) in an
  ``ObjectRetriever`` whose ``retrieve(query)`` returns the tool objects themselves:
  what LlamaIndex agents take as ``tool_retriever=``::

      from toolsift.integrations.llama_index import tool_retriever

      retriever = tool_retriever(all_tools, k=3)
      agent = FunctionAgent(tool_retriever=retriever, llm=llm)
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from ..errors import SchemaError, ToolsiftError
from ..gateway.formats import to_openai
from ._toolset import ToolsSource, as_index

try:
    from llama_index.core.objects import ObjectRetriever, SimpleToolNodeMapping
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ToolsiftError("toolsift.integrations.llama_index needs llama-index-core: "
                        "pip install 'toolsift[llama-index]'") from exc

__all__ = ["ToolsiftNodeRetriever", "tool_retriever"]


class ToolsiftNodeRetriever(BaseRetriever):
    """LlamaIndex retriever returning the tools a toolsift index ranks best, as scored nodes.

    Args:
        tools: An index, or anything to build one from (any catalogue toolsift reads).
        k: Nodes returned at most.
        only_matched: Drop tools no field matched.
        preset: Index configuration when ``tools`` is not an index yet (:mod:`toolsift.presets`).
        complete: Return tool sets (``ToolIndex.search(complete=True)``).
        **kwargs: Passed to LlamaIndex's ``BaseRetriever`` (``callback_manager`` ...).

    Raises:
        QueryError: ``k`` is not an integer >= 1 (a SchemaError too).
    """

    def __init__(self, tools: ToolsSource, *, k: int = 5, only_matched: bool = True, preset: str | None = None,
                 complete: bool = False,
                 **kwargs: Any) -> None:
        from ..search.query import check_k

        check_k(k)
        self.index = as_index(tools, preset=preset)
        self.k = k
        self.only_matched = only_matched
        self.complete = complete
        super().__init__(**kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        out = []
        for hit in self.index.search(query_bundle.query_str, k=self.k, complete=self.complete):
            if not (hit.matched or not self.only_matched):
                continue
            tool = hit.tool
            node = TextNode(
                id_=tool.id,
                text=f"{tool.name}: {tool.description}" if tool.description else tool.name,
                metadata={"name": tool.name, "tool_id": tool.id, "rank": hit.rank, "tags": list(tool.tags),
                          "openai_tool": to_openai(tool)},
                # The schema is for the caller; keep it out of what an LLM or embedder reads.
                excluded_llm_metadata_keys=["openai_tool", "tool_id", "rank"],
                excluded_embed_metadata_keys=["openai_tool", "tool_id", "rank"],
            )
            out.append(NodeWithScore(node=node, score=float(hit.score)))
        return out

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._retrieve, query_bundle)


def tool_retriever(tools: Sequence[Any], *, k: int = 5, only_matched: bool = True,
                   preset: str | None = None, complete: bool = False) -> ObjectRetriever:
    """An ``ObjectRetriever`` returning LlamaIndex tool objects, ranked by toolsift.

    Args:
        tools: LlamaIndex tools (anything with ``.metadata``: ``FunctionTool``,
            ``QueryEngineTool`` ...); names must be unique.
        k: Tools returned at most.
        only_matched: Drop tools no field matched.
        preset: Index configuration (:mod:`toolsift.presets`; default: the library's default).
        complete: Return tool sets (``ToolIndex.search(complete=True)``).

    Raises:
        SchemaError: A tool has no metadata, or two tools share a name.
    """
    payload = []
    for i, tool in enumerate(tools):
        meta = getattr(tool, "metadata", None)
        if meta is None or not hasattr(meta, "to_openai_tool"):
            raise SchemaError(f"tools[{i}]",
                              f"expected a LlamaIndex tool with .metadata, got {type(tool).__name__}")
        # ToolMetadata writes the OpenAI function form, which toolsift reads with its schema.
        payload.append(meta.to_openai_tool(skip_length_check=True))
    names = [p["function"]["name"] for p in payload]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise SchemaError("tools", f"duplicate tool name(s) {', '.join(map(repr, dups))}")
    retriever = ToolsiftNodeRetriever(payload, k=k, only_matched=only_matched, preset=preset, complete=complete)
    mapping = SimpleToolNodeMapping.from_objects(list(tools))
    return ObjectRetriever(retriever=retriever, object_node_mapping=mapping)
