"""``ToolIndex``: build, search, save and load a multi-field tool index.

A thin front: the data of one index version is an :class:`~toolsift.index.state.IndexState`
(swapped whole on update), a query walks :mod:`toolsift.search` (plan -> candidates ->
score -> hits), and persistence lives in :mod:`toolsift.index.persist`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from . import search as _search
from .analyze import Vocabulary
from .config import IndexConfig
from .encoders.cache import EmbedCacheArg
from .encoders.fingerprint import encoder_fingerprint
from .errors import (
    ConfigError,
    EncoderMismatchError,
    IndexFormatError,
    QueryError,
    ToolsiftError,
)
from .index.dense_field import DenseField
from .index.embed import (
    embed_fields,
    encoder_record,
    get_document_encoder,
    get_encoder,
)
from .index.field_index import FieldIndex
from .index.gcpause import gc_paused
from .index.graph import Dependency, ToolGraph
from .index.ivf import fields_with_ivf
from .index.loading import UnrecordedEncoderWarning, open_index
from .index.persist import save_index
from .index.query_table import QueryTable, build_query_table
from .index.state import DocumentTokens, IndexState
from .index.updates import updated_parts
from .kernels.launch import using_threads
from .kernels.params import ScoringParams
from .schema import FIELDS, Catalog, Query, Tool
from .scores import FieldScores
from .search import Hit, QueryLike, as_query, check_explain, check_k
from .search.evidence import floor_record
from .search.request import complete_ranking, graph_of, search_many, search_one

__all__ = ["Dependency", "Hit", "QueryLike", "ToolIndex", "UnrecordedEncoderWarning", "get_encoder"]


# The schema format a token budget counts when none is named (search, search_batch).
_DEFAULT_FORMAT = "openai"


class ToolIndex:
    """A searchable multi-field index over a tool catalogue.

    Build one with :meth:`build`, or open a saved one with :meth:`load`.

    Example:
        >>> index = ToolIndex.build(load_catalog("tools.json"))      # doctest: +SKIP
        >>> for hit in index.search("email the report to my boss", k=3):  # doctest: +SKIP
        ...     print(hit.name, round(hit.score, 3))
    """

    def __init__(self, catalog: Catalog, config: IndexConfig, vocab: Vocabulary,
                 fields: dict[str, FieldIndex], *, tokens: DocumentTokens | None = None,
                 dense: dict[str, DenseField] | None = None, graph: ToolGraph | None = None,
                 query_table: QueryTable | None = None, encoder_info: dict[str, Any] | None = None,
                 doc_encoder: Any = None, embed_cache: EmbedCacheArg = None,
                 null_floors: dict[str, Any] | None = None) -> None:
        self._config = config
        # The encoder that made the dense vectors ({"fingerprint", "dim"}), recorded on save;
        # the encoder object updates use (None: get_encoder); the embedding cache they use.
        self._encoder_info = encoder_info
        self._doc_encoder = doc_encoder
        self._embed_cache = embed_cache
        missing = [f for f in FIELDS if config.retriever(f) != "bm25" and f not in (dense or {})]
        if missing:
            raise IndexFormatError(f"no dense embeddings for field(s) {', '.join(missing)} "
                                   "although the config asks for dense or hybrid retrieval")
        self._state = IndexState(catalog, vocab, fields, tokens, dense)
        # The tool graph travels with the state it was built for (swapped with it).
        self._state.graph = graph
        # The static query table refitted on this catalogue's documents (docs/dense.md).
        self._state.query_table = query_table
        self._state.null_floors = null_floors  # recorded by a save (toolsift.search.evidence)
        # Writers (add/remove/replace) are serialised; readers never lock: each search
        # takes one reference to the current immutable state and uses only that.
        self._write_lock = threading.Lock()

    # ------------------------------------------------------------------ build
    @classmethod
    def build(cls, catalog: Catalog | Iterable[Tool | Mapping] | str | os.PathLike, *, preset: str | None = None,
              config: IndexConfig | None = None, progress: bool = False, graph: bool = False,
              embed_cache: EmbedCacheArg = None, encoder: Any = None) -> ToolIndex:
        """Index ``catalog``.

        Args:
            catalog: A :class:`Catalog`, an iterable of :class:`Tool`, or anything
                :func:`toolsift.adapters.as_catalog` reads: raw tool dicts (OpenAI,
                Anthropic, MCP ...), a catalogue path or payload, LangChain-style tool
                objects; the same sources the integrations take.
            preset: A named configuration (:data:`toolsift.presets.PRESETS`: ``"bm25"``,
                ``"hybrid"``); ``None`` with no ``config`` uses
                :func:`toolsift.presets.default_preset`.
            config: A full index configuration instead of a preset.
            progress: Show progress bars (with ETA) for steps that outlast a second:
                analysis and, for dense fields, embedding. Off by default.
            embed_cache: Embedding cache for dense fields: ``None`` (default) uses the
                user cache folder unless ``TOOLSIFT_EMBED_CACHE=0`` (the folder is
                ``TOOLSIFT_EMBED_CACHE_DIR`` when set); a folder uses that one; ``False``
                none (:func:`toolsift.encoders.cache.resolve_store`). Texts found there are
                not encoded again; updates of this index use the same cache.
            encoder: The document encoder, instead of the config's (e.g.
                :class:`toolsift.distributed.RayEncoder`, the same model run on Ray
                Data). It must be the same model as the config's: its ``fingerprint``
                is checked against that encoder's.
            graph: Build the tool graph now (:mod:`toolsift.index.graph`, ~0.1 ms a
                tool). ``False`` (default) builds it on the first :meth:`dependencies`
                or ``search(..., complete=True)``; :meth:`save` writes it once built. A
                build that does not need the graph does not pay for it (at 200k tools it
                had been 60% of the build time: docs/performance.md).

        Raises:
            SchemaError: Duplicate ids or invalid tools in ``catalog``.
            ConfigError: Both ``preset`` and ``config`` given, or an unknown preset.
            ToolsiftError: The catalogue is empty.
            EncoderMismatchError: ``encoder`` is not the config's model.
        """
        if preset is not None and config is not None:
            raise ConfigError("ToolIndex.build: pass preset= or config=, not both")
        if not isinstance(catalog, Catalog):
            from .adapters import as_catalog

            catalog = as_catalog(catalog)
        if len(catalog) == 0:
            raise ToolsiftError("cannot index an empty catalogue")
        from .presets import preset_config, sized_for

        # A config the user passes gets the same size rule as a preset's (config.static_documents_from).
        config = sized_for(preset_config(preset) if config is None else config, len(catalog), encoder)
        with gc_paused():
            tokens = DocumentTokens.analyse(catalog, config, progress=progress)
        dense = info = qt = None
        if config.uses_dense:
            if encoder is not None:
                _check_same_model(encoder, config)
            with using_threads(config.threads):
                dense = embed_fields(catalog, config, progress=progress, encoder=encoder, embed_cache=embed_cache)
                qt = build_query_table(catalog, config, dense)
            info = encoder_record(encoder if encoder is not None else get_document_encoder(config))
        if dense:
            dense = fields_with_ivf(dense, config)
        tool_graph = ToolGraph.build(catalog, config.analyzer) if graph else None
        return cls._from_tokens(catalog, config, tokens, dense, tool_graph, qt, encoder_info=info,
                                doc_encoder=encoder, embed_cache=embed_cache)

    @classmethod
    def _from_tokens(cls, catalog: Catalog, config: IndexConfig, tokens: DocumentTokens,
                     dense: dict[str, DenseField] | None = None, graph: ToolGraph | None = None,
                     query_table: QueryTable | None = None, **extra: Any) -> ToolIndex:
        fields = {
            name: FieldIndex.from_batch(*tokens.field_batch(name), n_tools=len(catalog),
                                        n_terms=len(tokens.vocab), bm25=config.bm25)
            for name in FIELDS
        }
        return cls(catalog, config, tokens.vocab, fields, tokens=tokens, dense=dense, graph=graph,
                   query_table=query_table, **extra)

    # ---------------------------------------------------------------- updates
    def add_tools(self, tools: Iterable[Tool]) -> None:
        """Add tools (appended at the end of the catalogue) without re-analysing the rest.

        BM25 statistics (document frequencies, average lengths) stay exact: the result
        scores exactly like an index built from scratch over the new catalogue. Safe
        while other threads search; they see the old or the new index, never a mix.

        Raises:
            SchemaError: A tool is invalid or its id is already indexed.
        """
        self._update(add=list(tools))

    def remove_tools(self, tool_ids: Iterable[str]) -> None:
        """Remove tools by id.

        Raises:
            KeyError: An id is not indexed (nothing is removed then).
            ToolsiftError: The catalogue would become empty.
        """
        self._update(remove=list(tool_ids))

    def replace_tools(self, tools: Iterable[Tool]) -> None:
        """Replace indexed tools by new versions with the same ids, keeping their positions.

        Raises:
            KeyError: A tool's id is not indexed.
        """
        self._update(replace=list(tools))

    def _update(self, *, add: Sequence[Tool] = (), remove: Sequence[str] = (),
                replace: Sequence[Tool] = ()) -> None:
        with self._write_lock:
            parts = updated_parts(self._state, self._config, add=add, remove=remove, replace=replace,
                                  check_encoder=self._check_encoder, encoder=self._doc_encoder,
                                  embed_cache=self._embed_cache)
            self._state = ToolIndex._from_tokens(parts.catalog, self._config, parts.tokens, parts.dense,
                                                 parts.graph, parts.query_table)._state

    def _check_encoder(self) -> None:
        """New rows must come from the encoder that made the stored ones."""
        if self._encoder_info is None:
            return
        enc = self._doc_encoder if self._doc_encoder is not None else get_document_encoder(self._config)
        current = encoder_fingerprint(enc)
        if current != self._encoder_info["fingerprint"]:
            raise EncoderMismatchError("update", self._encoder_info["fingerprint"], current)

    # ---------------------------------------------------------------- queries
    @property
    def catalog(self) -> Catalog:
        """The indexed tools."""
        return self._state.catalog

    @property
    def config(self) -> IndexConfig:
        """The configuration the index was built and scores with."""
        return self._config

    @property
    def vocabulary(self) -> Vocabulary:
        """The shared term vocabulary."""
        return self._state.vocab

    def field(self, name: str) -> FieldIndex:
        """The BM25 index of field ``name``."""
        st = self._state
        if name not in st.fields:
            raise KeyError(f"unknown field {name!r} (fields: {', '.join(FIELDS)})")
        return st.fields[name]

    def __len__(self) -> int:
        return len(self._state.catalog)

    def __contains__(self, tool_id: object) -> bool:
        """``"send_email" in index``: whether a tool with that id is indexed."""
        return isinstance(tool_id, str) and tool_id in self._state.catalog

    def __getitem__(self, tool_id: str) -> Tool:
        """``index["send_email"]``: the indexed tool with that id.

        Raises:
            KeyError: No tool with that id (the message names it).
        """
        if not isinstance(tool_id, str):
            raise KeyError(f"tool ids are strings, got {type(tool_id).__name__} (positions: index.catalog[i])")
        return self._state.catalog.get(tool_id)

    def __repr__(self) -> str:
        return f"ToolIndex(tools={len(self)}, terms={len(self._state.vocab)}, scale={self._config.scale!r})"

    def with_params(self, params: ScoringParams, *,
                    structured: ScoringParams | Literal["keep"] | None = None) -> ToolIndex:
        """A view of this index that scores with other parameters (shares all arrays).

        ``params`` score raw-text queries; ``structured`` as in
        :meth:`IndexConfig.with_params` (default: ``params`` score every query, unless
        they are shipped weights with a structured twin).
        """
        st = self._state
        return ToolIndex(st.catalog, self._config.with_params(params, structured=structured), st.vocab, st.fields,
                         tokens=st.tokens, dense=st.dense, graph=st.graph, query_table=st.query_table,
                         encoder_info=self._encoder_info, doc_encoder=self._doc_encoder,
                         embed_cache=self._embed_cache, null_floors=st.null_floors)

    def dependencies(self, tool_id: str, *, direction: str = "in") -> list[Dependency]:
        """Edges of the tool graph at ``tool_id``: what it depends on, or what depends on it.

        Args:
            tool_id: An indexed tool.
            direction: ``"in"``: the producers of its required parameters (edges
                whose consumer it is); ``"out"``: the tools its result feeds; ``"both"``.

        Returns:
            :class:`Dependency` records (producer, consumer, parameter, reason, score),
            per consumer parameter best first. See :mod:`toolsift.index.graph` for the
            rules that make an edge.

        Raises:
            KeyError: ``tool_id`` is not indexed.
            ValueError: Unknown ``direction``.
        """
        if direction not in ("in", "out", "both"):
            raise ValueError(f"direction must be 'in', 'out' or 'both', got {direction!r}")
        st = self._state
        try:
            pos = st.catalog.position(tool_id)
        except KeyError:
            raise KeyError(f"unknown tool id {tool_id!r}") from None
        g = graph_of(st, self._config)
        rows = list(g.into(pos)) if direction in ("in", "both") else []
        if direction in ("out", "both"):
            seen = set(rows)
            rows += [int(r) for r in g.out_of(pos) if int(r) not in seen]
        return [g.dependency(r, st.catalog) for r in rows]

    def search(self, query: QueryLike, *, k: int = 5, explain: bool | str = False, token_budget: int | None = None,
               format: str = "openai", complete: bool = False) -> list[Hit]:
        """Rank tools for one query.

        Args:
            query: Raw text (every field sees it; no arguments, no penalty), a
                :class:`Query`, or its dict form (``{"tool_needs": [...],
                "extracted_arguments": {...}}``).
            k: Number of hits to return (``min(k, len(index))`` of them).
            explain: Fill the per-field breakdown, penalty and a one-line reason;
                ``"why"``: only the reason (the same text, without the breakdown's
                dicts; for callers that show just the reason).
            token_budget: Return at most ``k`` of the best-ranked tools whose schemas in
                ``format`` fit together in this many tokens (``o200k_base``, the
                ``tokens`` extra); a tool that does not fit is skipped, never truncated,
                and lower-ranked ones may still fit. See :mod:`toolsift.search.budget`.
            format: Schema format the budget counts: ``"openai"``,
                ``"openai-responses"``, ``"anthropic"`` or ``"mcp"``.
            complete: Return a tool *set* for a multi-step request: drop hits that add no
                capability over a higher one, add the best producer of each required
                parameter of a hit that the query does not supply and no tool in the set
                provides (its ``why`` says so: ``"provides user_id for send_message"``)
                and the CRUD step on a hit's resource that the query names; added tools
                are ones the query matched. Still at most ``k`` tools and within
                ``token_budget``. See
                :mod:`toolsift.search.complete` and ``docs/graph.md``.

        Raises:
            QueryError: The query is empty, too long or malformed, or ``token_budget``
                is not an integer >= 1.
            FormatError: Unknown ``format``.
        """
        check_k(k)
        check_explain(explain)
        st, cfg = self._state, self._config
        if token_budget is None and format == _DEFAULT_FORMAT and not complete:
            # The common call: no budget, nothing to count. The schema writers (the whole
            # adapters package) load only when a budget or another format is asked for,
            # so the first query of a process does not pay for importing them.
            if not explain and type(query) is str:
                # Raw text: no Query made on the engine's one-call paths (checked as
                # Query.from_text checks it).
                return _search.search_text(st, cfg, query, k)
            return _search.run(st, cfg, [as_query(query, "query")], k=k, explain=explain)[0]
        return search_one(st, cfg, as_query(query, "query"), k=k, explain=explain, token_budget=token_budget,
                          format=format, complete=complete)

    def complete(self, query: QueryLike, hits: Sequence[Hit], *, k: int) -> list[Hit]:
        """Complete a ranking of this index into a tool set of at most ``k`` (what
        ``search(..., complete=True)`` does after ranking): drop hits that add no
        capability, add the producers of missing inputs and the CRUD steps the query
        asks for, all taken from ``hits``. Give it about ``2 k`` hits, best first.

        Raises:
            QueryError: Bad query or ``k``.
            KeyError: A hit's tool is not in this index.
        """
        check_k(k)
        return complete_ranking(self._state, self._config, as_query(query, "query"), list(hits), k)

    def search_batch(self, queries: Sequence[QueryLike], *, k: int = 5, explain: bool | str = False,
                     progress: bool = False, token_budget: int | None = None, format: str = "openai",
                     complete: bool = False) -> list[list[Hit]]:
        """Rank tools for many queries; the same results as :meth:`search` one by one
        (with the same ``k``, ``explain``, ``token_budget``, ``format`` and ``complete``).

        Raises:
            QueryError: Naming the position of the first bad query, or a bad ``k`` /
                ``token_budget``.
            FormatError: Unknown ``format``.
        """
        if isinstance(queries, (str, Query, Mapping)):
            raise QueryError("queries", "expected a list of queries; use search() for one query")
        check_k(k)
        check_explain(explain)
        if token_budget is not None or format != _DEFAULT_FORMAT:
            from .search.budget import check_budget, check_format

            check_format(format)
            if token_budget is not None:
                check_budget(token_budget)
        parsed = [as_query(q, f"queries[{i}]") for i, q in enumerate(queries)]
        return search_many(self._state, self._config, parsed, k=k, explain=explain, token_budget=token_budget,
                           format=format, complete=complete, progress=progress)

    def score_pairs(self, query: QueryLike, tool_ids: Sequence[str]) -> np.ndarray:
        """MFTR scores of ``query`` against the given tools (no candidate cut-off).

        Useful for re-ranking a fixed list and for training, where every labelled tool
        must be scored even if no field ranks it in its top-N. A raw request is scored as
        one text here, also when :meth:`search` splits it into steps
        (``IndexConfig.split_steps``): these are the scores of its whole-request reading.

        Raises:
            KeyError: A tool id is not indexed.
        """
        q = as_query(query, "query")
        st = self._state
        try:
            tools = np.asarray([st.catalog.position(t) for t in tool_ids], dtype=np.int64)
        except KeyError as exc:
            raise KeyError(f"unknown tool id {exc.args[0]!r}") from None
        return _search.score_tools(st, self._config, q, tools)

    def field_scores(self, queries: Sequence[QueryLike], *, query_ids: Sequence[str] | None = None,
                     progress: bool = False) -> FieldScores:
        """Field scores of every query against every tool (no candidate cut-off).

        The input of evaluation and training: score the result under any parameters
        with :meth:`FieldScores.score`, which follows the search kernel's formula.

        Args:
            queries: Queries as accepted by :meth:`search`.
            query_ids: Ids to carry along (default ``"0"``, ``"1"``, ...).
            progress: Show a progress bar.
        """
        parsed = [as_query(q, f"queries[{i}]") for i, q in enumerate(queries)]
        ids = list(query_ids) if query_ids is not None else [str(i) for i in range(len(parsed))]
        if len(ids) != len(parsed):
            raise QueryError("query_ids", f"{len(ids)} ids for {len(parsed)} queries")
        return _search.all_field_scores(self._state, self._config, parsed, ids, progress=progress)

    # ------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> Path:
        """Write the index to directory ``path`` atomically (replacing an existing one).

        Returns:
            The absolute path written.
        """
        # The tool graph is saved when it has been built (build(graph=True), dependencies(),
        # a completed search); an index saved without it builds it on first use.
        # So are the dense fields' null floors (made now if no search has needed them yet).
        st = self._state
        # The floors are made after the files are written (save_index), off the peak.
        config = self._config
        return save_index(path, st, config, encoder=self._encoder_info,
                          null_floors=lambda: floor_record(st, config))

    @property
    def encoder_info(self) -> dict[str, Any] | None:
        """The encoder that made the dense vectors, ``{"fingerprint": str, "dim": int}``
        (``None``: no dense field, or an index saved before encoders were recorded)."""
        return None if self._encoder_info is None else dict(self._encoder_info)

    @classmethod
    def load(cls, path: str | os.PathLike, *, mmap: bool = True, verify: bool = True, reencode: bool = False,
             embed_cache: EmbedCacheArg = None) -> ToolIndex:
        """Open an index directory written by :meth:`save`.

        A dense or hybrid index records the fingerprint of the encoder that made its
        vectors; loading it where the config's encoder has another fingerprint (an
        upgraded model package, another ``encoder`` folder) raises
        :class:`~toolsift.errors.EncoderMismatchError` unless ``reencode``. An index saved
        before fingerprints were recorded loads with an :class:`UnrecordedEncoderWarning`.

        Args:
            path: The index directory.
            mmap: Memory-map the postings (zero-copy) instead of reading them into memory.
            verify: Check every file's SHA-256 against the manifest. ``verify=False``
                skips only that; sizes, Arrow structure, column types, the per-save id
                of every file and cross-file counts are always checked (see
                :func:`toolsift.index.persist.load_index` for what goes undetected).
            reencode: On an encoder mismatch (or an unrecorded encoder), embed the
                stored catalogue again with the encoder in use (through the embedding
                cache) instead of refusing; :meth:`save` then records the new encoder.
            embed_cache: The embedding cache for re-encoding and later updates, as in
                :meth:`build`.

        Raises:
            IndexFormatError: Not an index directory, or written by a newer version.
            IndexCorruptError: A file is truncated, damaged or inconsistent.
            EncoderMismatchError: The dense vectors were made by another encoder (the
                message names both fingerprints) and ``reencode`` is false.
        """
        return cls(**open_index(path, mmap=mmap, verify=verify, reencode=reencode, embed_cache=embed_cache))


def _check_same_model(encoder: Any, config: IndexConfig) -> None:
    """A build's explicit encoder must make the vectors the config's encoder would (the
    query side uses the config's)."""
    mine = encoder_fingerprint(encoder)
    theirs = encoder_fingerprint(get_document_encoder(config))
    if mine is None or mine != theirs:
        raise EncoderMismatchError("build", theirs or "unknown", mine, message=(
            f"the encoder passed to build ({mine or 'without a fingerprint'}) is not the config's "
            f"({theirs}), which encodes the queries; pass a runner of the same model"))
