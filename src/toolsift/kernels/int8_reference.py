"""Plain-NumPy twins of :mod:`toolsift.kernels.int8`, used as the test oracle.

Slow and obvious: quantize with array operations, dequantize and score with a float
matrix product. Dequantized values and products are formed in float64, where
``code * scale`` and the sums of their products are exact (int8 × float32 needs 32
mantissa bits, a 384-term sum a few more), so the oracle carries no rounding of its
own and the kernels can be held to a tight float32 tolerance even under cancellation.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "dequantize_reference",
    "gather_reference",
    "mean_rows_reference",
    "quantize_rows_reference",
    "scan_reference",
]


def quantize_rows_reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Twin of :func:`toolsift.kernels.int8.quantize_rows` (same float64 arithmetic).

    Args:
        x: ``float32[n, d]``, finite.

    Returns:
        ``(codes: int8[n, d], scales: float32[n])``.
    """
    x64 = np.asarray(x, dtype=np.float32).astype(np.float64)
    amax = np.abs(x64).max(axis=1) if x64.shape[1] else np.zeros(x64.shape[0])
    nonzero = amax > 0
    inv = np.zeros_like(amax)
    inv[nonzero] = 127.0 / amax[nonzero]
    codes = np.rint(x64 * inv[:, None]).astype(np.int8)
    scales = (amax / 127.0).astype(np.float32)
    return codes, scales


def mean_rows_reference(codes: np.ndarray, mult: np.ndarray, ptr: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Twin of :func:`toolsift.kernels.int8.mean_rows`, in its rounding order: float32
    products added token by token, float32 squares summed one after another in float64
    (``cumsum``, not NumPy's pairwise ``sum``), the row scaled by the float32 inverse norm."""
    out = np.zeros((len(ptr) - 1, codes.shape[1]), np.float32)
    for i in range(len(ptr) - 1):
        acc = out[i]
        for r in ids[ptr[i]:ptr[i + 1]]:
            acc += codes[r].astype(np.float32) * np.float32(mult[r])
        sq = float(np.cumsum((acc * acc).astype(np.float64))[-1]) if acc.size else 0.0
        if sq > 1e-24:
            acc *= np.float32(1.0 / np.sqrt(sq))
        else:
            acc[:] = 0.0
    return out


def dequantize_reference(codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Return ``codes * scales[:, None]`` in float64 (exact)."""
    return np.asarray(codes, dtype=np.float64) * np.asarray(scales, dtype=np.float64)[:, None]


def scan_reference(
    q_codes: np.ndarray, q_scales: np.ndarray, codes: np.ndarray, scales: np.ndarray
) -> np.ndarray:
    """Twin of :func:`toolsift.kernels.int8.scan`: dequantize, then a float matmul."""
    q = dequantize_reference(q_codes, q_scales)
    c = dequantize_reference(codes, scales)
    return (q @ c.T).astype(np.float32)


def gather_reference(
    q_codes: np.ndarray,
    q_scales: np.ndarray,
    codes: np.ndarray,
    scales: np.ndarray,
    cand_ptr: np.ndarray,
    cand_ids: np.ndarray,
) -> np.ndarray:
    """Twin of :func:`toolsift.kernels.int8.gather`: one dequantized product per query."""
    q = dequantize_reference(q_codes, q_scales)
    c = dequantize_reference(codes, scales)
    out = np.zeros(len(cand_ids), dtype=np.float32)
    for i in range(q.shape[0]):
        lo, hi = int(cand_ptr[i]), int(cand_ptr[i + 1])
        ids = np.asarray(cand_ids[lo:hi], dtype=np.int64)
        out[lo:hi] = c[ids] @ q[i]
    return out
