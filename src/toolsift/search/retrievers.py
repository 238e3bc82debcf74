"""Per-field retrievers: find a field's best tools for each query, and score given tools.

Each field is searched by BM25 (the C++ inverted index), by dense cosine (int8
embeddings) or by a hybrid of both. A retriever answers two questions, both over a
whole batch of query texts (see :class:`~toolsift.search.plan.FieldTexts`):

* ``candidates``: per query, the union over its texts of each text's top-``n`` tools
  with a positive score, as CSR ``(ptr, tool ids)``;
* ``gather``: per text, the scores of given ids (tools, or for the parameters field the
  candidate tools' parameter documents), laid out text-major: text ``i`` of query ``q``
  gets one block with an entry for each id of ``q``.

Neither builds a ``[queries, tools]`` matrix for BM25: the engine reads the postings of
the query's terms and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..config import IndexConfig
from ..csr import ranges, sorted_unique
from ..index.dense_field import DenseField
from ..index.field_index import FieldIndex, union_candidates
from .plan import FieldTexts

__all__ = ["FieldRetriever", "dense_half", "retriever_for"]


class FieldRetriever:
    """Candidates and scores of one field (see the module docstring)."""

    def candidates(self, ft: FieldTexts, n: int, *, k: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Per query the sorted union of its texts' top-``n`` tools: ``(ptr, ids)``
        (``k``: the hits the search asks for; a retriever may go deeper for it)."""
        raise NotImplementedError

    #: The BM25 retriever of this field's lexical half (the search fuses every field's
    #: lexical work into single engine calls), or ``None`` for a purely dense field.
    lexical: Bm25Retriever | None = None

    def dense_parts(self, ft: FieldTexts, n: int, *, k: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
        """The candidate CSRs of this field's dense half (none for BM25): with the
        lexical half's, their union is :meth:`candidates`."""
        return []

    def gather(self, ft: FieldTexts, ptr: np.ndarray, ids: np.ndarray, *, docs: bool) -> np.ndarray:
        """``float32``: text-major scores of ``ids[ptr[q]:ptr[q+1]]`` for each text of
        query ``q``; ``ids`` are document ids when ``docs`` else tool ids."""
        raise NotImplementedError


class Bm25Retriever(FieldRetriever):
    """BM25 on the configured scale, computed by the C++ core from the postings."""

    def __init__(self, fi: FieldIndex, config: IndexConfig) -> None:
        self.fi = fi
        self.scale = config.scale
        self.threads = config.threads
        self.lexical = self

    def candidates(self, ft: FieldTexts, n: int, *, k: int = 0) -> tuple[np.ndarray, np.ndarray]:
        return self.fi.candidates(ft.terms, ft.owner, ft.ptr.size - 1, n, scale=self.scale, threads=self.threads)

    def gather(self, ft: FieldTexts, ptr: np.ndarray, ids: np.ndarray, *, docs: bool) -> np.ndarray:
        _, scores = self.fi.gather(ft.terms, ft.owner, ptr, ids, scale=self.scale, group=not docs,
                                   threads=self.threads)
        return scores


class DenseRetriever(FieldRetriever):
    """Cosine of int8 embeddings; a tool's score is the max over its documents."""

    #: Makes :attr:`null_floor` on first use (set by :func:`toolsift.search.retrievers`
    #: to :func:`.evidence.null_floor` of this retriever); ``None``: the floor is 0.
    floor_source: Callable[[], float] | None = None

    @property
    def null_floor(self) -> float:
        """The cosine a candidate it adds must beat to count as matched (.evidence),
        made by :attr:`floor_source` on first use and kept (two first searches racing
        make the same value)."""
        got = self.__dict__.get("_null_floor")
        if got is None:
            got = self.__dict__["_null_floor"] = self.floor_source() if self.floor_source is not None else 0.0
        return got

    @null_floor.setter
    def null_floor(self, value: float) -> None:
        self.__dict__["_null_floor"] = value

    def __init__(self, dn: DenseField, *, floor_docs: bool, nprobe: int | None = None,
                 adds_candidates: bool = True) -> None:
        self.dn = dn
        self.nprobe = nprobe
        # IndexConfig.dense_candidates_from: a field left out scores candidates, adds none.
        self.adds_candidates = adds_candidates
        # A parameter's similarity means "how well some argument matches it": a negative
        # cosine would pull the parameter score below that of a parameter nobody matched.
        self.floor_docs = floor_docs
        #: Tool ``t`` owns rows ``tool_ptr[t]:tool_ptr[t+1]`` (None: row ``t`` is tool ``t``).
        #: ``tool_rows`` is the same pointer as the engine takes it, checked once
        #: (``_core.RowPtr``; ``tool_ptr`` is a read-only view of it): the fused search
        #: would otherwise copy and check the whole array on every search, 8 MB at 1M tools.
        self.tool_ptr: np.ndarray | None = None
        self.tool_rows: object = None
        if dn.groups is not None:
            ptr = np.searchsorted(dn.groups, np.arange(dn.n_tools + 1)).astype(np.int64)
            from .. import _core

            row_ptr = getattr(_core, "RowPtr", None)  # (a core built before it: the array)
            self.tool_rows = row_ptr(ptr) if row_ptr is not None else ptr
            self.tool_ptr = np.asarray(self.tool_rows) if row_ptr is not None else ptr

    def candidates(self, ft: FieldTexts, n: int, *, k: int = 0) -> tuple[np.ndarray, np.ndarray]:
        nq = ft.ptr.size - 1
        if not ft.texts:
            return np.zeros(nq + 1, np.int64), np.zeros(0, np.int64)
        if self.dn.ivf is not None:
            # A large field: score only the rows of each text's nprobe nearest lists.
            assert ft.vectors is not None  # planned for a dense field
            tops = self.dn.top_tools_ivf(ft.vectors, n, self.nprobe)
        else:
            # Without an IVF, dense candidates need every (non-empty) document's score:
            # there are no postings to skip with.
            tops = self.dn.top_tools(*_codes(ft), n)
        if nq == 1 and len(tops) == 1:
            # One query, one text (a raw query): its tools are distinct already.
            ids = np.sort(tops[0])
            return np.array([0, ids.size], np.int64), ids
        sizes = np.fromiter((t.size for t in tops), np.int64, count=len(tops))
        ids = np.concatenate(tops) if tops else np.zeros(0, np.int64)
        return _csr_unique(np.repeat(ft.owner, sizes), ids, nq)

    def dense_parts(self, ft: FieldTexts, n: int, *, k: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
        return [self.candidates(ft, n, k=k)] if self.adds_candidates else []

    def gather(self, ft: FieldTexts, ptr: np.ndarray, ids: np.ndarray, *, docs: bool) -> np.ndarray:
        owner = ft.owner
        if owner.size == 1 and ptr.size == 2 and ptr[0] == 0:
            # One query with one text (a raw query): its block is the ids as they are.
            text_ptr, per_text = ptr, ids
        else:
            counts = np.diff(ptr)[owner]
            text_ptr = np.zeros(owner.size + 1, np.int64)
            np.cumsum(counts, out=text_ptr[1:])
            per_text = ids[ranges(ptr[owner], counts)]
        if not per_text.size or not self.dn.any_live():
            # Nothing to gather, or every document empty: every similarity is 0.
            return np.zeros(per_text.size, np.float32)
        from ..kernels.int8 import gather_trusted as int8_gather

        q_codes, q_scales = _codes(ft)
        m = self.dn.matrix
        if docs or self.tool_ptr is None:
            out = int8_gather(q_codes, q_scales, m.codes, m.scales, text_ptr, per_text)
            return np.maximum(out, 0.0, out=out) if docs and self.floor_docs else out
        # Grouped field (one row per example intent): score every document of each
        # candidate tool, then take the max per tool (0 for a tool with no documents).
        lo, hi = self.tool_ptr[per_text], self.tool_ptr[per_text + 1]
        n_docs = hi - lo
        doc_rows = ranges(lo, n_docs)
        cum = np.zeros(n_docs.size + 1, np.int64)
        np.cumsum(n_docs, out=cum[1:])
        doc_ptr = cum[text_ptr]
        sims = int8_gather(q_codes, q_scales, m.codes, m.scales, doc_ptr, doc_rows)
        out = np.zeros(per_text.size, np.float32)
        has = n_docs > 0
        starts = np.zeros(per_text.size, np.int64)
        np.cumsum(n_docs[:-1], out=starts[1:])
        if has.any():
            out[has] = np.maximum.reduceat(sims, starts[has])
        return out


class HybridRetriever(FieldRetriever):
    """``w``·BM25 + (1 − ``w``)·max(cosine, 0), on the bounded or linear BM25 scale.

    Candidates: each text's top-``n`` by BM25 and its top-``dense_depth`` (at least
    ``k``) by cosine. Every document has a cosine, so the dense list's tail is tools
    that match nothing else well; with half the field score from BM25 they do not reach
    the top (IndexConfig.dense_candidates, docs/dense.md "Dense candidates").
    """

    def __init__(self, bm25: Bm25Retriever, dense: DenseRetriever, weight: float, *, dense_depth: int) -> None:
        self.bm25, self.dense, self.weight = bm25, dense, weight
        self.lexical = bm25
        self.dense_depth = dense_depth
        # A field whose documents are all empty (no tool has an example intent, say)
        # has cosine 0 everywhere: its dense half adds no candidate and no score, so it
        # is not searched at all.
        self.dense_empty = not dense.dn.any_live()

    def candidates(self, ft: FieldTexts, n: int, *, k: int = 0) -> tuple[np.ndarray, np.ndarray]:
        return merge_csr([self.bm25.candidates(ft, n), *self.dense_parts(ft, n, k=k)])

    def dense_parts(self, ft: FieldTexts, n: int, *, k: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
        if self.dense_empty:
            return []
        # The dense half's own rule (IndexConfig.dense_candidates_from), at the hybrid depth.
        return self.dense.dense_parts(ft, max(self.dense_depth, k), k=k)

    def gather(self, ft: FieldTexts, ptr: np.ndarray, ids: np.ndarray, *, docs: bool) -> np.ndarray:
        bm = self.bm25.gather(ft, ptr, ids, docs=docs).astype(np.float32, copy=False)
        # An all-empty dense half has cosine 0 everywhere: nothing to gather.
        self.mix(bm, None if self.dense_empty else self.dense.gather(ft, ptr, ids, docs=docs))
        return bm

    def mix(self, bm: np.ndarray, cos: np.ndarray | None) -> None:
        """``bm`` ← ``w``·``bm`` + (1 − ``w``)·max(``cos``, 0), in float32 and in place
        (``cos`` is overwritten; ``None``: an all-empty dense half, cosine 0). The one
        definition of the hybrid field score."""
        np.multiply(bm, np.float32(self.weight), out=bm)
        if cos is not None:
            np.maximum(cos, np.float32(0.0), out=cos)
            np.multiply(cos, np.float32(1.0 - self.weight), out=cos)
            np.add(bm, cos, out=bm)


def retriever_for(field: str, fi: FieldIndex, dn: DenseField | None, config: IndexConfig) -> FieldRetriever:
    """The retriever ``config`` asks for on ``field``."""
    kind = config.retriever(field)
    if kind == "bm25":
        return Bm25Retriever(fi, config)
    assert dn is not None  # a dense or hybrid field has its vectors
    dense = DenseRetriever(dn, floor_docs=(kind == "dense"), nprobe=config.ivf_nprobe,
                           adds_candidates=field in config.dense_candidates_from)
    if kind == "dense":
        return dense
    return HybridRetriever(Bm25Retriever(fi, config), dense, config.hybrid_weight,
                           dense_depth=config.dense_candidates)


def dense_half(r: FieldRetriever) -> DenseRetriever | None:
    """The dense retriever of ``r`` (itself, or a hybrid's dense half), or ``None``."""
    if isinstance(r, HybridRetriever):
        return r.dense
    return r if isinstance(r, DenseRetriever) else None


def merge_csr(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Per query the sorted union of several CSR id lists over the same queries."""
    if len(parts) == 1:
        return parts[0]
    return union_candidates(parts)


def _codes(ft: FieldTexts) -> tuple[np.ndarray, np.ndarray]:
    """The int8 codes of a field's query vectors (quantized once by the plan)."""
    if ft.codes is not None:
        return ft.codes
    from ..kernels.int8 import quantize_rows

    return quantize_rows(np.ascontiguousarray(ft.vectors, dtype=np.float32))


def _csr_unique(rows: np.ndarray, ids: np.ndarray, nq: int) -> tuple[np.ndarray, np.ndarray]:
    ids = ids.astype(np.int64, copy=False)
    if not ids.size:
        return np.zeros(nq + 1, np.int64), np.zeros(0, np.int64)
    if nq == 1:
        # A single search: no row keys to encode.
        keys = sorted_unique(ids)
        return np.array([0, keys.size], np.int64), keys
    span = int(ids.max()) + 1
    keys = sorted_unique(rows.astype(np.int64) * span + ids)
    ptr = np.searchsorted(keys // span, np.arange(nq + 1)).astype(np.int64)
    return ptr, keys % span
