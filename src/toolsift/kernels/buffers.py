"""Aligned, read-only NumPy buffers for the int8 kernels and the C++ core.

Plain NumPy (no Numba): loading a saved index wraps its matrices with these, and a
search that never scans a dense field must not pay for importing the kernels.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ALIGN", "aligned", "aligned_empty", "freeze", "frozen"]

#: Byte alignment of scanned matrices: one cache line, so no 64-byte vector load of a row
#: (d a multiple of 64) straddles two lines. A row 16 bytes off (NumPy's usual offset)
#: made the AVX-512 scan 13-30% slower (docs/results/int8-2026-11-26b.md).
ALIGN = 64


def aligned_empty(shape: tuple[int, ...], dtype: np.dtype | type, *, zeros: bool = False) -> np.ndarray:
    """An uninitialised (``zeros``: zero-filled) C-contiguous array whose data starts on
    an :data:`ALIGN`-byte boundary. ``zeros`` allocates as ``np.zeros`` does, so pages no
    row is written to are never touched (an all-blank field of a million tools costs no
    memory until written)."""
    dt = np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    raw = (np.zeros if zeros else np.empty)(size + ALIGN, dtype=np.uint8)
    off = -raw.ctypes.data % ALIGN
    return raw[off:off + size].view(dt).reshape(shape)


def aligned(a: np.ndarray) -> np.ndarray:
    """``a`` if it is C-contiguous and :data:`ALIGN`-aligned (or empty: nothing to
    load), else an aligned read-only copy."""
    if a.flags.c_contiguous and (a.size == 0 or a.ctypes.data % ALIGN == 0):
        return a
    return _aligned_copy(a)


def _aligned_copy(a: np.ndarray) -> np.ndarray:
    """A read-only, C-contiguous, :data:`ALIGN`-aligned copy of ``a``."""
    out = aligned_empty(a.shape, a.dtype)
    out[...] = a
    return freeze(out)


def freeze(a: np.ndarray) -> np.ndarray:
    """Mark a fresh array (one nothing else references) read-only and return it, so that
    :func:`frozen` (and :class:`~toolsift.index.dense.Int8Matrix`) take it without a copy.
    A view's bases are marked too: for a fresh array (such as :func:`aligned_empty`'s view
    of its padded buffer) nothing else can write through them."""
    a.flags.writeable = False
    base = a.base
    while isinstance(base, np.ndarray):
        base.flags.writeable = False
        base = base.base
    return a


def frozen(a: np.ndarray) -> np.ndarray:
    """``a`` if no writable array reaches its memory, else a read-only copy (aligned, so
    :func:`aligned` after it copies nothing more): what the C++ core may read in place
    with the GIL released (it copies writable arrays itself)."""
    if not a.flags.writeable:
        base = a.base
        while isinstance(base, np.ndarray):
            if base.flags.writeable:
                break
            base = base.base
        else:
            return a
    return _aligned_copy(a)
