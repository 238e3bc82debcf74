"""The new version of an index's data after adding, removing or replacing tools, without
re-analysing the tools that stay: the body of :meth:`toolsift.ToolIndex.add_tools` and
its siblings, which build the new state from what this returns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..config import IndexConfig
from ..encoders.cache import EmbedCacheArg
from ..errors import SchemaError, ToolsiftError
from ..schema import Catalog, Tool
from .dense_field import DenseField
from .embed import update_dense
from .graph import ToolGraph
from .ivf import fields_with_ivf
from .query_table import QueryTable, build_query_table
from .state import DocumentTokens, IndexState
from .tooltable import edit_catalog

__all__ = ["UpdatedParts", "updated_parts"]


@dataclass(frozen=True)
class UpdatedParts:
    """What the updated index is built from (``ToolIndex._from_tokens``)."""

    catalog: Catalog
    tokens: DocumentTokens
    dense: dict[str, DenseField] | None
    graph: ToolGraph | None
    query_table: QueryTable | None


def updated_parts(state: IndexState, config: IndexConfig, *, add: Sequence[Tool], remove: Sequence[str],
                  replace: Sequence[Tool], check_encoder: Callable[[], None], encoder: Any,
                  embed_cache: EmbedCacheArg) -> UpdatedParts:
    """The parts of ``state`` after the edit; BM25 statistics stay exact (the result
    scores as a fresh build over the new catalogue would).

    Raises:
        KeyError: A removed or replaced id is not indexed.
        SchemaError: A new tool is invalid or its id is already indexed.
        ToolsiftError: Every tool would be removed.
    """
    st = state
    tokens = st.tokens if st.tokens is not None else DocumentTokens.from_fields(st, config)
    # Ids only: a stored catalogue is edited without decoding its tools.
    ids = st.catalog.ids
    pos = {tid: i for i, tid in enumerate(ids)}
    for tid in remove:
        if tid not in pos:
            raise KeyError(f"cannot remove {tid!r}: no such tool in the index")
    for t in replace:
        if not isinstance(t, Tool):
            raise SchemaError("replace", f"expected Tool, got {type(t).__name__}")
        if t.id not in pos:
            raise KeyError(f"cannot replace {t.id!r}: no such tool in the index (use add_tools)")
    gone = set(remove)
    seen = {tid for tid in ids if tid not in gone}
    for i, t in enumerate(add):
        if not isinstance(t, Tool):
            raise SchemaError(f"add[{i}]", f"expected Tool, got {type(t).__name__}")
        if t.id in seen:
            raise SchemaError(f"{st.catalog.name}[{len(seen)}] (id={t.id!r})", "duplicate tool id")
        seen.add(t.id)
    keep = [i for i, tid in enumerate(ids) if tid not in gone]
    if not keep and not add:
        raise ToolsiftError("cannot remove every tool: an index needs at least one")
    new_tok = tokens.select(keep)
    replaced = {t.id: t for t in replace}
    idx = [j for j, i in enumerate(keep) if ids[i] in replaced]
    swap = {j: replaced[ids[keep[j]]] for j in idx}
    if idx:
        fresh = DocumentTokens.analyse(Catalog(list(swap.values())), config, vocab=new_tok.vocab)
        new_tok = new_tok.overwrite(idx, fresh)
    catalog = edit_catalog(st.catalog, keep, swap, add)
    if add:
        fresh = DocumentTokens.analyse(Catalog(add), config, vocab=new_tok.vocab)
        new_tok = new_tok.extend(fresh)
    new_tok.prune_dead_terms()
    dense = qt = None
    if config.uses_dense:
        fresh_ids = {t.id for t in add} | set(replaced)
        if fresh_ids:
            check_encoder()
        dense = update_dense(st, catalog, config, fresh_ids, encoder=encoder,
                             embed_cache=embed_cache)
        # IVF lists follow the rows: kept tools keep theirs, fresh rows are assigned.
        old_pos = {tid: i for i, tid in enumerate(ids)}
        source = [-1 if tid in fresh_ids else old_pos[tid] for tid in catalog.ids]
        dense = fields_with_ivf(dense, config, previous=st.dense, source=source)
        # Refitted from the stored vectors, as a build does: same table either way.
        qt = build_query_table(catalog, config, dense)
    # With every tool's signature at hand (built here), re-derive the edges from
    # them; otherwise (loaded, or deferred) build lazily from the new catalogue:
    # both equal a fresh build, and an update never decodes the whole catalogue.
    graph = st.graph
    if graph is not None and graph.has_signatures:
        graph = graph.updated(st.catalog, keep, swap, add, config.analyzer)
    else:
        graph = None
    return UpdatedParts(catalog, new_tok, dense, graph, qt)
