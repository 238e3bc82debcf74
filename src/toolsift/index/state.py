"""The data one index version holds, and the analysed documents updates re-use.

:class:`IndexState` is immutable once built: a search takes one reference to it and reads
only that, so writers (add, remove, replace) build a new state and swap it in whole.
:class:`DocumentTokens` keeps every tool's analysed documents as term ids, so an update
re-derives the postings without re-analysing unchanged tools.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..analyze import TermBatch, Vocabulary
from ..config import IndexConfig
from ..csr import ptr_from_counts, ranges
from ..errors import IndexCorruptError
from ..kernels.buffers import freeze
from ..progress import progress_bar
from ..schema import FIELDS, Catalog

if TYPE_CHECKING:
    from .graph import ToolGraph
    from .query_table import QueryTable
from ..scores import presence_bits
from .dense_field import DenseField
from .field_index import FieldIndex
from .fields import field_texts
from .tooltable import tool_layout

__all__ = ["DocumentTokens", "FieldTokens", "IndexState"]


#: Tools whose field documents are made and analysed at once during a build.
_TOOLS_PER_STEP = 16_384


def _cat(parts: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


class IndexState:
    """One immutable version of an index: what a search reads, swapped whole on update."""

    def __init__(self, catalog: Catalog, vocab: Vocabulary, fields: dict[str, FieldIndex],
                 tokens: DocumentTokens | None, dense: dict[str, DenseField] | None = None) -> None:
        self.catalog = catalog
        self.vocab = vocab
        self.fields = fields
        self.tokens = tokens
        self.dense = dense or {}
        # From the tool table's columns for a loaded index: no tool is decoded here.
        # present: which fields each tool has, for weight renormalisation.
        # Read-only arrays of their own: the C++ core takes them in place on every search
        # (a writable array or a view it copies per call: 12 MB at a million tools).
        ptr, required, self.present = tool_layout(catalog)
        self.param_ptr = freeze(np.array(ptr, dtype=np.int64))
        self.param_required = freeze(np.array(required, dtype=np.uint8))
        self.tool_bits = freeze(presence_bits(self.present))
        n_params = int(self.param_ptr[-1])
        if fields["parameters"].core.n_docs != n_params:
            raise IndexCorruptError(
                f"parameters field has {fields['parameters'].core.n_docs} documents, "
                f"the catalogue has {n_params} parameters"
            )
        counts = np.diff(self.param_ptr)
        self._groups = np.repeat(np.arange(len(catalog), dtype=np.int64), counts)
        # Per-field retrievers by settings (toolsift.search.retrievers()) and the fused
        # searchers (toolsift.search.fused), made on first use and kept with the state.
        self.retrievers: dict[Any, Any] = {}
        # The tool graph (toolsift.index.graph.ToolGraph), set by ToolIndex.
        self.graph: ToolGraph | None = None
        # The static query encoder's table (toolsift.index.query_table), set by ToolIndex.
        self.query_table: QueryTable | None = None
        # The dense fields' null floors a saved index recorded, {"settings", "fields"}
        # (toolsift.search.evidence.saved_floors), set by ToolIndex for a loaded index.
        self.null_floors: dict[str, Any] | None = None

    def param_groups(self) -> np.ndarray:
        """The tool of each parameter document."""
        return self._groups


@dataclass(frozen=True)
class FieldTokens:
    """One field's analysed documents as CSR, grouped by tool.

    Tool ``t`` owns documents ``tool_ptr[t]:tool_ptr[t+1]``; document ``d`` holds term
    ids ``terms[doc_ptr[d]:doc_ptr[d+1]]``. Flat arrays rather than one small array per
    document: at a million tools that is the difference between a few hundred megabytes
    of object overhead and none.
    """

    terms: np.ndarray    # int32
    doc_ptr: np.ndarray  # int64[n_docs + 1]
    tool_ptr: np.ndarray  # int64[n_tools + 1]

    @property
    def n_tools(self) -> int:
        return self.tool_ptr.size - 1

    def take(self, tools: np.ndarray) -> FieldTokens:
        """The documents of ``tools`` (catalogue positions, any order), renumbered 0.."""
        tools = np.asarray(tools, dtype=np.int64)
        n_docs = self.tool_ptr[tools + 1] - self.tool_ptr[tools]
        docs = ranges(self.tool_ptr[tools], n_docs)
        lens = self.doc_ptr[docs + 1] - self.doc_ptr[docs]
        return FieldTokens(self.terms[ranges(self.doc_ptr[docs], lens)], ptr_from_counts(lens), ptr_from_counts(n_docs))

    def concat(self, other: FieldTokens) -> FieldTokens:
        """This field's tools followed by ``other``'s."""
        return FieldTokens(np.concatenate([self.terms, other.terms]),
                           np.concatenate([self.doc_ptr, other.doc_ptr[1:] + self.doc_ptr[-1]]),
                           np.concatenate([self.tool_ptr, other.tool_ptr[1:] + self.tool_ptr[-1]]))


class DocumentTokens:
    """Analysed documents per field, as term ids, kept so that updates re-derive the
    postings without re-analysing unchanged tools.

    ``fields[name]`` is a :class:`FieldTokens` (one document per tool for description
    and response; one per example, at least one; one per parameter). ``counts[term]``
    counts a term's occurrences over all fields, so terms no tool uses any more can leave
    the vocabulary (a query word unknown to a fresh build must be unknown to an updated
    one too, or the bounded scale's denominator would differ).
    """

    def __init__(self, vocab: Vocabulary, fields: dict[str, FieldTokens]):
        self.vocab = vocab
        self.fields = fields
        n = len(vocab)
        self.counts = sum((np.bincount(ft.terms, minlength=n) for ft in fields.values()),
                          np.zeros(n, np.int64))

    @classmethod
    def analyse(cls, catalog: Catalog, config: IndexConfig, *, progress: bool = False,
                vocab: Vocabulary | None = None) -> DocumentTokens:
        """Analyse ``catalog``'s field documents, growing ``vocab`` in place."""
        vocab = vocab if vocab is not None else Vocabulary()
        options: dict[str, Any] = dict(name_in_description=config.name_in_description, split_identifiers=config.split_identifiers,
                       parameter_format=config.parameter_format, tool_card=config.tool_card)
        n_tools = len(catalog)
        fields: dict[str, FieldTokens] = {}
        # Field by field (term ids in the order a whole-field analysis gives them), a
        # slice of tools at a time: the documents of a million tools are never all held.
        for name in progress_bar(FIELDS, progress, "analyse"):
            stream = config.analyzer.stream(vocab)
            terms, lens, per_tool = [], [], []
            for start in range(0, n_tools, _TOOLS_PER_STEP):
                texts, counts = field_texts(catalog[start:start + _TOOLS_PER_STEP], name, **options)
                t, n = stream.analyse(texts)
                terms.append(t)
                lens.append(n)
                per_tool.append(np.ones(len(texts), np.int64) if counts is None else counts)
            fields[name] = FieldTokens(_cat(terms, np.int32), ptr_from_counts(_cat(lens, np.int64)),
                                       ptr_from_counts(_cat(per_tool, np.int64)))
        return cls(vocab, fields)

    @classmethod
    def from_fields(cls, st: IndexState, config: IndexConfig) -> DocumentTokens:
        """Recover term ids per document from the postings of a loaded index (term order
        inside a document is lost; BM25 does not use it)."""
        n_tools = len(st.catalog)
        fields: dict[str, FieldTokens] = {}
        for name in FIELDS:
            core = st.fields[name].core
            indptr = np.frombuffer(memoryview(core.column("indptr")), np.int64)
            doc_ids = np.frombuffer(memoryview(core.column("doc_ids")), np.int32)
            tfs = np.frombuffer(memoryview(core.column("tfs")), np.int32)
            term = np.repeat(np.arange(indptr.size - 1, dtype=np.int32), np.diff(indptr))
            tok_doc = np.repeat(doc_ids, tfs)
            order = np.argsort(tok_doc, kind="stable")
            terms = np.repeat(term, tfs)[order]
            doc_ptr = np.searchsorted(tok_doc[order], np.arange(core.n_docs + 1)).astype(np.int64)
            if core.has_groups:
                owner = np.frombuffer(memoryview(core.column("doc_group")), np.int32)
                per_tool = np.bincount(owner, minlength=n_tools).astype(np.int64)
            else:
                per_tool = np.ones(n_tools, np.int64)
            fields[name] = FieldTokens(terms.astype(np.int32), doc_ptr, ptr_from_counts(per_tool))
        return cls(st.vocab.copy(), fields)

    def select(self, keep: Sequence[int]) -> DocumentTokens:
        """A copy holding only the tools at ``keep`` (vocabulary copied, counts updated)."""
        rows = np.asarray(keep, dtype=np.int64)
        return DocumentTokens(self.vocab.copy(), {f: ft.take(rows) for f, ft in self.fields.items()})

    def overwrite(self, positions: Sequence[int], fresh: DocumentTokens) -> DocumentTokens:
        """Replace the tools at ``positions`` by ``fresh``'s (analysed with this vocabulary)."""
        n = next(iter(self.fields.values())).n_tools
        order = np.arange(n, dtype=np.int64)
        order[np.asarray(positions, dtype=np.int64)] = n + np.arange(len(positions))
        return DocumentTokens(fresh.vocab, {f: ft.concat(fresh.fields[f]).take(order)
                                            for f, ft in self.fields.items()})

    def extend(self, fresh: DocumentTokens) -> DocumentTokens:
        """Append ``fresh``'s tools (analysed with this vocabulary)."""
        return DocumentTokens(fresh.vocab, {f: ft.concat(fresh.fields[f]) for f, ft in self.fields.items()})

    def prune_dead_terms(self) -> None:
        """Forget terms that no document uses any more."""
        for t in np.flatnonzero(self.counts[: len(self.vocab)] == 0):
            self.vocab.forget(int(t))

    def field_batch(self, name: str) -> tuple[TermBatch, np.ndarray | None]:
        """All documents of a field as one batch, with the owning tool of each document
        for multi-document fields."""
        ft = self.fields[name]
        batch = TermBatch(ft.terms.astype(np.int32, copy=False), ft.doc_ptr)
        if name in ("description", "response"):
            return batch, None
        groups = np.repeat(np.arange(ft.n_tools, dtype=np.int32), np.diff(ft.tool_ptr)).astype(np.int32)
        return batch, groups
