"""The data one index version holds, and the analysed documents updates re-use.

:class:`IndexState` is immutable once built: a search takes one reference to it and reads
only that, so writers (add, remove, replace) build a new state and swap it in whole.
:class:`DocumentTokens` keeps every tool's analysed documents as term ids, so an update
re-derives the postings without re-analysing unchanged tools.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..analyze import TermBatch, Vocabulary
from ..config import IndexConfig
from ..errors import IndexCorruptError
from ..progress import progress_bar
from ..schema import FIELDS, Catalog
from .dense_field import DenseField
from .field_index import FieldIndex
from .fields import field_documents, parameter_layout

__all__ = ["DocumentTokens", "IndexState"]


class IndexState:
    """One immutable version of an index: what a search reads, swapped whole on update."""

    def __init__(self, catalog: Catalog, vocab: Vocabulary, fields: dict[str, FieldIndex],
                 tokens: DocumentTokens | None, dense: dict[str, DenseField] | None = None) -> None:
        self.catalog = catalog
        self.vocab = vocab
        self.fields = fields
        self.tokens = tokens
        self.dense = dense or {}
        self.param_ptr, self.param_required = parameter_layout(catalog)
        self.param_names = [p.name for t in catalog for p in t.parameters]
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


class DocumentTokens:
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
                vocab: Vocabulary | None = None, counts: np.ndarray | None = None) -> DocumentTokens:
        """Analyse ``catalog``'s field documents, growing ``vocab`` and ``counts`` in place."""
        vocab = vocab if vocab is not None else Vocabulary()
        fd = field_documents(catalog, name_in_description=config.name_in_description,
                             split_identifiers=config.split_identifiers,
                             parameter_format=config.parameter_format)
        analyzer = config.analyzer
        docs: dict[str, list[list[np.ndarray]]] = {}
        added: list[np.ndarray] = []
        for name in FIELDS:
            texts, groups = fd[name].texts, fd[name].groups
            owner = groups if groups is not None else np.arange(len(catalog))
            per_tool: list[list[np.ndarray]] = [[] for _ in range(len(catalog))]
            for text, t in zip(progress_bar(texts, progress, f"analyse {name}"), owner):
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
    def from_fields(cls, st: IndexState, config: IndexConfig) -> DocumentTokens:
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

    def select(self, keep: Sequence[int]) -> DocumentTokens:
        """A copy holding only the tools at ``keep`` (vocabulary copied, counts updated)."""
        keep_set = set(keep)
        out = DocumentTokens(self.vocab.copy(), self.counts.copy(),
                      {f: [self.docs[f][i] for i in keep] for f in FIELDS})
        n = len(next(iter(self.docs.values())))
        out_drop = DocumentTokens(out.vocab, out.counts, self.docs)
        out_drop._drop(i for i in range(n) if i not in keep_set)
        return out

    def overwrite(self, positions: Sequence[int], fresh: DocumentTokens) -> DocumentTokens:
        """Replace the tools at ``positions`` by ``fresh``'s (analysed with this vocabulary)."""
        self.counts = fresh.counts
        old = DocumentTokens(self.vocab, self.counts, self.docs)
        old._drop(positions)
        for j, i in enumerate(positions):
            for f in FIELDS:
                self.docs[f][i] = fresh.docs[f][j]
        return self

    def extend(self, fresh: DocumentTokens) -> DocumentTokens:
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
