"""Plain-NumPy twin of the MFTR candidate scorer, written the obvious way.

This is the test oracle for :mod:`toolsift.kernels.mftr`: the same inputs and outputs,
one candidate at a time, with NumPy reductions instead of hand-written loops and a
different (``logaddexp``) form of the stable sigmoid. It shares no code with the kernel
and does not validate its inputs; it is slow and meant for tests and small checks only.
"""

from __future__ import annotations

import numpy as np

from .params import PAPER_PARAMS, ScoringParams

__all__ = ["score_candidates_reference"]


def score_candidates_reference(
    cand_query: np.ndarray,
    cand_tool: np.ndarray,
    cand_need_off: np.ndarray,
    cand_param_off: np.ndarray,
    n_needs: np.ndarray,
    n_args: np.ndarray,
    penalize: np.ndarray,
    need_sims: np.ndarray,
    ap_sims: np.ndarray,
    param_ptr: np.ndarray,
    param_required: np.ndarray,
    params: ScoringParams = PAPER_PARAMS,
    *,
    tool_fields: np.ndarray | None = None,
    breakdown: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Score candidates exactly as :func:`toolsift.kernels.score_candidates` does.

    Args:
        cand_query: Query of each candidate.
        cand_tool: Tool of each candidate.
        cand_need_off: First ``need_sims`` row of each candidate's block.
        cand_param_off: Start of each candidate's arg-major block in ``ap_sims``.
        n_needs: Tool needs per query.
        n_args: Extracted arguments per query.
        penalize: Whether the penalty applies, per query.
        need_sims: ``[m, 3]`` (description, response, examples) similarity per need row.
        ap_sims: Flat argument-parameter similarities.
        param_ptr: CSR row pointer of parameters per tool.
        param_required: Whether each parameter is required.
        params: Scoring parameters.
        tool_fields: Per tool, bit ``1 << f`` set when it has field ``f`` (``None``: all).
        breakdown: Also return the ``[nc, 5]`` terms ``(S_desc, S_param, S_resp, S_ex, P)``.

    Returns:
        ``float32[nc]`` scores, or ``(scores, terms)`` with ``breakdown=True``.
    """
    need_sims = np.asarray(need_sims, dtype=np.float64)
    ap_sims = np.asarray(ap_sims, dtype=np.float64)
    nc = len(cand_query)
    terms = np.zeros((nc, 5), dtype=np.float64)

    for i in range(nc):
        q = int(cand_query[i])
        t = int(cand_tool[i])

        start = int(cand_need_off[i])
        needs = need_sims[start : start + int(n_needs[q])]
        s_desc, s_resp, s_ex = needs.max(axis=0)

        first, last = int(param_ptr[t]), int(param_ptr[t + 1])
        n_params = last - first
        na = int(n_args[q])
        s_param = 0.0
        penalty = 0.0
        if n_params > 0 and na > 0:
            off = int(cand_param_off[i])
            grid = ap_sims[off : off + na * n_params].reshape(na, n_params)
            s_p = grid.max(axis=0)
            lam = params.param_max_share
            s_param = float(lam * s_p.max() + (1.0 - lam) * s_p.mean())
            if penalize[q]:
                # sigmoid(x) = exp(-log(1 + exp(-x))); logaddexp never overflows.
                sig = np.exp(-np.logaddexp(0.0, -params.alpha * (params.tau - s_p)))
                required = np.asarray(param_required[first:last]).astype(bool)
                per_param = np.where(required, params.w_req, params.w_opt)
                penalty = float(np.sum(sig * per_param))
        elif n_params > 0 and penalize[q]:
            # No arguments: every parameter is unmatched (s_p = 0).
            required = np.asarray(param_required[first:last]).astype(bool)
            per_param = np.where(required, params.w_req, params.w_opt)
            sig0 = 1.0 / (1.0 + np.exp(-params.alpha * params.tau))
            penalty = float(np.sum(sig0 * per_param))

        terms[i] = (s_desc, s_param, s_resp, s_ex, penalty)

    weights = np.asarray(params.weights, dtype=np.float64)
    if params.renormalize:
        bits = np.full(int(len(param_ptr)) - 1, 15) if tool_fields is None else np.asarray(tool_fields)
        present = (bits[np.asarray(cand_tool, dtype=np.int64)][:, None] >> np.arange(4)) & 1
        mass = present @ np.abs(weights)
        scale = np.divide(np.abs(weights).sum(), mass, out=np.ones_like(mass), where=mass > 0)
        raw = (terms[:, :4] * present) @ weights
        scores = (scale * raw + params.bias - terms[:, 4]).astype(np.float32)
    else:
        scores = (terms[:, :4] @ weights + params.bias - terms[:, 4]).astype(np.float32)
    if breakdown:
        return scores, terms.astype(np.float32)
    return scores
