"""Kernels for int8 embedding matrices: quantize rows, full scan, candidate scores.

Rows are quantized symmetrically with one float32 scale per row (``x ≈ codes * scale``,
``scale = max|x| / 127``), so a similarity is an int8·int8 dot product accumulated in
int32 and multiplied by both scales. For L2-normalised rows this approximates the fp32
cosine (see ``docs/dense.md``, "Int8 matrices", for the measured error and speed).

Layouts:

* ``codes: int8[n, d]`` C-contiguous, ``scales: float32[n]``;
* a query batch is the same thing with ``m`` rows;
* candidate sets are CSR: query ``i`` scores ``cand_ids[cand_ptr[i]:cand_ptr[i+1]]``.

Every kernel here is the C++ core's: the scan, the gather and the one-pass top-n
(``toolsift/int8_dot.h``: one dot product on the CPU's widest integer instructions, chosen
at run time), the quantization and a static encoder's text vectors (``toolsift/embed.h``),
so a search on a dense field imports no Numba. Plain-NumPy twins in
:mod:`toolsift.kernels.int8_reference` are the tests' oracle. The checked wrappers
:func:`quantize_rows`, :func:`scan` and :func:`gather` validate inputs before any kernel
runs; the ``*_trusted`` functions and :func:`mean_rows` trust their arguments.
"""

from __future__ import annotations

import numpy as np

from .. import _core
from .buffers import ALIGN, aligned, aligned_empty, freeze, frozen
from .launch import SERIAL_WORK, current_threads

__all__ = [
    "ALIGN",
    "aligned",
    "aligned_empty",
    "freeze",
    "frozen",
    "gather",
    "gather_trusted",
    "mean_rows",
    "quantize_rows",
    "quantize_trusted",
    "scan",
    "scan_trusted",
    "top_trusted",
]


