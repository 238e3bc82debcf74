"""IVF index over one dense field's int8 matrix: candidates without a full scan.

A large dense field (``IndexConfig.ivf_min_docs`` documents or more) gets coarse
centroids, fitted by spherical k-means on a sample of its rows, and one inverted list of
row ids per centroid (every row with a non-zero vector sits in the list of its nearest
centroid; an all-zero row, an empty text, scores 0 and can never be a candidate, so it
is in no list). A query scores the centroids (one small float32 matmul), takes its
``nprobe`` best lists and scores their rows exactly with the C++ core's int8 dot product
(``_core.int8_probe``, the scan's); the best of those are its candidates.
Candidates are then rescored exactly by the field's gather path, as before.

The lists hold row ids, not a second copy of the rows: a probe reads the listed rows'
4-bit prefilter in list order and the few int8 rows it cannot rule out from the field's
matrix (:meth:`IvfIndex.probe_top`). Saved as ``ivf.<field>.arrow`` beside
``dense.<field>.arrow`` (one row of list columns, memory-mapped on load, no copy). Updates keep the lists exact: rows of kept
tools keep their list, new rows go to their nearest centroid, removed rows leave; the
centroids are refitted only when the number of listed rows has more than doubled or
halved since they were fitted (docs/dense.md, "Large catalogues").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from .. import _core
from ..csr import ptr_from_counts, ranges
# The Numba kernels (quantize, assign) are imported where used: importing this module
# (every index load does) must not import Numba.
from ..kernels.buffers import aligned_empty, freeze, frozen
from ..kernels.launch import SERIAL_WORK, current_threads, launch
from .dense import Int8Matrix
from .arrowcols import column
from .store import column_values

if TYPE_CHECKING:
    from ..config import IndexConfig
    from .dense_field import DenseField

__all__ = ["IvfIndex", "fields_with_ivf", "fit_centroids", "n_lists_for", "tool_rows", "update_ivf"]

#: k-means iterations on the sample (spherical k-means converges in a few; more did
#: not change recall measurably, docs/dense.md).
KMEANS_ITERS = 8
#: Sample rows per centroid for the fit (FAISS warns below 39).
SAMPLE_PER_LIST = 48
#: Rows per chunk of the float32 similarity matrix during the fit (bounds its memory).
_FIT_CHUNK = 8192
#: Refit the centroids when the listed rows grow or shrink by this factor since the fit.
DRIFT = 2.0
#: ``IndexConfig.ivf_nprobe=None`` probes 1/PROBE_SHARE of the lists, at most AUTO_PROBES:
#: the same share of the rows at every size up to the cap (docs/dense.md, "IVF from a
#: thousand documents").
PROBE_SHARE = 8
AUTO_PROBES = 64


def n_lists_for(n_rows: int) -> int:
    """Number of lists for ``n_rows`` listed rows: about sqrt(n), at least 1, and at
    most one per :data:`SAMPLE_PER_LIST` rows (so every centroid has data to fit)."""
    if n_rows <= 0:
        return 1
    return int(max(1, min(round(math.sqrt(n_rows)), n_rows // SAMPLE_PER_LIST)))


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0).astype(x.dtype)


def _nearest(x: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best centroid (by dot product) of each float row, chunked."""
    lab = np.empty(x.shape[0], np.int64)
    best = np.empty(x.shape[0], np.float32)
    for s in range(0, x.shape[0], _FIT_CHUNK):
        sims = x[s:s + _FIT_CHUNK] @ c.T
        lab[s:s + _FIT_CHUNK] = np.argmax(sims, axis=1)
        best[s:s + _FIT_CHUNK] = sims[np.arange(sims.shape[0]), lab[s:s + _FIT_CHUNK]]
    return lab, best


