"""Numba kernel of the IVF (inverted-file) index over int8 matrices.

An IVF index splits a matrix's rows into lists, one per coarse centroid; a query scores
the centroids, then only the rows of its ``nprobe`` best lists (:mod:`toolsift.index.ivf`).
:func:`assign_kernel` finds the nearest centroid of every row (building and updating);
the probe's scores come from the C++ core (``_core.int8_probe``, the int8 scan's dot
product), checked against :func:`toolsift.kernels.ivf_reference.probe_reference`.

Layouts: matrix and query rows as in :mod:`toolsift.kernels.int8` (``int8[n, d]`` codes,
``float32[n]`` scales); centroids quantized the same way. The lists are CSR: list ``c``
holds rows ``list_ids[list_ptr[c]:list_ptr[c+1]]``. A probe through the 4-bit prefilter
(``_core.int8_probe_top_rows``) reads the listed rows' 4-bit codes in list order and only
the few int8 rows it cannot rule out from the matrix itself; the plain probes read a
list-order copy of the rows (``IvfIndex.lists``), so that a probed list is one contiguous
stretch of memory (reading every probed row in place, scattered over the matrix, was 3.8x
slower at 100k rows: each row a cache miss). Probes are CSR too: query ``i``
probes ``probes[probe_ptr[i]:probe_ptr[i+1]]`` and writes its scores from
``out_ptr[i]`` on.

Same conventions as :mod:`toolsift.kernels.int8`: explicit signatures with read-only
inputs (memory-mapped buffers need no copy), cached, ``nogil``, plain Python under
``NUMBA_DISABLE_JIT=1``; the NumPy twins live in :mod:`toolsift.kernels.ivf_reference`.
The int8 dot products widen to int16 and accumulate in int32, exactly, as in ``scan``.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types as nt

__all__ = ["SIG_ASSIGN", "assign_kernel"]

_ro_i1_2d = nt.Array(nt.int8, 2, "C", readonly=True)
_ro_f4 = nt.Array(nt.float32, 1, "C", readonly=True)

#: ``assign_kernel(codes, cent_codes, cent_scales, labels_out, best_out)``.
SIG_ASSIGN = nt.void(_ro_i1_2d, _ro_i1_2d, _ro_f4, nt.int64[::1], nt.float32[::1])


@numba.njit(SIG_ASSIGN, cache=True, nogil=True, parallel=True)
def assign_kernel(codes, cent_codes, cent_scales, labels, best):
    """``labels[j]`` = the centroid ``c`` maximising ``(codes[j] · cent_codes[c]) *
    cent_scales[c]`` (the lowest ``c`` on ties), ``best[j]`` that value (unchecked).

    The row's own scale is left out: it is positive and the same for every centroid, so
    it cannot change the argmax. Parallel over rows; four centroids per pass over a row
    (the row stays in registers / L1 while the centroids stream from L2).
    """
    n, d = codes.shape
    k = cent_codes.shape[0]
    k4 = k - k % 4
    for j in numba.prange(n):
        bi = 0
        bv = -np.inf
        for c in range(0, k4, 4):
            a0 = np.int32(0)
            a1 = np.int32(0)
            a2 = np.int32(0)
            a3 = np.int32(0)
            for t in range(d):
                x = np.int16(codes[j, t])
                a0 = np.int32(a0 + np.int32(x * np.int16(cent_codes[c, t])))
                a1 = np.int32(a1 + np.int32(x * np.int16(cent_codes[c + 1, t])))
                a2 = np.int32(a2 + np.int32(x * np.int16(cent_codes[c + 2, t])))
                a3 = np.int32(a3 + np.int32(x * np.int16(cent_codes[c + 3, t])))
            v0 = np.float32(a0) * cent_scales[c]
            v1 = np.float32(a1) * cent_scales[c + 1]
            v2 = np.float32(a2) * cent_scales[c + 2]
            v3 = np.float32(a3) * cent_scales[c + 3]
            if v0 > bv:
                bv, bi = v0, c
            if v1 > bv:
                bv, bi = v1, c + 1
            if v2 > bv:
                bv, bi = v2, c + 2
            if v3 > bv:
                bv, bi = v3, c + 3
        for c in range(k4, k):
            acc = np.int32(0)
            for t in range(d):
                acc = np.int32(acc + np.int32(np.int16(codes[j, t]) * np.int16(cent_codes[c, t])))
            v = np.float32(acc) * cent_scales[c]
            if v > bv:
                bv, bi = v, c
        labels[j] = bi
        best[j] = bv
