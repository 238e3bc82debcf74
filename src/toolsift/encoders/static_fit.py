"""Fitting a static token table into a transformer's vector space.

Given texts and their transformer embeddings ``Y`` (unit rows), find token vectors ``E``
such that each text's weighted token mean ``X E`` reproduces ``Y``:

    minimise ||X E − Y||² + λ ||E − E0||²

``X[i, t]`` is token ``t``'s share of text ``i`` (count × weight, rows summing to 1), the
weights are SIF-style (``a / (a + p(t))`` with ``p`` the token's frequency in the fitting
corpus), and ``E0`` is the prior: each token's own transformer embedding (``[CLS] t [SEP]``,
the model2vec-style table). Tokens that occur in no fitting text keep their prior. The
problem is a ridge regression with one right-hand side per dimension, solved by block
conjugate gradients over the tokens that occur (sparse ``X``: two sparse products per
iteration).

Used offline by ``scripts/fit_static_encoder.py`` to make the shipped table; nothing here
runs at query time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from toolsift.encoders.static import StaticTable

__all__ = ["token_counts", "sif_weights", "mean_matrix", "fit_vectors", "single_token_prior", "fit_table"]


def token_counts(token_ids: Sequence[Sequence[int]], vocab_size: int) -> np.ndarray:
    """``int64[vocab]``: occurrences of each token over all texts."""
    flat = np.fromiter((t for x in token_ids for t in x), dtype=np.int64)
    return np.bincount(flat, minlength=vocab_size)


def sif_weights(counts: np.ndarray, *, a: float = 1e-3, floor: float = 0.0) -> np.ndarray:
    """SIF token weights ``a / (a + p)`` from corpus counts (``p`` = relative frequency);
    tokens never seen get weight 1."""
    total = max(int(counts.sum()), 1)
    p = counts.astype(np.float64) / total
    return np.maximum(a / (a + p), floor).astype(np.float32)


def mean_matrix(token_ids: Sequence[Sequence[int]], weights: np.ndarray):
    """``scipy.sparse.csr_matrix [texts, vocab]``: each text's weighted token shares
    (rows sum to 1; a text without weighted tokens is an empty row)."""
    import scipy.sparse as sp

    n, vocab = len(token_ids), weights.shape[0]
    lens = np.fromiter((len(x) for x in token_ids), dtype=np.int64, count=n)
    cols = np.fromiter((t for x in token_ids for t in x), dtype=np.int64, count=int(lens.sum()))
    rows = np.repeat(np.arange(n, dtype=np.int64), lens)
    vals = weights[cols].astype(np.float64)
    m = sp.csr_matrix((vals, (rows, cols)), shape=(n, vocab))  # duplicates summed: counts × weight
    sums = np.asarray(m.sum(axis=1)).ravel()
    inv = np.divide(1.0, sums, out=np.zeros_like(sums), where=sums > 0)
    return sp.diags(inv) @ m


def fit_vectors(x, y: np.ndarray, prior: np.ndarray, *, lam: float, iters: int = 200, tol: float = 1e-4,
                sample_weight: np.ndarray | None = None,
                progress: Callable[[int, float], None] | None = None) -> np.ndarray:
    """Solve ``min ||W^½ (X E − Y)||² + λ ||E − E0||²`` for the tokens that occur in ``X``.

    Args:
        x: ``csr [n, vocab]`` (see :func:`mean_matrix`).
        y: ``float[n, dim]`` teacher embeddings.
        prior: ``float[vocab, dim]`` ``E0``.
        lam: Ridge strength λ (> 0).
        iters: Conjugate-gradient iterations at most.
        tol: Stop when the residual norm falls below ``tol`` × its start.
        sample_weight: Optional ``float[n]`` per-text weights ``W``.
        progress: Called with (iteration, relative residual).

    Returns:
        ``float32[vocab, dim]``: fitted vectors (the prior for tokens not in ``X``).
    """
    import scipy.sparse as sp

    if lam <= 0:
        raise ValueError("lam must be > 0")
    used = np.flatnonzero(np.asarray((x != 0).sum(axis=0)).ravel())
    xs = x[:, used].tocsr()
    if sample_weight is not None:
        xs = sp.diags(np.sqrt(sample_weight)) @ xs
        y = y * np.sqrt(sample_weight)[:, None]
    xt = xs.T.tocsr()
    # float32 throughout: the targets are float32 embeddings, and the sparse products
    # (the whole cost) run twice as fast as in float64.
    xs, xt = xs.astype(np.float32), xt.astype(np.float32)
    e0 = prior[used].astype(np.float32)
    # Work with D = E − E0: (XᵀX + λI) D = Xᵀ(Y − X E0).
    rhs = xt @ (np.asarray(y, dtype=np.float32) - xs @ e0)

    def apply(p: np.ndarray) -> np.ndarray:
        return xt @ (xs @ p) + lam * p

    d = np.zeros_like(rhs)
    r = rhs.copy()
    p = r.copy()
    rs = np.einsum("ij,ij->j", r, r)
    r0 = np.sqrt(rs.sum())
    for it in range(iters):
        ap = apply(p)
        alpha = rs / np.maximum(np.einsum("ij,ij->j", p, ap), 1e-30)
        d += p * alpha
        r -= ap * alpha
        rs_new = np.einsum("ij,ij->j", r, r)
        rel = float(np.sqrt(rs_new.sum()) / max(r0, 1e-30))
        if progress is not None:
            progress(it, rel)
        if rel < tol:
            break
        p = r + p * (rs_new / np.maximum(rs, 1e-30))
        rs = rs_new
    out = prior.astype(np.float32, copy=True)
    out[used] = (e0 + d).astype(np.float32)
    return out


def single_token_prior(encoder, vocab_size: int, *, batch: int = 512,
                       progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """``float32[vocab, dim]``: each token's own embedding by an
    :class:`~toolsift.encoders.OnnxEncoder` (``[CLS] t [SEP]``, mean-pooled, unit)."""
    cls_id = encoder._tokenizer.token_to_id("[CLS]")
    sep_id = encoder._tokenizer.token_to_id("[SEP]")
    out = np.zeros((vocab_size, encoder.dim), dtype=np.float32)
    for start in range(0, vocab_size, batch):
        stop = min(start + batch, vocab_size)
        ids = np.empty((stop - start, 3), dtype=np.int64)
        ids[:, 0], ids[:, 1], ids[:, 2] = cls_id, np.arange(start, stop), sep_id
        mask = np.ones_like(ids)
        out[start:stop] = encoder._pool_states(encoder._forward(ids, mask, encoder._output_name), mask)
        if progress is not None:
            progress(stop, vocab_size)
    return out


def fit_table(token_ids: Sequence[Sequence[int]], y: np.ndarray, prior: np.ndarray, *, lam: float,
              sif_a: float = 1e-3, iters: int = 200, meta: dict | None = None,
              progress: Callable[[int, float], None] | None = None, weight_texts: int | None = None) -> StaticTable:
    """Fit a :class:`StaticTable` to texts (as token ids) and their teacher embeddings.

    ``weight_texts``: the SIF weights count tokens in the first this many texts only
    (natural text; the rest may be synthetic, with meaningless frequencies)."""
    counts = token_counts(token_ids if weight_texts is None else token_ids[:weight_texts], prior.shape[0])
    weights = sif_weights(counts, a=sif_a)
    x = mean_matrix(token_ids, weights)
    vecs = fit_vectors(x, y, prior, lam=lam, iters=iters, progress=progress)
    return StaticTable.from_vectors(vecs, weights, {**(meta or {}), "lam": lam, "sif_a": sif_a,
                                                    "texts": len(token_ids)})
