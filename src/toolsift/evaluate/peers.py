"""Other tool retrievers on PyPI, wrapped for side-by-side evaluation (the ``peers`` extra).

Each wrapper hands the peer the catalogue the way its README tells a user to: OpenAI-style
function schemas (:func:`toolsift.evaluate.cold.openai_tool`) through the peer's own
ingestion, and the raw request text; it returns tool ids, best first. All three run
offline with no model (BM25 only, no embedder, ratel's telemetry off unless configured):
checked by running ``toolsift eval`` on them inside a network namespace with no
interfaces (``unshare -n``).

==============  ========================================================================
``ratel``       ratel-ai's ``ToolRegistry`` (Rust BM25, model-free ``method="bm25"``):
                ``register(Tool(id, name, description, input_schema, {}))``, ``search``
``toolpicker``  ``ToolPicker(FunctionSchemaSource(schemas))`` with no embedder (its BM25
                stage only), ``select(query, k=...)``
``dehydrator``  ``dehydrator.ToolIndex`` (rank_bm25 BM25L over name, description and
                schema words) on Anthropic-style dicts, ``search(query)``
``langchain``   LangChain's ``BM25Retriever`` (langchain-community; rank_bm25 BM25Okapi
                over whitespace tokens, its default preprocessing) on one ``Document``
                per tool whose ``page_content`` is the tool's description, as LangGraph's
                many-tools guide indexes tools (there with a vector store), ``invoke``
``graphtoolcall`` graph-tool-call's ``ToolGraph``: ``add_tools(schemas)`` (dependency
                detection on, its default), ``retrieve(query, top_k=k)`` (its default
                ``mode="basic"``, no embedding, no LLM). Slow: ~2.5 s per query on
                UltraTool's 1,323 tools and ~7 s on APIGen's 3,605, so ``toolsift
                eval`` runs it only when asked (``--method peer-graphtoolcall``); see
                docs/graph.md for where it ran
==============  ========================================================================

Not wrapped: LangChain's embedding retrievers (a vector store over
MiniLM is what ``dense-fulldoc`` measures, without LangChain in between).
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..schema import Catalog
from .output import MethodUnavailable

__all__ = ["PEERS", "PeerUnavailable", "peer_versions"]

_PACKAGES = {"ratel": ("ratel_ai", "ratel-ai"), "toolpicker": ("toolpicker", "toolpicker"),
             "dehydrator": ("dehydrator", "dehydrator"),
             "langchain": ("langchain_community.retrievers", "langchain-community"),
             "graphtoolcall": ("graph_tool_call", "graph-tool-call")}


class PeerUnavailable(MethodUnavailable):
    """A peer retriever's package is not installed (``pip install 'toolsift[peers]'``)."""


def _import(peer: str):
    module, dist = _PACKAGES[peer]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise PeerUnavailable(f"peer-{peer} needs the {dist!r} package: pip install 'toolsift[peers]' "
                              f"({exc})") from None


