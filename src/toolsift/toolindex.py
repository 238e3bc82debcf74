"""``ToolIndex``: build, search, save and load a multi-field tool index.

A search runs in four steps, each over the whole batch of queries:

1. analyse every need text and argument text with the index's one analyzer;
2. score them against each field's BM25 index in C++ (dense per-tool scores, GIL
   released, threaded);
3. take each field's top-N tools per query and score their union with the MFTR kernel
   (max over needs, per-parameter max over arguments, penalty, weights);
4. sort each query's candidates and return :class:`Hit` objects.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from . import __version__
from .analyze import TermBatch, Vocabulary
from .config import IndexConfig, warn_untrained_penalty
from .errors import IndexCorruptError, IndexFormatError, QueryError, SchemaError, ToolsiftError
from .index.field_index import COLUMNS, FieldIndex
from .index.fields import argument_text, field_documents, parameter_layout
from .index.dense import Int8Matrix
from .index.dense_field import DenseField, encode_texts
from .index.store import open_table, read_manifest, write_index_dir
from .kernels import score_candidates
from .kernels.params import ScoringParams
from .schema import FIELDS, Catalog, Query, Tool
from .scores import FieldScores, field_presence, presence_bits

__all__ = ["Hit", "ToolIndex", "QueryLike"]

QueryLike = str | Query | Mapping[str, Any]

# Queries are scored in chunks so the dense per-field score matrices of a large batch
# stay within a few tens of megabytes.
_CHUNK = 256


@dataclass(frozen=True)
class Hit:
    """One ranked tool.

    Attributes:
        tool: The tool.
        score: Its MFTR score.
        rank: 1-based position in the result list.
        fields: Per-field similarity ``{description, parameters, response, examples}``
            (only with ``explain=True``).
        penalty: Missing-parameter penalty subtracted from the score (``explain=True``).
        parameters: Per tool parameter, the best-matching argument and its similarity,
            ``{param: (argument or None, similarity)}`` (``explain=True``).
        why: A one-line explanation (``explain=True``).
    """

    tool: Tool
    score: float
    rank: int
    fields: dict[str, float] | None = None
    penalty: float | None = None
    parameters: dict[str, tuple[str | None, float]] | None = field(default=None, repr=False)
    why: str | None = None

    @property
    def id(self) -> str:
        """The tool id."""
        return self.tool.id

    @property
    def name(self) -> str:
        """The tool name."""
        return self.tool.name

    def to_dict(self) -> dict[str, Any]:
        """JSON form (tool id and name, score, rank and the explanation if present)."""
        out: dict[str, Any] = {"rank": self.rank, "id": self.id, "name": self.name, "score": self.score}
        if self.fields is not None:
            out["fields"] = self.fields
            out["penalty"] = self.penalty
            out["parameters"] = {
                p: {"argument": a, "similarity": s} for p, (a, s) in (self.parameters or {}).items()
            }
            out["why"] = self.why
        return out


@dataclass
class _Prepared:
    """Analysed texts of one chunk of queries."""

    queries: list[Query]
    need_ptr: np.ndarray
    arg_ptr: np.ndarray
    arg_names: list[list[str | None]]
    penalize: np.ndarray
    batches: dict[str, TermBatch]  # description/response/examples: per need; parameters: per arg
    raw: dict[str, list[str]] = field(default_factory=dict)  # the same texts, unanalysed


class _State:
    """One immutable version of an index: what a search reads, swapped whole on update."""

    def __init__(self, catalog: Catalog, vocab: Vocabulary, fields: dict[str, FieldIndex],
                 tokens: _Tokens | None, dense: dict[str, DenseField] | None = None) -> None:
        self.catalog = catalog
        self.vocab = vocab
        self.fields = fields
        self.tokens = tokens
        self.dense = dense or {}
        self.param_ptr, self.param_required = parameter_layout(catalog)
        self.param_names = [p.name for t in catalog for p in t.parameters]
        self.present = field_presence(catalog)
        self.tool_bits = presence_bits(self.present)
        n_params = int(self.param_ptr[-1])
        if fields["parameters"].core.n_docs != n_params:
            raise IndexCorruptError(
                f"parameters field has {fields['parameters'].core.n_docs} documents, "
                f"the catalogue has {n_params} parameters"
            )
        counts = np.diff(self.param_ptr)
        self._groups = np.repeat(np.arange(len(catalog), dtype=np.int64), counts)

    def param_groups(self) -> np.ndarray:
        """The tool of each parameter document."""
        return self._groups


class _Tokens:
    """Analysed documents per tool and field, as term ids, kept so that updates re-derive
    the postings without re-analysing unchanged tools.

    ``docs[field][tool]`` is the list of that tool's documents in the field (one for
    description and response; one per example, at least one; one per parameter).
    ``counts[term]`` counts a term's occurrences over all fields, so terms no tool uses
    any more can leave the vocabulary (a query word unknown to a fresh build must be
    unknown to an updated one too, or the bounded scale's denominator would differ).
    """

    def __init__(self, vocab: Vocabulary, counts: np.ndarray, docs: dict[str, list[list[np.ndarray]]]):
        self.vocab = vocab
        self.counts = counts
        self.docs = docs

    @classmethod
    def analyse(cls, catalog: Catalog, config: IndexConfig, *, progress: bool = False,
                vocab: Vocabulary | None = None, counts: np.ndarray | None = None) -> _Tokens:
        """Analyse ``catalog``'s field documents, growing ``vocab`` and ``counts`` in place."""
        vocab = vocab if vocab is not None else Vocabulary()
        fd = field_documents(catalog, name_in_description=config.name_in_description,
                             split_identifiers=config.split_identifiers,
                             parameter_format=config.parameter_format, tool_card=config.tool_card)
        analyzer = config.analyzer
        docs: dict[str, list[list[np.ndarray]]] = {}
        added: list[np.ndarray] = []
        for name in FIELDS:
            texts, groups = fd[name].texts, fd[name].groups
            owner = groups if groups is not None else np.arange(len(catalog))
            per_tool: list[list[np.ndarray]] = [[] for _ in range(len(catalog))]
            for text, t in zip(_progress(texts, progress, f"analyse {name}"), owner):
                ids = np.fromiter((vocab.add(w) for w in analyzer.tokenize(text)), dtype=np.int32)
                per_tool[int(t)].append(ids)
                added.append(ids)
            docs[name] = per_tool
        n = len(vocab)
        base = np.zeros(n, np.int64) if counts is None else np.concatenate(
            [counts, np.zeros(n - counts.size, np.int64)])
        if added:
            base += np.bincount(np.concatenate(added), minlength=n)
        return cls(vocab, base, docs)

    @classmethod
    def from_fields(cls, st: _State, config: IndexConfig) -> _Tokens:
        """Recover term ids per document from the postings of a loaded index (term order
        inside a document is lost; BM25 does not use it)."""
        n_tools = len(st.catalog)
        docs: dict[str, list[list[np.ndarray]]] = {}
        counts = np.zeros(len(st.vocab), np.int64)
        for name in FIELDS:
            core = st.fields[name].core
            indptr = np.frombuffer(memoryview(core.column("indptr")), np.int64)
            doc_ids = np.frombuffer(memoryview(core.column("doc_ids")), np.int32)
            tfs = np.frombuffer(memoryview(core.column("tfs")), np.int32)
            term = np.repeat(np.arange(indptr.size - 1, dtype=np.int32), np.diff(indptr))
            tok_doc = np.repeat(doc_ids, tfs)
            tok_term = np.repeat(term, tfs)
            order = np.argsort(tok_doc, kind="stable")
            tok_doc, tok_term = tok_doc[order], tok_term[order]
            counts += np.bincount(tok_term, minlength=counts.size)
            bounds = np.searchsorted(tok_doc, np.arange(core.n_docs + 1))
            per_doc = [tok_term[bounds[d]:bounds[d + 1]] for d in range(core.n_docs)]
            if core.has_groups:
                owner = np.frombuffer(memoryview(core.column("doc_group")), np.int32)
            else:
                owner = np.arange(core.n_docs)
            per_tool: list[list[np.ndarray]] = [[] for _ in range(n_tools)]
            for d, t in enumerate(owner):
                per_tool[int(t)].append(per_doc[d])
            docs[name] = per_tool
        return cls(st.vocab.copy(), counts, docs)

    def _drop(self, tool_positions: Iterable[int]) -> None:
        dropped = [a for t in tool_positions for f in FIELDS for a in self.docs[f][t]]
        if dropped:
            self.counts -= np.bincount(np.concatenate(dropped), minlength=self.counts.size)

    def select(self, keep: Sequence[int]) -> _Tokens:
        """A copy holding only the tools at ``keep`` (vocabulary copied, counts updated)."""
        keep_set = set(keep)
        out = _Tokens(self.vocab.copy(), self.counts.copy(),
                      {f: [self.docs[f][i] for i in keep] for f in FIELDS})
        n = len(next(iter(self.docs.values())))
        out_drop = _Tokens(out.vocab, out.counts, self.docs)
        out_drop._drop(i for i in range(n) if i not in keep_set)
        return out

    def overwrite(self, positions: Sequence[int], fresh: _Tokens) -> _Tokens:
        """Replace the tools at ``positions`` by ``fresh``'s (analysed with this vocabulary)."""
        self.counts = fresh.counts
        old = _Tokens(self.vocab, self.counts, self.docs)
        old._drop(positions)
        for j, i in enumerate(positions):
            for f in FIELDS:
                self.docs[f][i] = fresh.docs[f][j]
        return self

    def extend(self, fresh: _Tokens) -> _Tokens:
        """Append ``fresh``'s tools (analysed with this vocabulary)."""
        self.counts = fresh.counts
        for f in FIELDS:
            self.docs[f].extend(fresh.docs[f])
        return self

    def prune_dead_terms(self) -> None:
        """Forget terms that no document uses any more."""
        for t in np.flatnonzero(self.counts[: len(self.vocab)] == 0):
            self.vocab.forget(int(t))

    def field_batch(self, name: str) -> tuple[TermBatch, np.ndarray | None]:
        """All documents of a field as one batch, with the owning tool of each document
        for multi-document fields."""
        per_tool = self.docs[name]
        flat = [a for docs in per_tool for a in docs]
        lengths = np.fromiter((a.size for a in flat), dtype=np.int64, count=len(flat))
        offsets = np.zeros(len(flat) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        terms = np.concatenate(flat).astype(np.int32, copy=False) if flat else np.zeros(0, np.int32)
        if name in ("description", "response"):
            return TermBatch(terms, offsets), None
        groups = np.repeat(np.arange(len(per_tool), dtype=np.int32),
                           [len(docs) for docs in per_tool]).astype(np.int32)
        return TermBatch(terms, offsets), groups


class ToolIndex:
    """A searchable multi-field index over a tool catalogue.

    Build one with :meth:`build`, or open a saved one with :meth:`load`.

    Example:
        >>> index = ToolIndex.build(load_catalog("tools.json"))      # doctest: +SKIP
        >>> for hit in index.search("email the report to my boss", k=3):  # doctest: +SKIP
        ...     print(hit.name, round(hit.score, 3))
    """

    def __init__(self, catalog: Catalog, config: IndexConfig, vocab: Vocabulary,
                 fields: dict[str, FieldIndex], *, tokens: _Tokens | None = None,
                 dense: dict[str, DenseField] | None = None) -> None:
        self._config = config
        missing = [f for f in FIELDS if config.retriever(f) != "bm25" and f not in (dense or {})]
        if missing:
            raise IndexFormatError(f"no dense embeddings for field(s) {', '.join(missing)} "
                                   "although the config asks for dense or hybrid retrieval")
        self._state = _State(catalog, vocab, fields, tokens, dense)
        # Writers (add/remove/replace) are serialised; readers never lock: each search
        # takes one reference to the current immutable state and uses only that.
        self._write_lock = threading.Lock()

    # ------------------------------------------------------------------ build
    @classmethod
    def build(cls, catalog: Catalog | Iterable[Tool], *, config: IndexConfig | None = None,
              progress: bool = False) -> ToolIndex:
        """Index ``catalog``.

        Args:
            catalog: A :class:`Catalog` or an iterable of :class:`Tool`.
            config: Index configuration; defaults to :class:`IndexConfig()`.
            progress: Show a progress bar per field.

        Raises:
            SchemaError: Duplicate ids or invalid tools in ``catalog``.
            ToolsiftError: The catalogue is empty.
        """
        if not isinstance(catalog, Catalog):
            catalog = Catalog(catalog)
        if len(catalog) == 0:
            raise ToolsiftError("cannot index an empty catalogue")
        config = config or IndexConfig()
        docs = field_documents(catalog, name_in_description=config.name_in_description,
                               split_identifiers=config.split_identifiers,
                               parameter_format=config.parameter_format, tool_card=config.tool_card)
        tokens = _Tokens.analyse(catalog, config, progress=progress)
        dense = _embed_fields(catalog, config, progress=progress) if config.uses_dense else None
        return cls._from_tokens(catalog, config, tokens, dense)

    @classmethod
    def _from_tokens(cls, catalog: Catalog, config: IndexConfig, tokens: _Tokens,
                     dense: dict[str, DenseField] | None = None) -> ToolIndex:
        fields = {
            name: FieldIndex.from_batch(*tokens.field_batch(name), n_tools=len(catalog),
                                        n_terms=len(tokens.vocab), bm25=config.bm25)
            for name in FIELDS
        }
        return cls(catalog, config, tokens.vocab, fields, tokens=tokens, dense=dense)

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
            st = self._state
            tokens = st.tokens if st.tokens is not None else _Tokens.from_fields(st, self._config)
            tools = list(st.catalog)
            pos = {t.id: i for i, t in enumerate(tools)}
            for tid in remove:
                if tid not in pos:
                    raise KeyError(f"cannot remove {tid!r}: no such tool in the index")
            for t in replace:
                if not isinstance(t, Tool):
                    raise SchemaError("replace", f"expected Tool, got {type(t).__name__}")
                if t.id not in pos:
                    raise KeyError(f"cannot replace {t.id!r}: no such tool in the index (use add_tools)")
            for i, t in enumerate(add):
                if not isinstance(t, Tool):
                    raise SchemaError(f"add[{i}]", f"expected Tool, got {type(t).__name__}")
            gone = set(remove)
            keep = [i for i, t in enumerate(tools) if t.id not in gone]
            if not keep and not add:
                raise ToolsiftError("cannot remove every tool: an index needs at least one")
            new_tools = [tools[i] for i in keep]
            new_tok = tokens.select(keep)
            replaced = {t.id: t for t in replace}
            idx = [i for i, t in enumerate(new_tools) if t.id in replaced]
            if idx:
                fresh = _Tokens.analyse(Catalog([replaced[new_tools[i].id] for i in idx]), self._config,
                                        vocab=new_tok.vocab, counts=new_tok.counts)
                new_tok = new_tok.overwrite(idx, fresh)
                for i in idx:
                    new_tools[i] = replaced[new_tools[i].id]
            catalog = Catalog(new_tools + list(add), name=st.catalog.name)  # validates ids
            if add:
                fresh = _Tokens.analyse(Catalog(add), self._config, vocab=new_tok.vocab, counts=new_tok.counts)
                new_tok = new_tok.extend(fresh)
            new_tok.prune_dead_terms()
            dense = None
            if self._config.uses_dense:
                fresh_ids = {t.id for t in add} | set(replaced)
                dense = _update_dense(st, catalog, self._config, fresh_ids)
            built = ToolIndex._from_tokens(catalog, self._config, new_tok, dense)
            self._state = built._state

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

    def __repr__(self) -> str:
        return f"ToolIndex(tools={len(self)}, terms={len(self._state.vocab)}, scale={self._config.scale!r})"

    def with_params(self, params: ScoringParams) -> ToolIndex:
        """A view of this index that scores with other parameters (shares all arrays)."""
        st = self._state
        return ToolIndex(st.catalog, self._config.with_params(params), st.vocab, st.fields, tokens=st.tokens,
                         dense=st.dense)

    def search(self, query: QueryLike, *, k: int = 5, explain: bool = False) -> list[Hit]:
        """Rank tools for one query.

        Args:
            query: Raw text (every field sees it; no arguments, no penalty), a
                :class:`Query`, or its dict form (``{"tool_needs": [...],
                "extracted_arguments": {...}}``).
            k: Number of hits to return (``min(k, len(index))``; tools that match nothing
                fill the tail in catalogue order).
            explain: Fill the per-field breakdown, penalty and a one-line reason.

        Raises:
            QueryError: The query is empty, too long or malformed.
        """
        return self.search_batch([query], k=k, explain=explain)[0]

    def search_batch(self, queries: Sequence[QueryLike], *, k: int = 5, explain: bool = False,
                     progress: bool = False) -> list[list[Hit]]:
        """Rank tools for many queries; the same results as :meth:`search` one by one.

        Raises:
            QueryError: Naming the position of the first bad query.
        """
        if isinstance(queries, (str, Query, Mapping)):
            raise QueryError("queries", "expected a list of queries; use search() for one query")
        _check_k(k)
        parsed = [_as_query(q, f"queries[{i}]") for i, q in enumerate(queries)]
        out: list[list[Hit]] = []
        st = self._state
        chunks = range(0, len(parsed), _CHUNK)
        bar = _progress(chunks, progress and len(parsed) > _CHUNK, "search", total=len(chunks))
        for start in bar:
            out.extend(self._search_chunk(st, parsed[start:start + _CHUNK], k, explain))
        return out

    def score_pairs(self, query: QueryLike, tool_ids: Sequence[str]) -> np.ndarray:
        """MFTR scores of ``query`` against the given tools (no candidate cut-off).

        Useful for re-ranking a fixed list and for training, where every labelled tool
        must be scored even if no field ranks it in its top-N.
        """
        q = _as_query(query, "query")
        st = self._state
        try:
            tools = np.asarray([st.catalog.position(t) for t in tool_ids], dtype=np.int64)
        except KeyError as exc:
            raise KeyError(f"unknown tool id {exc.args[0]!r}") from None
        prep = self._prepare(st, [q])
        if prep.penalize.any():
            warn_untrained_penalty(self._config.params)
        dense = self._dense(st, prep)
        scores, _ = self._score(st, prep, dense, [tools], breakdown=False)
        return scores

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
        parsed = [_as_query(q, f"queries[{i}]") for i, q in enumerate(queries)]
        ids = list(query_ids) if query_ids is not None else [str(i) for i in range(len(parsed))]
        if len(ids) != len(parsed):
            raise QueryError("query_ids", f"{len(ids)} ids for {len(parsed)} queries")
        st = self._state
        nt = len(st.catalog)
        n_params = int(st.param_ptr[-1])
        groups = st.param_groups()
        counts = np.maximum(np.diff(st.param_ptr), 1)
        base = np.zeros((len(parsed), nt, 4), dtype=np.float32)
        psims = np.zeros((len(parsed), n_params), dtype=np.float32)
        penalized = np.zeros(len(parsed), dtype=bool)
        chunks = range(0, len(parsed), _CHUNK)
        for start in _progress(chunks, progress, "field scores", total=len(chunks)):
            prep = self._prepare(st, parsed[start:start + _CHUNK])
            dense = self._dense(st, prep)
            for i in range(len(prep.queries)):
                r0, r1 = prep.need_ptr[i], prep.need_ptr[i + 1]
                a0, a1 = prep.arg_ptr[i], prep.arg_ptr[i + 1]
                row = start + i
                base[row, :, 0] = dense["description"][r0:r1].max(axis=0)
                base[row, :, 2] = dense["response"][r0:r1].max(axis=0)
                base[row, :, 3] = dense["examples"][r0:r1].max(axis=0)
                if a1 > a0 and n_params:
                    sp = dense["parameter_docs"][a0:a1].max(axis=0)
                    psims[row] = sp
                    base[row, :, 1] = np.bincount(groups, weights=sp, minlength=nt) / counts
                penalized[row] = bool(prep.penalize[i])
        return FieldScores(ids, [t.id for t in st.catalog], base, psims, penalized,
                           groups.astype(np.int64), st.param_required.astype(bool), st.present)

    # --------------------------------------------------------------- internals
    def _prepare(self, st: _State, queries: list[Query]) -> _Prepared:
        cfg = self._config
        analyzer = cfg.analyzer
        cache: dict[str, list[str]] = {}

        def tok(text: str) -> list[str]:
            got = cache.get(text)
            if got is None:
                got = cache[text] = analyzer.tokenize(text)
            return got

        raw: dict[str, list[str]] = {f: [] for f in FIELDS}
        need_ptr = np.zeros(len(queries) + 1, dtype=np.int64)
        arg_ptr = np.zeros(len(queries) + 1, dtype=np.int64)
        penalize = np.zeros(len(queries), dtype=np.uint8)
        arg_names: list[list[str | None]] = []
        for i, q in enumerate(queries):
            for need in q.needs:
                raw["description"].append(need.tool_description)
                raw["response"].append(need.expected_response)
                raw["examples"].append(need.user_intent)
            if q.arguments:
                names: list[str | None] = list(q.arguments)
                split = cfg.split_identifiers
                raw["parameters"].extend(argument_text(a, d, split_identifiers=split)
                                         for a, d in q.arguments.items())
                penalize[i] = 1
            elif cfg.penalize_without_arguments and not _is_raw(q):
                names = []
                penalize[i] = 1
            elif cfg.no_argument_params == "intent":
                names = [None] * len(q.needs)
                raw["parameters"].extend(n.user_intent for n in q.needs)
            else:
                names = []
            arg_names.append(names)
            need_ptr[i + 1] = len(raw["description"])
            arg_ptr[i + 1] = len(raw["parameters"])
        batches = {f: st.vocab.encode_batch([tok(t) for t in raw[f]], grow=False) for f in FIELDS}
        return _Prepared(queries, need_ptr, arg_ptr, arg_names, penalize, batches, raw)

    def _dense(self, st: _State, prep: _Prepared) -> dict[str, np.ndarray]:
        cfg = self._config
        threads = cfg.threads
        emb: dict[str, np.ndarray] = {}
        if st.dense:
            encoder = get_encoder(cfg)
            texts = [t for f in st.dense for t in prep.raw[f]]
            vecs = encode_texts(encoder, texts)
            start = 0
            for f in st.dense:
                emb[f] = vecs[start:start + len(prep.raw[f])]
                start += len(prep.raw[f])

        def field_scores(f: str, per_tool: bool) -> np.ndarray:
            kind = cfg.retriever(f)
            fi = st.fields[f]
            if kind != "dense":
                bm = (fi.score_tools if per_tool else fi.score_docs)(prep.batches[f], scale=cfg.scale,
                                                                      threads=threads)
                if kind == "bm25":
                    return bm
            dn = st.dense[f]
            cos = dn.score_tools(emb[f]) if per_tool else dn.score_docs(emb[f])
            if kind == "dense":
                return cos
            w = cfg.hybrid_weight
            return (w * bm + (1.0 - w) * np.maximum(cos, 0.0)).astype(np.float32)

        out = {f: field_scores(f, True) for f in ("description", "response", "examples")}
        # A parameter's similarity is "how well some argument matches it", floored at 0 (no
        # match), as in the MFTR reference; a negative cosine must not pull the mean
        # parameter score below that of a tool whose parameters simply went unmatched.
        # BM25 and hybrid scores are never negative, so only plain dense needs the floor.
        par = field_scores("parameters", False)
        out["parameter_docs"] = np.maximum(par, 0.0, out=par) if cfg.retriever("parameters") == "dense" else par
        return out

    def _candidates(self, st: _State, prep: _Prepared, dense: dict[str, np.ndarray], i: int) -> np.ndarray:
        n_tools = len(st.catalog)
        n = self._config.candidates
        rows = slice(prep.need_ptr[i], prep.need_ptr[i + 1])
        per_field = [dense[f][rows].max(axis=0) for f in ("description", "response", "examples")]
        a0, a1 = prep.arg_ptr[i], prep.arg_ptr[i + 1]
        if a1 > a0:
            doc_best = dense["parameter_docs"][a0:a1].max(axis=0)
            tool_best = np.zeros(n_tools, dtype=np.float32)
            if doc_best.size:
                groups = st.param_groups()
                np.maximum.at(tool_best, groups, doc_best)
            per_field.append(tool_best)
        picks = []
        for s in per_field:
            if n >= n_tools:
                picks.append(np.flatnonzero(s > 0))
            else:
                top = np.argpartition(-s, n - 1)[:n]
                picks.append(top[s[top] > 0])
        return np.unique(np.concatenate(picks)).astype(np.int64) if picks else np.zeros(0, np.int64)

    def _score(self, st: _State, prep: _Prepared, dense: dict[str, np.ndarray], cands: list[np.ndarray], *,
               breakdown: bool) -> tuple[np.ndarray, np.ndarray | None]:
        ptr = st.param_ptr
        cq, ct, need_off, par_off, need_blocks, ap_blocks = [], [], [], [], [], []
        need_base = 0
        ap_base = 0
        for i, c in enumerate(cands):
            nc = c.size
            r0, r1 = prep.need_ptr[i], prep.need_ptr[i + 1]
            nn = int(r1 - r0)
            cq.append(np.full(nc, i, dtype=np.int64))
            ct.append(c)
            block = np.stack([dense[f][r0:r1][:, c] for f in ("description", "response", "examples")], axis=-1)
            need_blocks.append(block.transpose(1, 0, 2).reshape(nc * nn, 3))
            need_off.append(need_base + np.arange(nc, dtype=np.int64) * nn)
            need_base += nc * nn
            a0, a1 = prep.arg_ptr[i], prep.arg_ptr[i + 1]
            na = int(a1 - a0)
            counts = ptr[c + 1] - ptr[c]
            before = np.cumsum(counts) - counts
            par_off.append(ap_base + na * before)
            total = int(counts.sum())
            if na and total:
                cand_rep = np.repeat(np.arange(nc), counts)
                local = np.arange(total) - before[cand_rep]
                docs = ptr[c][cand_rep] + local
                sub = dense["parameter_docs"][a0:a1][:, docs]  # (na, total)
                pos = (na * before[cand_rep] + local)[None, :] + np.arange(na)[:, None] * counts[cand_rep][None, :]
                ap = np.empty(na * total, dtype=np.float32)
                ap[pos.ravel()] = sub.ravel()
                ap_blocks.append(ap)
                ap_base += na * total
        n_needs = np.diff(prep.need_ptr)
        n_args = np.diff(prep.arg_ptr)
        cat = np.concatenate
        return _call_kernel(
            cat(cq) if cq else np.zeros(0, np.int64), cat(ct) if ct else np.zeros(0, np.int64),
            cat(need_off) if need_off else np.zeros(0, np.int64),
            cat(par_off) if par_off else np.zeros(0, np.int64),
            n_needs, n_args, prep.penalize,
            cat(need_blocks) if need_blocks else np.zeros((0, 3), np.float32),
            cat(ap_blocks) if ap_blocks else np.zeros(0, np.float32),
            ptr, st.param_required, self._config.params, breakdown, st.tool_bits,
        )

    def _search_chunk(self, st: _State, queries: list[Query], k: int, explain: bool) -> list[list[Hit]]:
        prep = self._prepare(st, queries)
        if prep.penalize.any():  # field_scores() does not warn: it applies no params
            warn_untrained_penalty(self._config.params)
        dense = self._dense(st, prep)
        cands = [_fill(self._candidates(st, prep, dense, i), k, len(st.catalog)) for i in range(len(queries))]
        scores, terms = self._score(st, prep, dense, cands, breakdown=explain)
        results: list[list[Hit]] = []
        start = 0
        for i, c in enumerate(cands):
            s = scores[start:start + c.size]
            order = np.lexsort((c, -s))[:k]  # score descending, then catalogue order
            hits = []
            for rank, j in enumerate(order, 1):
                tool = st.catalog[int(c[j])]
                if explain:
                    hits.append(self._explain(st, prep, dense, i, int(c[j]), float(s[j]), rank, terms[start + j]))
                else:
                    hits.append(Hit(tool=tool, score=float(s[j]), rank=rank))
            results.append(hits)
            start += c.size
        return results

    def _explain(self, st: _State, prep: _Prepared, dense: dict[str, np.ndarray], i: int, t: int, score: float,
                 rank: int, terms: np.ndarray) -> Hit:
        tool = st.catalog[t]
        fields = {f: float(terms[j]) for j, f in enumerate(FIELDS)}
        penalty = float(terms[4])
        a0, a1 = prep.arg_ptr[i], prep.arg_ptr[i + 1]
        p0, p1 = int(st.param_ptr[t]), int(st.param_ptr[t + 1])
        matches: dict[str, tuple[str | None, float]] = {}
        names = prep.arg_names[i]
        for j in range(p0, p1):
            pname = st.param_names[j]
            if a1 > a0:
                col = dense["parameter_docs"][a0:a1, j]
                best = int(np.argmax(col))
                matches[pname] = (names[best] if col[best] > 0 else None, float(col[best]))
            else:
                matches[pname] = (None, 0.0)
        params = self._config.params
        contrib = sorted(
            ((w * fields[f], f) for w, f in zip(params.weights, FIELDS)), reverse=True
        )
        parts = [f"{f} {fields[f]:.2f}" for c, f in contrib if c > 0][:2]
        why = "matches " + " and ".join(parts) if parts else "weak lexical match"
        if prep.penalize[i]:
            missing = [p.name for p in tool.parameters
                       if p.required and matches[p.name][1] < params.tau]
            if missing:
                why += "; no argument for required " + ", ".join(missing)
        return Hit(tool=tool, score=score, rank=rank, fields=fields, penalty=penalty,
                   parameters=matches, why=why)

    # ------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> Path:
        """Write the index to directory ``path`` atomically (replacing an existing one).

        Returns:
            The absolute path written.
        """
        st = self._state
        tools = pa.table({
            "id": pa.array([t.id for t in st.catalog], pa.string()),
            "payload": pa.array([json.dumps(t.to_dict(), ensure_ascii=False, default=str)
                                 for t in st.catalog], pa.large_string()),
        })
        tables: dict[str, pa.Table] = {
            "tools.arrow": tools,
            "vocab.arrow": pa.table({"term": pa.array(st.vocab.to_list(), pa.string())}),
        }
        stats = {}
        for name, fi in st.fields.items():
            cols = {}
            for cname, view in fi.columns().items():
                arr = pa.array(view)  # zero-copy over the engine's buffer
                cols[cname] = pa.LargeListArray.from_arrays(pa.array([0, len(arr)], pa.int64()), arr)
            tables[f"field.{name}.arrow"] = pa.table(cols)
            c = fi.core
            stats[name] = {"n_docs": c.n_docs, "nnz": c.nnz, "avgdl": c.avgdl, "grouped": fi.grouped}
        for name, dn in st.dense.items():
            tables[f"dense.{name}.arrow"] = dn.matrix.to_arrow()
        manifest = {
            "toolsift_version": __version__,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "n_tools": len(st.catalog),
            "n_terms": len(st.vocab),
            "catalog_name": st.catalog.name,
            "config": self._config.to_dict(),
            "fields": stats,
        }
        return write_index_dir(path, tables, manifest)

    @classmethod
    def load(cls, path: str | os.PathLike, *, mmap: bool = True, verify: bool = True) -> ToolIndex:
        """Open an index directory written by :meth:`save`.

        Args:
            path: The index directory.
            mmap: Memory-map the postings (zero-copy) instead of reading them into memory.
            verify: Check every file's SHA-256 against the manifest (sizes are always
                checked).

        Raises:
            IndexFormatError: Not an index directory, or written by a newer version.
            IndexCorruptError: A file is truncated, damaged or inconsistent.
        """
        manifest = read_manifest(path, verify=verify)
        try:
            config = IndexConfig.from_dict(manifest["config"])
            n_tools = int(manifest["n_tools"])
            tools_t = open_table(path, "tools.arrow", mmap=False)
            tools = [Tool.from_dict(json.loads(p), where=f"tools.arrow[{i}]")
                     for i, p in enumerate(tools_t.column("payload").to_pylist())]
            catalog = Catalog(tools, name=manifest.get("catalog_name", "catalog"))
            vocab = Vocabulary.from_list(open_table(path, "vocab.arrow", mmap=False).column("term").to_pylist())
            fields = {}
            for name in FIELDS:
                table = open_table(path, f"field.{name}.arrow", mmap=mmap)
                arrays = {}
                for cname in COLUMNS:
                    if cname in table.column_names:
                        col = table.column(cname)
                        if col.num_chunks != 1 or len(col) != 1:
                            raise IndexCorruptError(f"field.{name}.arrow: column {cname} has an unexpected shape")
                        arrays[cname] = col.chunk(0).values
                fields[name] = FieldIndex.from_arrays(arrays, n_tools=n_tools, bm25=config.bm25)
                if fields[name].core.n_terms != len(vocab):
                    raise IndexCorruptError(f"field.{name}.arrow: term count disagrees with vocab.arrow")
        except (IndexFormatError, IndexCorruptError):
            raise
        except (KeyError, ValueError, TypeError, ToolsiftError) as exc:
            raise IndexCorruptError(f"{path}: index is inconsistent: {exc}") from None
        if len(catalog) != n_tools:
            raise IndexCorruptError(f"{path}: manifest says {n_tools} tools, tools.arrow has {len(catalog)}")
        dense = {}
        for name in FIELDS:
            if config.retriever(name) == "bm25":
                continue
            fname = f"dense.{name}.arrow"
            if fname not in manifest.get("files", {}):
                raise IndexCorruptError(f"{path}: {fname} is missing although field {name!r} is dense")
            try:
                matrix = Int8Matrix.from_arrow(open_table(path, fname, mmap=mmap))
                fi = fields[name]
                groups = (np.frombuffer(memoryview(fi.core.column("doc_group")), np.int32)
                          if fi.grouped else None)
                dense[name] = DenseField(matrix, groups, n_tools)
            except (KeyError, ValueError, TypeError) as exc:
                raise IndexCorruptError(f"{path}/{fname}: {exc}") from None
        return cls(catalog, config, vocab, fields, dense=dense)


_ENCODERS: dict[tuple, Any] = {}
_ENCODER_LOCK = threading.Lock()


def get_encoder(config: IndexConfig):
    """The sentence encoder a config asks for, loaded once per process."""
    key = (config.encoder, config.threads)
    with _ENCODER_LOCK:
        enc = _ENCODERS.get(key)
        if enc is None:
            from .encoders import OnnxEncoder

            enc = _ENCODERS[key] = OnnxEncoder(config.encoder, threads=config.threads)
        return enc


def _embed_fields(catalog: Catalog, config: IndexConfig, *, progress: bool = False) -> dict[str, DenseField]:
    fd = field_documents(catalog, name_in_description=config.name_in_description,
                         split_identifiers=config.split_identifiers, parameter_format=config.parameter_format, tool_card=config.tool_card)
    encoder = get_encoder(config)
    out = {}
    for name in _progress([f for f in FIELDS if config.retriever(f) != "bm25"], progress, "embed fields"):
        groups = fd[name].groups
        out[name] = DenseField.build(encoder, fd[name].texts, groups, len(catalog))
    return out


def _update_dense(st: _State, catalog: Catalog, config: IndexConfig, fresh_ids: set[str]) -> dict[str, DenseField]:
    """Dense fields for ``catalog``: rows of unchanged tools are reused, only new or
    replaced tools are embedded."""
    fresh = [t for t in catalog if t.id in fresh_ids]
    new_dense = _embed_fields(Catalog(fresh), config) if fresh else {}
    fresh_pos = {t.id: i for i, t in enumerate(fresh)}
    old_pos = {t.id: i for i, t in enumerate(st.catalog)}
    out = {}
    for name, dn in st.dense.items():
        def rows_of(field: DenseField, n: int) -> list[np.ndarray]:
            g = field.groups if field.groups is not None else np.arange(n)
            starts = np.searchsorted(g, np.arange(n))
            ends = np.searchsorted(g, np.arange(n), side="right")
            return [np.arange(a, b) for a, b in zip(starts, ends)]

        old_rows = rows_of(dn, len(st.catalog))
        fresh_field = new_dense.get(name)
        fresh_rows = rows_of(fresh_field, len(fresh)) if fresh_field is not None else []
        codes, scales, groups = [], [], []
        for t_new, tool in enumerate(catalog):
            if tool.id in fresh_pos:
                src, r = fresh_field.matrix, fresh_rows[fresh_pos[tool.id]]
            else:
                src, r = dn.matrix, old_rows[old_pos[tool.id]]
            codes.append(src.codes[r])
            scales.append(src.scales[r])
            groups.append(np.full(r.size, t_new, dtype=np.int64))
        dim = dn.matrix.codes.shape[1]
        matrix = Int8Matrix(np.concatenate(codes) if codes else np.zeros((0, dim), np.int8),
                            np.concatenate(scales) if scales else np.zeros(0, np.float32))
        g = np.concatenate(groups) if groups else np.zeros(0, np.int64)
        out[name] = DenseField(matrix, g if dn.groups is not None else None, len(catalog))
    return out


def _call_kernel(cq, ct, need_off, par_off, n_needs, n_args, penalize, need_sims, ap_sims, ptr, req,
                 params, breakdown, bits):
    if breakdown:
        return score_candidates(cq, ct, need_off, par_off, n_needs, n_args, penalize, need_sims, ap_sims,
                                ptr, req, params, tool_fields=bits, breakdown=True, check_finite=False)
    return score_candidates(cq, ct, need_off, par_off, n_needs, n_args, penalize, need_sims, ap_sims,
                            ptr, req, params, tool_fields=bits, check_finite=False), None


def _fill(cands: np.ndarray, k: int, n_tools: int) -> np.ndarray:
    """Top up ``cands`` to ``min(k, n_tools)`` tools with the first others in catalogue
    order, so a search returns k hits even when few tools share a term with the query."""
    want = min(k, n_tools)
    if cands.size >= want:
        return cands
    extra = np.setdiff1d(np.arange(min(n_tools, want + cands.size), dtype=np.int64), cands)
    return np.union1d(cands, extra[:want - cands.size]).astype(np.int64)


def _is_raw(q: Query) -> bool:
    """Whether ``q`` came from plain text (one need, all three texts the text)."""
    return bool(q.text) and len(q.needs) == 1 and \
        q.needs[0].user_intent == q.needs[0].tool_description == q.needs[0].expected_response == q.text


def _check_k(k: int) -> None:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise QueryError("k", f"must be an integer >= 1, got {k!r}")


def _as_query(q: Any, where: str) -> Query:
    try:
        if isinstance(q, Query):
            return q
        if isinstance(q, str):
            return Query.from_text(q)
        if isinstance(q, Mapping):
            return Query.from_dict(q, where=where)
    except QueryError as exc:
        if exc.where.startswith(where):
            raise
        raise QueryError(where, str(exc)) from None
    raise QueryError(where, f"expected text, a Query or a dict, got {type(q).__name__}")


def _progress(it, enabled: bool, desc: str, total: int | None = None) -> Iterator:
    if not enabled:
        return iter(it)
    from tqdm.auto import tqdm

    return iter(tqdm(it, desc=desc, total=total, leave=False))
