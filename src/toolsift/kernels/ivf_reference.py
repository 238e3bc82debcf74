"""Plain-NumPy twins of :mod:`toolsift.kernels.ivf`, the oracle of its tests.

Written the obvious way (integer matmuls, Python loops over queries and lists) and
independent of the jitted code."""

from __future__ import annotations

import numpy as np

__all__ = ["assign_reference", "probe_reference", "probes_reference"]


def assign_reference(codes: np.ndarray, cent_codes: np.ndarray, cent_scales: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``(labels int64[n], best float32[n])`` as :func:`~toolsift.kernels.ivf.assign_kernel`."""
    dots = codes.astype(np.int64) @ cent_codes.astype(np.int64).T
    vals = dots.astype(np.float32) * cent_scales.astype(np.float32)[None, :]
    labels = np.argmax(vals, axis=1).astype(np.int64)  # first maximum, as the kernel
    return labels, vals[np.arange(codes.shape[0]), labels].astype(np.float32)


def probe_reference(q_codes: np.ndarray, q_scales: np.ndarray, codes: np.ndarray, scales: np.ndarray,
                    list_ptr: np.ndarray, list_ids: np.ndarray, probe_ptr: np.ndarray, probes: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(out_ptr, scores, rows)``: per query the scores of every probed row, in probe order."""
    scores, rows, ptr = [], [], [0]
    for i in range(q_codes.shape[0]):
        for c in probes[probe_ptr[i]:probe_ptr[i + 1]]:
            ids = list_ids[list_ptr[c]:list_ptr[c + 1]]
            dots = codes[ids].astype(np.int64) @ q_codes[i].astype(np.int64)
            scores.append(dots.astype(np.float32) * np.float32(q_scales[i]) * scales[ids].astype(np.float32))
            rows.append(ids.astype(np.int64))
        ptr.append(sum(r.size for r in rows))
    def cat(parts, dt):
        return np.concatenate(parts).astype(dt) if parts else np.zeros(0, dt)

    return np.asarray(ptr, np.int64), cat(scores, np.float32), cat(rows, np.int64)


def probes_reference(q_codes: np.ndarray, q_scales: np.ndarray, cent_codes: np.ndarray, cent_scales: np.ndarray,
                     nprobe: int) -> np.ndarray:
    """``int64[m, min(nprobe, lists)]`` as ``_core.ivf_probes``: each query row's lists by
    int8 centroid score (float32 of the exact dot, times the query's then the centroid's
    scale), best first, ties to the lower list."""
    dots = q_codes.astype(np.int64) @ cent_codes.astype(np.int64).T
    vals = dots.astype(np.float32) * q_scales.astype(np.float32)[:, None] * cent_scales.astype(np.float32)[None, :]
    p = min(int(nprobe), cent_codes.shape[0])
    out = np.empty((q_codes.shape[0], p), np.int64)
    for i, row in enumerate(vals):
        out[i] = sorted(range(row.size), key=lambda j: (-row[j], j))[:p]
    return out