def fit_centroids(x: np.ndarray, k: int, *, iters: int = KMEANS_ITERS, seed: int = 0) -> np.ndarray:
    """Spherical k-means: ``k`` unit centroids of unit rows ``x`` (float32), started by
    k-means++ seeding (random starts put two seeds in one cluster and merge two others
    for good); an emptied centroid restarts at the row its centroid fits worst."""
    rng = np.random.default_rng(seed)
    x = np.ascontiguousarray(x, dtype=np.float32)
    k = min(k, x.shape[0])
    c = _kmeanspp(x, k, rng)
    for _ in range(iters):
        lab, best = _nearest(x, c)
        counts = np.bincount(lab, minlength=k)
        order = np.argsort(lab, kind="stable")
        full = counts > 0
        sums = np.zeros_like(c)
        starts = ptr_from_counts(counts)[:-1][full]
        sums[full] = np.add.reduceat(x[order], starts, axis=0)
        empty = np.flatnonzero(~full)
        if empty.size:
            sums[empty] = x[np.argsort(best)[:empty.size]]
        c = _unit(sums)
    return c


def _kmeanspp(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeds on the sphere: each next seed drawn with probability proportional
    to the squared cosine distance ``(1 - best similarity)^2`` to the seeds so far."""
    picks = [int(rng.integers(x.shape[0]))]
    best = x @ x[picks[0]]
    for _ in range(1, k):
        w = np.square(np.maximum(1.0 - best, 0.0), dtype=np.float64)
        total = w.sum()
        j = int(rng.choice(x.shape[0], p=w / total)) if total > 0 else int(rng.integers(x.shape[0]))
        picks.append(j)
        np.maximum(best, x @ x[j], out=best)
    return x[picks].copy()


class IvfIndex:
    """Coarse centroids and inverted lists over the rows of one :class:`Int8Matrix`.

    The lists hold row ids only: a probe reads the 4-bit prefilter of the listed rows in
    list order (:meth:`coarse`) and the few int8 rows it cannot rule out from the field's
    own matrix. Where this CPU lacks the prefilter's instructions (or a list is probed for
    every row's score, :meth:`probe`), a list-order copy of the rows is made on first use,
    as every index kept before format 3 (a probed list one contiguous stretch of memory).

    Attributes:
        centroids: ``float32[k, d]`` unit rows.
        list_ptr: ``int64[k + 1]``, CSR pointer into ``list_ids``.
        list_ids: ``int64[n_listed]`` matrix rows, ascending within each list.
        matrix: The field's matrix the lists index.
        n_fit: Listed rows when the centroids were fitted (for the drift rule).
    """

    __slots__ = ("_coarse", "_keepalive", "_lists", "cent_codes", "cent_scales", "centroids", "list_ids", "list_ptr",
                 "matrix", "n_fit")

    def __init__(self, centroids: np.ndarray, list_ptr: np.ndarray, list_ids: np.ndarray, matrix: Int8Matrix, *,
                 n_fit: int, _keepalive: object = None) -> None:
        k = centroids.shape[0]
        if centroids.ndim != 2 or k == 0:
            raise ValueError(f"IVF centroids must be a non-empty 2-D array, got shape {centroids.shape}")
        if list_ptr.shape != (k + 1,) or list_ptr[0] != 0 or list_ptr[-1] != list_ids.size \
                or (np.diff(list_ptr) < 0).any():
            raise ValueError(f"IVF list_ptr does not delimit {list_ids.size} row ids in {k} lists")
        if matrix.dim != centroids.shape[1]:
            raise ValueError(f"IVF centroids have dimension {centroids.shape[1]}, the matrix {matrix.dim}")
        if list_ids.size and (int(list_ids.min()) < 0 or int(list_ids.max()) >= matrix.n_rows):
            raise ValueError(f"IVF list_ids point outside the matrix's {matrix.n_rows} rows")
        self.centroids = np.ascontiguousarray(centroids, dtype=np.float32)
        # Read in place by the C++ probe without the GIL: kept read-only (a writable
        # array is copied; from_labels hands over fresh ones frozen).
        self.list_ptr = frozen(np.ascontiguousarray(list_ptr, dtype=np.int64))
        self.list_ids = frozen(np.ascontiguousarray(list_ids, dtype=np.int64))
        self.matrix = matrix
        self.n_fit = int(n_fit)
        # Centroids quantized like the rows, for the int8 assignment kernel.
        from ..kernels.int8 import quantize_rows

        codes, scales = quantize_rows(self.centroids)
        self.cent_codes, self.cent_scales = freeze(codes), freeze(scales)
        self._keepalive = _keepalive
        self._coarse: object = False  # not made yet (coarse())
        self._lists: Int8Matrix | None = None  # the list-order copy, made only where needed (lists())

    @property
    def n_lists(self) -> int:
        """Number of lists (centroids)."""
        return int(self.centroids.shape[0])

    def __repr__(self) -> str:
        return f"IvfIndex(n_lists={self.n_lists}, rows={self.list_ids.size}, dim={self.centroids.shape[1]})"

    # ---------------------------------------------------------------- building

    @classmethod
    def fit(cls, matrix: Int8Matrix, *, n_lists: int | None = None, seed: int = 0) -> IvfIndex:
        """Fit centroids on a sample of ``matrix``'s non-zero rows and list every such row.

        Args:
            matrix: The field's int8 matrix.
            n_lists: Number of lists (default :func:`n_lists_for` of the non-zero rows).
            seed: Seed of the sample and of the k-means start.
        """
        live = np.flatnonzero(matrix.scales > 0)
        k = n_lists or n_lists_for(live.size)
        if live.size == 0:  # nothing can ever be a candidate: one empty list
            return cls.from_labels(np.eye(1, matrix.dim, dtype=np.float32), np.full(matrix.n_rows, -1, np.int64),
                                   matrix, n_fit=0)
        rng = np.random.default_rng(seed)
        size = min(live.size, k * SAMPLE_PER_LIST)
        sample = np.sort(rng.choice(live, size, replace=False)) if size < live.size else live
        x = _unit(matrix.codes[sample].astype(np.float32))
        cent = fit_centroids(x, k, seed=seed)
        # Every row at once (no copy of the live rows); zero rows then leave the lists.
        labels = _assign(matrix.codes, cent)
        labels[matrix.scales <= 0] = -1
        return cls.from_labels(cent, labels, matrix, n_fit=live.size)

    @classmethod
    def from_labels(cls, centroids: np.ndarray, labels: np.ndarray, matrix: Int8Matrix, *, n_fit: int) -> IvfIndex:
        """Lists from each row's list (``-1``: in no list) over ``matrix``."""
        k = centroids.shape[0]
        listed = np.flatnonzero(labels >= 0)
        lab = labels[listed]
        order = np.argsort(lab, kind="stable")  # stable: rows stay ascending in each list
        ids = listed[order]
        return cls(centroids, freeze(ptr_from_counts(np.bincount(lab, minlength=k))), freeze(ids), matrix,
                   n_fit=n_fit)

    def lists(self) -> Int8Matrix:
        """The listed rows' codes and scales in list order (a copy, made once): what the
        plain probes read, where the prefilter is not used."""
        got = self._lists
        if got is None:
            ids, m = self.list_ids, self.matrix
            got = Int8Matrix(freeze(np.take(m.codes, ids, axis=0, out=aligned_empty((ids.size, m.dim), np.int8))),
                             freeze(np.ascontiguousarray(m.scales[ids])))
            self._lists = got  # same value if two first searches race
        return got

    def labels(self, n_rows: int) -> np.ndarray:
        """``int64[n_rows]``: each row's list, ``-1`` for rows in no list."""
        out = np.full(n_rows, -1, np.int64)
        out[self.list_ids] = np.repeat(np.arange(self.n_lists, dtype=np.int64), np.diff(self.list_ptr))
        return out

    # ---------------------------------------------------------------- search

    def probes_for(self, nprobe: int | None) -> int:
        """Lists a query probes for ``IndexConfig.ivf_nprobe`` = ``nprobe``: that many
        (at least one, at most every list), or for ``None`` one list in
        :data:`PROBE_SHARE`, rounded up, at most :data:`AUTO_PROBES`."""
        k = self.n_lists
        if nprobe is None:
            return min(AUTO_PROBES, -(-k // PROBE_SHARE))
        return min(max(int(nprobe), 1), k)

    def probe(self, queries: np.ndarray, nprobe: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Exact int8 scores of every row in each query's ``nprobe`` best lists.

        Args:
            queries: ``float32[m, d]`` unit query rows.
            nprobe: Lists probed per query (capped at the number of lists).

        Returns:
            ``(ptr int64[m+1], scores float32, rows int64)``: query ``i``'s probed rows
            and their scores are ``rows[ptr[i]:ptr[i+1]]``, ``scores[...]``.
        """
        q_codes, q_scales, probe_ptr, probes, threads = self._probes(queries, nprobe)
        # The probed lists' rows, scored by the C++ core's int8 dot product (the scan's).
        lists = self.lists()
        return _core.int8_probe(q_codes, q_scales, lists.codes, lists.scales, self.list_ptr,
                                self.list_ids, probe_ptr, probes, threads=threads)

    def probe_top(self, queries: np.ndarray, n: int, nprobe: int | None) -> list[np.ndarray]:
        """Per query row, the best ``n`` row ids with a positive score among the rows of
        its ``nprobe`` best lists (unordered; ties to the lower id): :meth:`probe` and that
        selection in one pass of the C++ core, without a score per probed row."""
        q_codes, q_scales, probe_ptr, probes, threads = self._probes(queries, nprobe)
        from .dense_field import PREFILTER

        coarse = self.coarse() if PREFILTER else None
        if coarse is not None:
            # The listed rows' 4-bit codes in list order; the int8 rows read from the matrix.
            ids, counts = _core.int8_probe_top_rows(q_codes, q_scales, self.matrix.codes, self.matrix.scales,
                                                    self.list_ptr, self.list_ids, probe_ptr, probes, max(int(n), 1),
                                                    threads=threads, coarse=coarse)
        else:
            lists = self.lists()
            ids, counts = _core.int8_probe_top(q_codes, q_scales, lists.codes, lists.scales, self.list_ptr,
                                               self.list_ids, probe_ptr, probes, max(int(n), 1), threads=threads)
        return [ids[i, :c] for i, c in enumerate(counts.tolist())]

    def coarse(self):
        """The exact 4-bit prefilter of the listed rows in list order (``_core.Int8Coarse``
        over ``matrix.codes[list_ids]``, as :meth:`DenseField.coarse
        <toolsift.index.dense_field.DenseField.coarse>` makes for a scan), made on first
        use; ``None`` where it does not pay (under ``COARSE_MIN_ROWS`` listed rows) or
        this CPU lacks its instructions. With it a probe reads a probed list's 4-bit codes
        and only the int8 rows whose bound can still make the top n, from the matrix: the
        same ids (docs/results/ivf-query-2026-11-28.md)."""
        got = self._coarse
        if got is False:
            from .dense_field import COARSE_MIN_ROWS

            got = None
            d = self.matrix.dim
            if self.list_ids.size >= COARSE_MIN_ROWS and _core.int8_coarse_supported() and 0 < d <= 8192:
                got = _core.int8_coarse(self.matrix.codes, self.matrix.scales, rows=self.list_ids)
            self._coarse = got  # same value if two first searches race
        return got

    def _probes(self, queries: np.ndarray, nprobe: int | None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
        """The int8 codes of ``queries``, each one's ``nprobe`` nearest lists (CSR:
        ``probe_ptr``, ``probes``) and the threads their scan may use."""
        q = np.ascontiguousarray(queries, dtype=np.float32)
        m = q.shape[0]
        p = self.probes_for(nprobe)
        from ..kernels.int8 import quantize_rows

        q_codes, q_scales = quantize_rows(q)
        # The lists of the best int8 centroid scores, ties to the lower list: the engine's
        # own probe (_core.HybridText), so both paths probe the same lists.
        probes = _core.ivf_probes(q_codes, q_scales, self.cent_codes, self.cent_scales, p)
        work = int(np.diff(self.list_ptr)[probes].sum()) * q.shape[1] // 1000
        return (q_codes, q_scales, np.arange(0, m * p + 1, p, dtype=np.int64),
                np.ascontiguousarray(probes.reshape(-1)), 1 if work < SERIAL_WORK else current_threads())

    # ---------------------------------------------------------------- Arrow

    def to_arrow(self) -> pa.Table:
        """One row of list columns (zero-copy over the arrays): ``centroids`` (float32,
        row-major), ``list_ptr``, ``list_ids`` and ``info`` (``[dim, n_fit]``). The rows
        themselves are the field's matrix (``dense.<field>.arrow``); indexes saved before
        format 3 also held a list-order copy (``list_codes``, ``list_scales``), which
        :meth:`from_arrow` skips."""
        def col(a: np.ndarray, t: pa.DataType) -> pa.Array:
            arr = column(a.reshape(-1), t)
            return pa.LargeListArray.from_arrays(column([0, len(arr)], pa.int64()), arr)

        return pa.table({
            "centroids": col(self.centroids, pa.float32()),
            "list_ptr": col(self.list_ptr, pa.int64()),
            "list_ids": col(self.list_ids, pa.int64()),
            "info": col(np.array([self.centroids.shape[1], self.n_fit], np.int64), pa.int64()),
        })

    @classmethod
    def from_arrow(cls, table: pa.Table, *, matrix: Int8Matrix) -> IvfIndex:
        """View a table written by :meth:`to_arrow` (no copy of the lists), checking it
        against the matrix it indexes.

        Raises:
            ValueError: Missing columns, wrong types or shapes, out-of-range row ids.
        """
        arrays = {}
        for name, dtype in (("centroids", np.float32), ("list_ptr", np.int64), ("list_ids", np.int64),
                            ("info", np.int64)):
            if name not in table.column_names:
                raise ValueError(f"column {name!r} is missing")
            col = table.column(name)
            if col.num_chunks != 1 or len(col) != 1 or col.null_count:
                raise ValueError(f"column {name!r} must hold one list")
            values = col.chunk(0).values
            if values.type != pa.from_numpy_dtype(dtype) or values.null_count:
                raise ValueError(f"column {name!r} must hold {np.dtype(dtype).name} values, got {values.type}")
            arrays[name] = column_values(values, dtype)  # to_numpy would import pandas
        info, dim = arrays["info"], matrix.dim
        if info.size != 2 or info[0] != dim or arrays["centroids"].size % dim:
            raise ValueError(f"centroids do not have the matrix's dimension {dim}")
        return cls(arrays["centroids"].reshape(-1, dim), arrays["list_ptr"], arrays["list_ids"], matrix,
                   n_fit=int(info[1]), _keepalive=table)


def _assign(codes: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Nearest centroid of each int8 row (int8 centroids, exact int32 dot products)."""
    from ..kernels.int8 import quantize_rows
    from ..kernels.ivf import assign_kernel

    cc, cs = quantize_rows(centroids)
    labels = np.empty(codes.shape[0], np.int64)
    best = np.empty(codes.shape[0], np.float32)
    if codes.shape[0]:
        launch(assign_kernel, np.ascontiguousarray(codes), cc, cs, labels, best,
               work=codes.shape[0] * cc.size // 1000)
    return labels


def tool_rows(groups: np.ndarray | None, n_tools: int) -> np.ndarray:
    """``int64[n_tools + 1]``: tool ``t`` owns rows ``ptr[t]:ptr[t+1]`` (rows grouped by tool)."""
    if groups is None:
        return np.arange(n_tools + 1, dtype=np.int64)
    return np.searchsorted(groups, np.arange(n_tools + 1)).astype(np.int64)


def update_ivf(old: IvfIndex, old_matrix: Int8Matrix, old_ptr: np.ndarray, new_matrix: Int8Matrix,
               new_ptr: np.ndarray, source: Sequence[int]) -> IvfIndex:
    """The IVF of ``new_matrix`` after an update, re-using ``old``'s centroids.

    Args:
        old: The IVF of ``old_matrix``.
        old_matrix, old_ptr: The old matrix and its tool -> rows pointer (:func:`tool_rows`).
        new_matrix, new_ptr: The same for the updated field.
        source: Per new tool, its old position, or ``-1`` for a new or replaced tool
            (whose rows were embedded afresh).

    Rows of kept tools keep their list (they are the same vectors); fresh rows go to
    their nearest centroid; rows of removed tools are gone. When the listed rows have
    grown or shrunk by :data:`DRIFT` since the fit, the centroids are fitted again.
    """
    old_pos = np.asarray(source, dtype=np.int64)
    kept = old_pos >= 0
    counts = np.diff(new_ptr)
    new_labels = np.full(new_matrix.n_rows, -1, np.int64)
    old_labels = old.labels(old_matrix.n_rows)
    dst = ranges(new_ptr[:-1][kept], counts[kept])
    src = ranges(old_ptr[:-1][old_pos[kept]], counts[kept])
    new_labels[dst] = old_labels[src]
    fresh = ranges(new_ptr[:-1][~kept], counts[~kept])
    fresh = fresh[new_matrix.scales[fresh] > 0]
    if fresh.size:
        new_labels[fresh] = _assign(new_matrix.codes[fresh], old.centroids)
    listed = int((new_labels >= 0).sum())
    # n_fit 0: the centroids were fitted on nothing (a field of empty texts).
    if listed and not (old.n_fit / DRIFT <= listed <= old.n_fit * DRIFT):
        return IvfIndex.fit(new_matrix)
    return IvfIndex.from_labels(old.centroids, new_labels, new_matrix, n_fit=old.n_fit)


def fields_with_ivf(dense: dict[str, DenseField], config: IndexConfig, *,
                    previous: dict[str, DenseField] | None = None,
                    source: Sequence[int] | None = None) -> dict[str, DenseField]:
    """``dense`` with an IVF index on every field of at least ``config.ivf_min_docs``
    documents that adds dense candidates (``config.dense_candidates_from``), and none on
    the others: a field that only scores candidates (the hybrid preset's response) is
    read by the exact gather alone and never probed, so its lists would be build time,
    disk and memory for nothing.

    Args:
        dense: Dense fields without IVF (fresh from a build or an update).
        config: The index config.
        previous: The fields before an update; their IVF is carried over (see
            :func:`update_ivf`) instead of fitted again.
        source: With ``previous``: per tool of ``dense``, its position before the
            update, or ``-1`` for a new or replaced tool.
    """
    from ..kernels.launch import using_threads

    out = {}
    with using_threads(config.threads):
        for name, dn in dense.items():
            if dn.matrix.n_rows < config.ivf_min_docs or name not in config.dense_candidates_from:
                out[name] = dn.with_ivf(None) if dn.ivf is not None else dn
                continue
            old = (previous or {}).get(name)
            if old is not None and old.ivf is not None and source is not None:
                ivf = update_ivf(old.ivf, old.matrix, tool_rows(old.groups, old.n_tools), dn.matrix,
                                 tool_rows(dn.groups, dn.n_tools), source)
            else:
                ivf = IvfIndex.fit(dn.matrix)
            out[name] = dn.with_ivf(ivf)
    return out
