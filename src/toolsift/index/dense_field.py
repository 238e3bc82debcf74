"""One field's dense index: int8 embeddings of its documents, scored per tool.

The documents are exactly the field's BM25 documents (one per description, response,
example intent or parameter), so a hybrid field mixes two scores of the same texts.
Cosine similarities come from int8 dot products with int32 accumulation
(:mod:`toolsift.kernels.int8`); a tool's score in a multi-document field is the max over
its documents, as for BM25. A large field may carry an IVF index
(:mod:`toolsift.index.ivf`) so that its candidates come without a full scan.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from ..kernels.buffers import aligned_empty
from ..progress import progress_counter
from .dense import Int8Matrix, freeze

if TYPE_CHECKING:
    from .ivf import IvfIndex

# The int8 kernels (the C++ core's) are imported where a field is built or scanned.

__all__ = ["DenseField", "encode_int8", "encode_int8_into", "encode_texts"]

_NO_GROUPS = np.zeros(0, np.int64)  # top_positive_trusted's "every row is its own tool"

#: Rows from which a field's exact top-n scan goes through the 4-bit prefilter
#: (``_core.int8_coarse``): below it the int8 rows fit in L2 and are read as fast as the
#: 4-bit codes (docs/results/dense-scan-2026-11-28.md).
COARSE_MIN_ROWS = 4096
#: Scores (float32) a grouped field's exact scan holds at once: query rows are scanned a
#: block at a time (16 MB), whatever their number.
_SCAN_BLOCK = 1 << 22
#: Whether top_tools uses the prefilter (the results are the same either way; off only
#: to measure the scan without it).
PREFILTER = True
#: Scans of a field that go without the prefilter before it is built. At the 6,417 pooled
#: tools building it took 5.4 ms of CPU idle and 6.8 ms busy, and a scan for 30 tools 128
#: -> 70 µs idle, 580 -> 263 µs busy (docs/results/first-query-2026-11-28b.md): it pays
#: back after ~90 scans idle, ~20 busy. A short process (a CLI search, a fresh process's
#: first queries) scans without it; a service builds it early on.
COARSE_AFTER_SCANS = 64


# Texts per encoder call when a progress bar is shown: enough batches to keep every
# encoder thread busy, few enough that the bar moves every few seconds.
_PROGRESS_SLICE = 256
# Texts per encoder call otherwise: large enough for an encoder's own batching, small
# enough that one slice's float vectors stay small (16k x 384 floats: 25 MB).
_SLICE = 16_384


def encode_texts(encoder, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
    """Embeddings of ``texts`` (unit rows); empty texts get a zero row, so they match
    nothing, as an empty text matches nothing in BM25. Duplicates are encoded once.

    ``encoder`` is any object with ``dim`` and ``encode(list[str]) -> float32[n, dim]``.
    ``progress`` shows a bar (texts done, rate, ETA) once the work outlasts a second.
    """
    if len(texts) == 1 and not progress and texts[0].strip():
        # One query text (a raw search): straight to the encoder.
        return np.asarray(encoder.encode(list(texts)), dtype=np.float32)
    uniq, row = _distinct(texts)
    if uniq and not progress and len(uniq) <= _SLICE and (row >= 0).all():
        # A search's few query texts, none blank: one encoder call, no slicing or bar
        # (their bookkeeping cost a third of a static query's encoding).
        return np.asarray(encoder.encode(uniq), dtype=np.float32)[row]
    out = np.zeros((len(texts), encoder.dim), dtype=np.float32)
    if uniq:
        emb = np.empty((len(uniq), encoder.dim), dtype=np.float32)
        for s, vecs in _encode_slices(encoder, uniq, progress=progress):
            emb[s:s + len(vecs)] = vecs
        has = row >= 0
        out[has] = emb[row[has]]
    return out


def encode_int8(encoder, texts: Sequence[str], *, progress: bool = False) -> Int8Matrix:
    """As :func:`encode_texts`, quantized: ``Int8Matrix.quantize(encode_texts(...))`` row
    for row, but a slice of float vectors at a time, so a build never holds a float32
    copy of every document (4.6 GB for three fields of a million tools)."""
    codes = aligned_empty((len(texts), encoder.dim), np.int8, zeros=True)  # aligned for the scan
    scales = np.zeros(len(texts), dtype=np.float32)
    encode_int8_into(encoder, texts, codes, scales, progress=progress)
    return Int8Matrix(freeze(codes), freeze(scales))


def encode_int8_into(encoder, texts: Sequence[str], codes: np.ndarray, scales: np.ndarray, *,
                     progress: bool = False) -> None:
    """Write the quantized rows of ``texts`` into ``codes[i]`` and ``scales[i]`` (what
    :func:`encode_int8` returns), each distinct text encoded once; rows of blank texts
    are not written (in a zero-filled buffer they stay zero and their pages untouched).

    Each slice of distinct texts is quantized and scattered to its rows at once: no
    matrix of the distinct texts' codes beside the output, no second copy of the rows
    (at a million tools those were 0.5 GB each)."""
    from ..kernels.int8 import quantize_rows

    uniq, row = _distinct(texts)
    if not uniq:
        return
    has = np.flatnonzero(row >= 0)
    order = has[np.argsort(row[has], kind="stable")]  # rows grouped by their distinct text
    key = row[order]
    for s, vecs in _encode_slices(encoder, uniq, progress=progress):
        q_codes, q_scales = quantize_rows(vecs)
        lo, hi = np.searchsorted(key, (s, s + len(vecs)))
        at, src = order[lo:hi], key[lo:hi] - s
        codes[at], scales[at] = q_codes[src], q_scales[src]


def _distinct(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The distinct non-blank texts, and per text its position among them (-1: blank)."""
    pos: dict[str, int] = {}
    row = np.fromiter((pos.setdefault(t, len(pos)) if t.strip() else -1 for t in texts),
                      dtype=np.int64, count=len(texts))
    return list(pos), row


