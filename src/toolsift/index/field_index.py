"""One field's BM25 index: the C++ inverted index plus its document -> tool map."""

from __future__ import annotations

import numpy as np

from .. import _core
from ..analyze import TermBatch
from ..config import Bm25Config

__all__ = ["FieldIndex", "COLUMNS", "union_candidates"]

#: Arrays that make up a stored field index.
COLUMNS = ("indptr", "doc_ids", "tfs", "doc_len", "doc_group")


class FieldIndex:
    """BM25 over one field's documents, scored per tool.

    Args:
        core: The C++ index.
        n_tools: Number of tools; grouped fields reduce documents to tools by max.
    """

    def __init__(self, core: _core.InvertedIndex, n_tools: int) -> None:
        self.core = core
        self.n_tools = n_tools
        if core.has_groups and core.n_groups != n_tools:
            raise ValueError(f"field index groups ({core.n_groups}) != tools ({n_tools})")
        if not core.has_groups and core.n_docs != n_tools:
            raise ValueError(f"field index has {core.n_docs} documents for {n_tools} tools")

    @classmethod
    def from_batch(cls, batch: TermBatch, groups: np.ndarray | None, *, n_tools: int, n_terms: int,
                   bm25: Bm25Config) -> FieldIndex:
        """Index analysed documents (``batch``) whose term ids are below ``n_terms``."""
        core = _core.InvertedIndex.build(
            batch.terms, batch.offsets, n_terms, groups=groups,
            n_groups=n_tools if groups is not None else 0,
            k1=bm25.k1, b=bm25.b, method=bm25.method,
        )
        return cls(core, n_tools)

    @classmethod
    def from_arrays(cls, arrays: dict[str, object], *, n_tools: int, bm25: Bm25Config) -> FieldIndex:
        """Adopt stored arrays (Arrow or NumPy) without copying them."""
        groups = arrays.get("doc_group")
        core = _core.InvertedIndex.from_arrays(
            arrays["indptr"], arrays["doc_ids"], arrays["tfs"], arrays["doc_len"],
            groups=groups, n_groups=n_tools if groups is not None else 0,
            k1=bm25.k1, b=bm25.b, method=bm25.method,
        )
        return cls(core, n_tools)

    @property
    def grouped(self) -> bool:
        """Whether several documents map to one tool."""
        return bool(self.core.has_groups)

    def columns(self) -> dict[str, _core.ColumnView]:
        """Zero-copy views of the stored arrays."""
        names = COLUMNS if self.grouped else COLUMNS[:-1]
        return {n: self.core.column(n) for n in names}

    def score_tools(self, batch: TermBatch, *, scale: str, threads: int) -> np.ndarray:
        """``float32[n_texts, n_tools]``: per-tool score (max over a tool's documents)."""
        return self.core.score_dense(batch.terms, batch.offsets, scale=scale, group=True, threads=threads)

    def score_docs(self, batch: TermBatch, *, scale: str, threads: int) -> np.ndarray:
        """``float32[n_texts, n_docs]``: per-document score."""
        return self.core.score_dense(batch.terms, batch.offsets, scale=scale, group=False, threads=threads)

    def topk(self, batch: TermBatch, k: int, *, scale: str, threads: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` tools per text: ``(ids int64[n, k], scores float32[n, k])``, padded with -1."""
        return self.core.topk(batch.terms, batch.offsets, k, scale=scale, group=True, threads=threads)

    def candidates(self, batch: TermBatch, text_query: np.ndarray, n_queries: int, n: int, *, scale: str,
                   group: bool = True, threads: int) -> tuple[np.ndarray, np.ndarray]:
        """Per query, the sorted union of its texts' top-``n`` ids, at the cost of the postings.

        Args:
            batch: Analysed texts (one per tool need or argument).
            text_query: ``int64[n_texts]``, the query each text belongs to, nondecreasing.
            n_queries: Number of queries (queries without texts get no candidates).
            n: Ids taken per text (only positive scores; ties by lower id).
            scale: Score scale the ranking is taken on (``raw``, ``bounded`` or ``linear``).
            group: Tool ids (max over a tool's documents) rather than document ids.
            threads: Threads for large batches; a single query never starts one.

        Returns:
            ``(ptr int64[n_queries + 1], ids int64[ptr[-1]])``: query ``q`` has
            ``ids[ptr[q]:ptr[q + 1]]``, strictly increasing.
        """
        return self.core.candidates(batch.terms, batch.offsets, text_query, n_queries, n, scale=scale,
                                    group=group, threads=threads)

    def gather(self, batch: TermBatch, text_query: np.ndarray, cand_ptr: np.ndarray, cand_ids: np.ndarray, *,
               scale: str, group: bool = True, threads: int) -> tuple[np.ndarray, np.ndarray]:
        """Scores of each text against its query's candidates, equal to :meth:`score_tools`' columns.

        Args:
            batch: Analysed texts.
            text_query: ``int64[n_texts]``, the query of each text, nondecreasing.
            cand_ptr, cand_ids: Candidates per query as CSR (``int64``; ids strictly
                increasing within a query): tool ids if ``group``, else document ids.
            scale: Score scale.
            group: Score tools (max over their documents) rather than documents.
            threads: Threads for large batches.

        Returns:
            ``(offsets int64[n_texts + 1], scores float32[offsets[-1]])``: text ``i`` of
            query ``q`` has ``scores[offsets[i]:offsets[i + 1]]``, one per
            ``cand_ids[cand_ptr[q]:cand_ptr[q + 1]]``.
        """
        return self.core.gather(batch.terms, batch.offsets, text_query, cand_ptr, cand_ids, scale=scale,
                                group=group, threads=threads)


def union_candidates(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise sorted union of several ``(ptr, ids)`` candidate CSRs over the same queries."""
    return _core.union_csr([p for p, _ in parts], [i for _, i in parts])