def peer_versions() -> dict[str, str | None]:
    """Installed version of each peer's distribution (``None`` when missing)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for _, dist in _PACKAGES.values():
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = None
    return out


def _unique_names(schemas: Sequence[Mapping[str, Any]]) -> list[str]:
    """Tool names, made unique with ``_2``, ``_3``... where a catalogue repeats one
    (peers keyed by name reject duplicates; none of the shared sets has any)."""
    seen: dict[str, int] = {}
    out = []
    for s in schemas:
        name = s["function"]["name"]
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return out


def _ratel(catalog: Catalog, schemas: Sequence[Mapping[str, Any]], queries: Sequence[str], *, k: int
           ) -> tuple[list[list[str]], dict]:
    ratel = _import("ratel")
    registry = ratel.ToolRegistry(method="bm25")
    tools = [ratel.Tool(t.id, s["function"]["name"], s["function"].get("description", ""),
                        dict(s["function"]["parameters"]), {})
             for t, s in zip(catalog, schemas)]
    pending = registry.register(tools)
    # BM25 indexing is synchronous; the awaitable only drives dense preparation, a no-op
    # here, but ratel asks for it to be awaited.
    asyncio.run(_await(pending))
    ranked = [[h.tool_id for h in sorted(registry.search(q, k), key=lambda h: h.rank)] for q in queries]
    return ranked, {"peer": "ratel-ai", "method": "bm25"}


async def _await(pending) -> None:
    await pending


def _toolpicker(catalog: Catalog, schemas: Sequence[Mapping[str, Any]], queries: Sequence[str], *, k: int
                ) -> tuple[list[list[str]], dict]:
    tp = _import("toolpicker")
    names = _unique_names(schemas)
    source = tp.FunctionSchemaSource([{**s, "function": {**s["function"], "name": n}}
                                      for s, n in zip(schemas, names)])
    picker = tp.ToolPicker(source)
    to_id = dict(zip(names, (t.id for t in catalog)))
    ranked = [[to_id[t.id] for t in picker.select(q, k=k)] for q in queries]
    return ranked, {"peer": "toolpicker", "retrievers": "bm25 (no embedder)"}


def _dehydrator(catalog: Catalog, schemas: Sequence[Mapping[str, Any]], queries: Sequence[str], *, k: int
                ) -> tuple[list[list[str]], dict]:
    dh = _import("dehydrator")
    names = _unique_names(schemas)
    tools = [{"name": n, "description": s["function"].get("description", ""),
              "input_schema": dict(s["function"]["parameters"])} for s, n in zip(schemas, names)]
    index = dh.ToolIndex(tools, top_k=k)
    to_id = dict(zip(names, (t.id for t in catalog)))
    ranked = [[to_id[n] for n in index.search(q)] for q in queries]
    return ranked, {"peer": "dehydrator", "method": "BM25L (rank_bm25), no reranker"}


def _langchain(catalog: Catalog, schemas: Sequence[Mapping[str, Any]], queries: Sequence[str], *, k: int
               ) -> tuple[list[list[str]], dict]:
    retrievers = _import("langchain")
    from langchain_core.documents import Document

    docs = [Document(page_content=s["function"].get("description", "") or s["function"]["name"],
                     metadata={"tool_id": t.id}) for t, s in zip(catalog, schemas)]
    retriever = retrievers.BM25Retriever.from_documents(docs, k=k)
    ranked = [[d.metadata["tool_id"] for d in retriever.invoke(q)] for q in queries]
    return ranked, {"peer": "langchain-community", "method": "BM25Retriever (rank_bm25 BM25Okapi, "
                    "whitespace tokens) over tool descriptions"}


def _graphtoolcall(catalog: Catalog, schemas: Sequence[Mapping[str, Any]], queries: Sequence[str], *, k: int
                   ) -> tuple[list[list[str]], dict]:
    import warnings

    gtc = _import("graphtoolcall")
    names = _unique_names(schemas)
    graph = gtc.ToolGraph()
    graph.add_tools([{**s, "function": {**s["function"], "name": n}} for s, n in zip(schemas, names)])
    to_id = dict(zip(names, (t.id for t in catalog)))
    ranked = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no embedding index": intended, it runs model-free here
        for q in queries:
            got = [to_id[t.name] for t in graph.retrieve(q, top_k=k) if t.name in to_id]
            ranked.append(list(dict.fromkeys(got)))
    return ranked, {"peer": "graph-tool-call", "method": "retrieve(mode='basic'), dependency detection on, "
                    "no embedding"}


#: ``{peer: wrapper(catalog, openai_schemas, queries, k=...) -> (ranked ids, note)}``.
PEERS: dict[str, Callable[..., tuple[list[list[str]], dict]]] = {
    "ratel": _ratel,
    "toolpicker": _toolpicker,
    "dehydrator": _dehydrator,
    "langchain": _langchain,
    "graphtoolcall": _graphtoolcall,
}
