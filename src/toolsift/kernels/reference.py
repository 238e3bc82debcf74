"""Plain-NumPy twin of the MFTR candidate scorer, written the obvious way.

This is the test oracle for :mod:`toolsift.kernels.mftr`: the same inputs and outputs,
one candidate at a time in float64 Python arithmetic (maxima, exactly rounded sums) and a
different (``logaddexp``) form of the stable sigmoid. It shares no code with the kernel
and does not validate its inputs. It is slow per candidate, so searches rank with the
kernel or the engine; it computes only the breakdown of the ``k`` hits an explained
search returns (:mod:`toolsift.search.explain`), where a handful of candidates is not
worth importing Numba. ``tests/test_kernels.py`` holds it to the kernel, and
``tests/test_explain.py`` the explanations it gives to the kernel's.
"""

from __future__ import annotations

import math

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
    # Plain Python floats (float64) per candidate: a handful of candidates (an explained
    # search's k hits) costs microseconds, not the dozens of NumPy calls per candidate.
    need_rows = np.asarray(need_sims, dtype=np.float64).tolist()
    ap = np.asarray(ap_sims, dtype=np.float64).tolist()
    nc = len(cand_query)
    terms = np.zeros((nc, 5), dtype=np.float64)
    lam = params.param_max_share
    weight_of = {True: params.w_req, False: params.w_opt}

    def sigmoid(x: float) -> float:
        # sigmoid(x) = exp(-log(1 + exp(-x))), with log(1 + exp(y)) = max(y, 0) + log1p(exp(-|y|)).
        y = -x
        return math.exp(-(max(y, 0.0) + math.log1p(math.exp(-abs(y)))))

    for i, (q, t, start, off) in enumerate(zip(np.asarray(cand_query).tolist(), np.asarray(cand_tool).tolist(),
                                               np.asarray(cand_need_off).tolist(),
                                               np.asarray(cand_param_off).tolist())):
        rows = need_rows[start : start + int(n_needs[q])]
        s_desc, s_resp, s_ex = (max(column) for column in zip(*rows))

        first, last = int(param_ptr[t]), int(param_ptr[t + 1])
        n_params = last - first
        na = int(n_args[q])
        required = [bool(r) for r in np.asarray(param_required[first:last]).tolist()]
        s_param = 0.0
        penalty = 0.0
        if n_params > 0 and na > 0:
            # Each parameter's best argument (the grid is arg-major: [a * n_params + p]).
            s_p = [max(ap[off + a * n_params + p] for a in range(na)) for p in range(n_params)]
            s_param = lam * max(s_p) + (1.0 - lam) * (math.fsum(s_p) / n_params)
            if penalize[q]:
                penalty = math.fsum(sigmoid(params.alpha * (params.tau - s)) * weight_of[r]
                                    for s, r in zip(s_p, required))
        elif n_params > 0 and penalize[q]:
            # No arguments: every parameter is unmatched (s_p = 0).
            sig0 = 1.0 / (1.0 + math.exp(-params.alpha * params.tau))
            penalty = math.fsum(sig0 * weight_of[r] for r in required)

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
