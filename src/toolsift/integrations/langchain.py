"""A LangChain retriever over a tool index (extra ``langchain``; needs only ``langchain-core``).

:class:`ToolsiftRetriever` is a ``langchain_core.retrievers.BaseRetriever``: it runs
anywhere LangChain takes a retriever (``invoke``, ``ainvoke``, ``batch``, LCEL chains)
and returns one ``Document`` per tool found::

    from toolsift.integrations.langchain import ToolsiftRetriever

    retriever = ToolsiftRetriever.from_tools(my_langchain_tools, k=4)
    docs = retriever.invoke("email the report to my manager")
    [d.metadata["name"] for d in docs]

Each document's ``page_content`` is ``"name: description"``, its ``id`` the tool id, and
its ``metadata`` holds ``tool_id``, ``name``, ``score``, ``rank``, ``tags`` and the
tool's schema as an OpenAI function tool (``openai_tool``), ready for ``bind_tools``.

This module *writes* LangChain objects from an index; :mod:`toolsift.adapters.langchain`
*reads* LangChain tools into toolsift tools.
"""

from __future__ import annotations

from typing import Any

from ..errors import ToolsiftError
from ..gateway.formats import to_openai
from ..search import Hit
from ._toolset import ToolsSource, as_index

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ToolsiftError("toolsift.integrations.langchain needs langchain-core: "
                        "pip install 'toolsift[langchain]'") from exc

__all__ = ["ToolsiftRetriever", "hit_to_document"]


def hit_to_document(hit: Hit) -> Document:
    """One search hit as a LangChain ``Document`` (see the module docs for its fields)."""
    tool = hit.tool
    text = f"{tool.name}: {tool.description}" if tool.description else tool.name
    return Document(id=tool.id, page_content=text, metadata={
        "tool_id": tool.id, "name": tool.name, "score": float(hit.score), "rank": hit.rank,
        "tags": list(tool.tags), "openai_tool": to_openai(tool),
    })


class ToolsiftRetriever(BaseRetriever):
    """LangChain retriever that returns the tools a toolsift index ranks best for a query.

    Attributes:
        index: The :class:`~toolsift.ToolIndex` searched.
        k: Documents returned at most.
        only_matched: Drop tools no field matched (``search`` fills its tail with them).
        complete: Return a tool set: add the tools that produce the found ones' missing
            inputs (``ToolIndex.search(complete=True)``).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Any
    k: int = 5  # checked in __init__ by the one k check
    only_matched: bool = True
    complete: bool = False

    @classmethod
    def from_tools(cls, tools: ToolsSource, *, preset: str | None = None, **kwargs: Any) -> ToolsiftRetriever:
        """Build the index from ``tools`` (LangChain tools, any catalogue toolsift reads, or an index)
        with ``preset`` (:mod:`toolsift.presets`; default: the library's default)."""
        return cls(index=as_index(tools, preset=preset), **kwargs)

    def __init__(self, **kwargs: Any) -> None:
        # The one k check (toolsift.search.query.check_k: QueryError), as everywhere else.
        from ..search.query import check_k

        check_k(kwargs.get("k", 5))
        super().__init__(**kwargs)

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        hits = self.index.search(query, k=self.k, complete=self.complete)
        return [hit_to_document(h) for h in hits if h.matched or not self.only_matched]