def mean_rows(codes: np.ndarray, mult: np.ndarray, ptr: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``float32[len(ptr) - 1, d]``: row ``i`` is the unit-length sum of ``codes[r] *
    mult[r]`` over the rows ``r = ids[ptr[i]:ptr[i+1]]`` (a zero row when that sum is 0).

    A text's static embedding (:class:`toolsift.encoders.static.StaticEncoder`): rows
    premultiplied by token weight and scale. One text alone or in a batch goes through
    the same loop, so it gets the same vector bit for bit. The core checks ``ptr`` and
    the row range; many texts run on :func:`~.launch.current_threads` threads.
    """
    work = ids.shape[0] * codes.shape[1] // 1000
    threads = 1 if work < SERIAL_WORK else current_threads()
    return _core.static_mean_rows(codes, mult, ptr, ids, threads)


# --------------------------------------------------------------------------------------
# Checked entry points
# --------------------------------------------------------------------------------------

def _codes_array(name: str, a: object) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows, dim), got shape {arr.shape}")
    if arr.dtype != np.int8:
        raise ValueError(f"{name} must have dtype int8, got {arr.dtype}")
    return np.ascontiguousarray(arr)


def _scales_array(name: str, a: object, n: int, rows_of: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},) (one per row of {rows_of}), got {arr.shape}")
    if arr.size and arr.dtype.kind != "f":
        raise ValueError(f"{name} must hold floats, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{i}]={arr[i]} must be finite and >= 0")
    return arr


def _pair(
    q_codes: object, q_scales: object, codes: object, scales: object
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    qc = _codes_array("q_codes", q_codes)
    c = _codes_array("codes", codes)
    if qc.shape[1] != c.shape[1]:
        raise ValueError(f"q_codes has dim {qc.shape[1]}, codes has dim {c.shape[1]}")
    qs = _scales_array("q_scales", q_scales, qc.shape[0], "q_codes")
    s = _scales_array("scales", scales, c.shape[0], "codes")
    return qc, qs, c, s


def quantize_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Quantize float rows to int8 codes with one symmetric scale per row.

    ``scale[i] = max|x[i]| / 127`` and ``codes[i] = rint(x[i] / scale[i])``, so every
    row uses the full -127..127 range; an all-zero row gets scale 0 and zero codes.

    Args:
        x: ``float[n, d]`` rows (float32 is used as is; other float dtypes are converted).

    Returns:
        ``(codes: int8[n, d], scales: float32[n])``, both C-contiguous.

    Raises:
        ValueError: ``x`` is not 2-D, not floating point, or holds NaN/inf (the message
            names the first bad position).
    """
    arr = np.asarray(x)
    if arr.ndim != 2:
        raise ValueError(f"x must be 2-D (rows, dim), got shape {arr.shape}")
    if arr.dtype.kind != "f":
        raise ValueError(f"x must hold floats (float32), got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    bad = ~np.isfinite(arr)
    if bad.any():
        i, k = np.argwhere(bad)[0]
        raise ValueError(f"x[{i},{k}]={arr[i, k]} is not finite")
    return quantize_trusted(arr)


def quantize_trusted(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`quantize_rows` of a C-contiguous, finite ``float32[n, d]`` without the
    checks (a query's vectors, made by the encoder a moment ago)."""
    # A matrix made from the codes is scanned in place: aligned. A few query rows need not be.
    codes = aligned_empty(x.shape, np.int8) if x.shape[0] >= 64 else np.empty(x.shape, np.int8)
    scales = np.empty(x.shape[0], dtype=np.float32)
    if x.shape[0]:
        work = x.size // 1000
        _core.quantize_rows(x, codes, scales, 1 if work < SERIAL_WORK else current_threads())
    return codes, scales


def scan(
    q_codes: np.ndarray, q_scales: np.ndarray, codes: np.ndarray, scales: np.ndarray
) -> np.ndarray:
    """Score every query row against every matrix row (full scan).

    Args:
        q_codes: ``int8[m, d]`` query codes (from :func:`quantize_rows`).
        q_scales: ``float[m]`` query scales.
        codes: ``int8[n, d]`` matrix codes.
        scales: ``float[n]`` matrix scales.

    Returns:
        ``float32[m, n]`` with ``out[i, j] = (q_codes[i] · codes[j]) * q_scales[i] *
        scales[j]``, the dot product accumulated exactly in int32.

    Raises:
        ValueError: Wrong dtype (codes must be int8), shape or dim mismatch, or a
            negative / non-finite scale.
    """
    qc, qs, c, s = _pair(q_codes, q_scales, codes, scales)
    # The core reads a read-only matrix in place with the GIL released (a writable one it
    # copies); a view that only looks read-only could still change through a writable
    # base, so the matrix is taken as Int8Matrix takes it.
    return scan_trusted(qc, qs, frozen(c), frozen(s))


def scan_trusted(q_codes: np.ndarray, q_scales: np.ndarray, codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """:func:`scan` without the checks, for the search path: the matrix is an
    :class:`~toolsift.index.dense.Int8Matrix` (checked when made) and the query rows come
    from :func:`quantize_rows`. Checking the matrix's scales again cost a pass over every
    document per search.

    The scan is the C++ core's (``toolsift/int8_dot.h``): AVX-512 VNNI where the CPU has
    it (2.2x Numba's loop on 6,400 x 384), else AVX2 or a portable loop, the same bits on
    each. Like the Numba kernels it runs on the calling thread unless the work is large
    (:data:`~toolsift.kernels.launch.SERIAL_WORK`) and more threads are allowed.
    """
    work = q_codes.shape[0] * codes.size // 1000
    threads = 1 if work < SERIAL_WORK else current_threads()
    return _core.int8_scan(q_codes, q_scales, codes, scales, threads=threads)


def top_trusted(q_codes: np.ndarray, q_scales: np.ndarray, codes: np.ndarray, scales: np.ndarray,
                keys: np.ndarray, n: int, *, coarse: object = None) -> list[np.ndarray]:
    """Per query row, its best ``n`` keys (``keys[j]`` for matrix row ``j``, distinct and
    read-only) with a positive score, best first; ties go to the lower key. The scan and
    the selection in one pass of the C++ core: no ``[m, rows]`` score matrix, and the
    heap's work hides under the scan's memory reads. Equal to :func:`scan` followed by
    :func:`toolsift.kernels.select.top_positive` (tested).

    ``coarse``: ``_core.int8_coarse(codes, scales)`` (read-only arrays), an exact
    prefilter: only rows whose score bound can still make the top ``n`` are read in int8
    (toolsift/int8_coarse.h). The result is the same."""
    work = q_codes.shape[0] * codes.size // 1000
    threads = 1 if work < SERIAL_WORK else current_threads()
    ids, counts = _core.int8_top(q_codes, q_scales, codes, scales, keys, n, threads=threads, coarse=coarse)
    return [ids[i, :c] for i, c in enumerate(counts.tolist())]


def gather(
    q_codes: np.ndarray,
    q_scales: np.ndarray,
    codes: np.ndarray,
    scales: np.ndarray,
    cand_ptr: np.ndarray,
    cand_ids: np.ndarray,
) -> np.ndarray:
    """Score candidate sets: query ``i`` against rows ``cand_ids[cand_ptr[i]:cand_ptr[i+1]]``.

    Args:
        q_codes: ``int8[m, d]`` query codes.
        q_scales: ``float[m]`` query scales.
        codes: ``int8[n, d]`` matrix codes.
        scales: ``float[n]`` matrix scales.
        cand_ptr: ``int[m + 1]`` CSR row pointer (starts at 0, non-decreasing, ends at
            ``len(cand_ids)``).
        cand_ids: ``int[k]`` matrix rows, ``0..n-1``; duplicates are allowed.

    Returns:
        ``float32[k]``, the score of each candidate in ``cand_ids`` order, equal to the
        matching entry of :func:`scan`.

    Raises:
        ValueError: As :func:`scan`, plus a malformed ``cand_ptr`` or an out-of-range
            candidate id (the message names position and value).
    """
    qc, qs, c, s = _pair(q_codes, q_scales, codes, scales)
    ptr = np.asarray(cand_ptr)
    ids = np.asarray(cand_ids)
    for name, arr in (("cand_ptr", ptr), ("cand_ids", ids)):
        if arr.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
        if arr.size and arr.dtype.kind not in "iu":
            raise ValueError(f"{name} must hold integers, got dtype {arr.dtype}")
    ptr = np.ascontiguousarray(ptr, dtype=np.int64)
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    m, n, k = qc.shape[0], c.shape[0], ids.shape[0]
    if ptr.shape[0] != m + 1:
        raise ValueError(f"cand_ptr must have {m + 1} entries (queries + 1), got {ptr.shape[0]}")
    if ptr[0] != 0:
        raise ValueError(f"cand_ptr[0]={ptr[0]} must be 0")
    steps = np.diff(ptr)
    if (steps < 0).any():
        i = int(np.flatnonzero(steps < 0)[0]) + 1
        raise ValueError(f"cand_ptr[{i}]={ptr[i]} is less than cand_ptr[{i - 1}]={ptr[i - 1]}")
    if ptr[-1] != k:
        raise ValueError(f"cand_ptr[-1]={ptr[-1]} must equal len(cand_ids)={k}")
    bad = (ids < 0) | (ids >= n)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"cand_ids[{i}]={ids[i]} out of range for {n} rows")
    return gather_trusted(qc, qs, frozen(c), frozen(s), ptr, ids)


def gather_trusted(q_codes: np.ndarray, q_scales: np.ndarray, codes: np.ndarray, scales: np.ndarray,
                   cand_ptr: np.ndarray, cand_ids: np.ndarray) -> np.ndarray:
    """:func:`gather` without the Python checks, for the search path (as :func:`scan_trusted`;
    the candidate rows are the index's own, made by the search path). The core still
    checks the CSR and the id range, at C++ speed. Same dot product as the scan."""
    work = cand_ids.shape[0] * q_codes.shape[1] // 1000
    threads = 1 if work < SERIAL_WORK else current_threads()
    return _core.int8_gather(q_codes, q_scales, codes, scales, cand_ptr, cand_ids, threads=threads)