def _encode_slices(encoder, uniq: list[str], *, progress: bool):
    """``(start, float32 vectors)`` of ``uniq``, a slice at a time."""
    step = _PROGRESS_SLICE if progress and len(uniq) > _PROGRESS_SLICE else _SLICE
    with progress_counter(progress and step < len(uniq), "embed", total=len(uniq), unit="text") as bar:
        for s in range(0, len(uniq), step):
            vecs = encoder.encode(uniq[s:s + step])
            bar.update(len(vecs))
            yield s, vecs


class DenseField:
    """Int8 document embeddings of one field and the document -> tool map.

    Args:
        matrix: One row per document.
        groups: Tool of each document (``None``: document ``i`` is tool ``i``).
        n_tools: Number of tools.
        ivf: Optional IVF index over ``matrix`` for candidates without a full scan.
    """

    def __init__(self, matrix: Int8Matrix, groups: np.ndarray | None, n_tools: int, *,
                 ivf: IvfIndex | None = None) -> None:
        n_docs = matrix.codes.shape[0]
        if groups is None and n_docs != n_tools:
            raise ValueError(f"dense field has {n_docs} documents for {n_tools} tools")
        if groups is not None and groups.shape[0] != n_docs:
            raise ValueError(f"dense field has {n_docs} documents but {groups.shape[0]} group entries")
        self.matrix = matrix
        self.groups = None if groups is None else np.ascontiguousarray(groups, dtype=np.int64)
        # Checked once here, so that a search may select tools unchecked (top_tools).
        if self.groups is not None and self.groups.size and (
                int(self.groups.min()) < 0 or int(self.groups.max()) >= n_tools):
            raise ValueError(f"dense field groups must lie in 0..{n_tools - 1}")
        self.n_tools = n_tools
        if ivf is not None and ivf.matrix is not matrix:
            raise ValueError("a dense field's IVF must index the field's own matrix")
        self.ivf = ivf

    def with_ivf(self, ivf: IvfIndex | None) -> DenseField:
        """The same field with another IVF index (or none)."""
        return DenseField(self.matrix, self.groups, self.n_tools, ivf=ivf)

    @classmethod
    def build(cls, encoder, texts: Sequence[str], groups: np.ndarray | None, n_tools: int) -> DenseField:
        """Embed and quantize ``texts``."""
        return cls(encode_int8(encoder, texts), groups, n_tools)

    def score_docs(self, queries: np.ndarray) -> np.ndarray:
        """``float32[m, n_docs]`` cosine similarities of unit query rows."""
        if self.matrix.codes.shape[0] == 0 or queries.shape[0] == 0:
            return np.zeros((queries.shape[0], self.matrix.codes.shape[0]), dtype=np.float32)
        from ..kernels.int8 import quantize_rows, scan

        q_codes, q_scales = quantize_rows(np.ascontiguousarray(queries, dtype=np.float32))
        return scan(q_codes, q_scales, self.matrix.codes, self.matrix.scales)

    def score_tools(self, queries: np.ndarray) -> np.ndarray:
        """``float32[m, n_tools]``: per tool the max over its documents (0 if none)."""
        docs = self.score_docs(queries)
        if self.groups is None:
            return docs
        out = np.zeros((docs.shape[0], self.n_tools), dtype=np.float32)
        if docs.shape[1]:
            # Documents are stored grouped by tool in catalogue order: a segmented max.
            starts = np.flatnonzero(np.r_[True, self.groups[1:] != self.groups[:-1]])
            out[:, self.groups[starts]] = np.maximum.reduceat(docs, starts, axis=1)
        return out

    def any_live(self) -> bool:
        """Whether any document is not empty (a non-zero row), without the compact copy
        :meth:`live_rows` makes: a mostly-empty field that is only gathered from (the
        hybrid preset's response) never needs that copy (~113 MB at 1M tools)."""
        got = self.__dict__.get("_any_live")
        if got is None:
            got = self.__dict__["_any_live"] = bool((self.matrix.scales > 0).any())
        return got

    def live_rows(self) -> tuple[np.ndarray, Int8Matrix]:
        """``(row ids, matrix)`` of the documents that are not empty (an empty text is a
        zero row that matches nothing); the matrix is the field's own when every row is
        live, else a compact copy of the live rows, made once."""
        got = self.__dict__.get("_live")
        if got is None:
            live = freeze(np.flatnonzero(self.matrix.scales > 0))  # read in place by the core
            m = self.matrix if live.size == self.matrix.n_rows else \
                Int8Matrix(freeze(np.take(self.matrix.codes, live, axis=0,
                                          out=aligned_empty((live.size, self.matrix.dim), np.int8))),
                           freeze(np.ascontiguousarray(self.matrix.scales[live])))
            got = self.__dict__["_live"] = (live, m)  # same value if two first searches race
        return got

    def coarse(self):
        """The exact prefilter of :meth:`live_rows`' matrix (``_core.Int8Coarse``: 4-bit
        codes and a bound per row; toolsift/int8_coarse.h), made once; ``None`` where it
        does not pay (under :data:`COARSE_MIN_ROWS` rows) or this CPU lacks its
        instructions (AVX-512 VBMI and VNNI). :meth:`top_tools` asks for it from its
        ``COARSE_AFTER_SCANS + 1``-th scan on."""
        got = self.__dict__.get("_coarse", False)
        if got is False:
            from .. import _core

            live, m = self.live_rows()
            got = None
            if live.size >= COARSE_MIN_ROWS and _core.int8_coarse_supported() and 0 < m.dim <= 8192:
                got = _core.int8_coarse(m.codes, m.scales)
            self.__dict__["_coarse"] = got  # same value if two first searches race
        return got

    def _scan_coarse(self):
        """The prefilter for this scan: none for the first :data:`COARSE_AFTER_SCANS`
        (the same result either way). Concurrent scans may miscount a few: harmless."""
        if not PREFILTER:
            return None
        scans = self.__dict__.get("_scans", 0)
        if scans < COARSE_AFTER_SCANS:
            self.__dict__["_scans"] = scans + 1
            return None
        return self.coarse()

    def top_tools(self, q_codes: np.ndarray, q_scales: np.ndarray, n: int) -> list[np.ndarray]:
        """Per query row (int8 codes and scales, as :func:`quantize_rows` makes them), its
        best ``n`` tools with a positive score (best first for a field with a row per
        tool, else unordered; ties to the lower tool id; a tool scores as its best
        document), from an exact scan of the non-empty documents."""
        from ..kernels.int8 import scan_trusted, top_trusted

        live, m = self.live_rows()
        if not live.size or not q_codes.shape[0]:
            return [np.zeros(0, np.int64) for _ in range(q_codes.shape[0])]
        # Unchecked kernels: the matrix, rows and groups are this field's own, checked
        # when it was made, and the query codes come from quantize_rows.
        if self.groups is None:  # a row is a tool: scan and select in one pass
            return top_trusted(q_codes, q_scales, m.codes, m.scales, live, n, coarse=self._scan_coarse())
        from ..kernels.select import top_positive_trusted

        # A few query rows at a time: 200 null-floor texts against 294,823 response rows
        # were a 236 MB score matrix at once (the peak of a 1M index's save).
        step = max(1, _SCAN_BLOCK // max(live.size, 1))
        out = []
        for a in range(0, q_codes.shape[0], step):
            scores = scan_trusted(q_codes[a:a + step], q_scales[a:a + step], m.codes, m.scales)
            out += [top_positive_trusted(row, live, self.groups, self.n_tools, n) for row in scores]
        return out

    def top_tools_ivf(self, queries: np.ndarray, n: int, nprobe: int | None) -> list[np.ndarray]:
        """Per query row, its best ``n`` tools with a positive score among the rows of
        its ``nprobe`` best IVF lists (``None``: :meth:`IvfIndex.probes_for
        <toolsift.index.ivf.IvfIndex.probes_for>`'s default; unordered; a tool scores as
        its best probed row).

        Raises:
            ValueError: The field has no IVF index.
        """
        if self.ivf is None:
            raise ValueError("dense field has no IVF index")
        if self.groups is None:  # a row is a tool: probe and select in one pass
            return self.ivf.probe_top(queries, n, nprobe)
        from ..kernels.select import top_positive_trusted

        ptr, scores, rows = self.ivf.probe(queries, nprobe)
        # The probed rows are this field's own (its lists), so the selection runs
        # unchecked, as for a full scan.
        groups = _NO_GROUPS if self.groups is None else self.groups
        return [top_positive_trusted(scores[a:b], rows[a:b], groups, self.n_tools, n) for a, b in pairwise(ptr)]
