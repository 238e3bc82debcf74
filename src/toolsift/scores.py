"""Per-field scores of every (query, tool) pair, for evaluation and training.

``ToolIndex.search`` scores only candidate tools; research work (reproducing a paper's
numbers, training weights, ablations) needs every tool's field scores once, then scores
them under many parameter settings. :class:`FieldScores` holds them as dense arrays and
scores them with vectorised NumPy, following exactly the kernel's formula.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kernels.params import ScoringParams

__all__ = ["FieldScores"]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # Split by sign so exp() never overflows.
    out = np.empty_like(x)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    z = np.exp(x[~pos])
    out[~pos] = z / (1.0 + z)
    return out


@dataclass
class FieldScores:
    """Field scores of ``nq`` queries against all ``nt`` tools of an index.

    Attributes:
        query_ids: Caller-given ids, one per query.
        tool_ids: Tool ids in catalogue order.
        base: ``float32[nq, nt, 4]``: (description, mean parameter, response, examples),
            each already the max over the query's needs.
        param_sims: ``float32[nq, n_params]``: per tool parameter, the max over the
            query's arguments (0 without arguments).
        penalized: ``bool[nq]``: whether the penalty applies (the query had extracted
            arguments, or the index config penalises queries without them).
        param_tool: ``int64[n_params]``: the tool of each parameter.
        required: ``bool[n_params]``: whether each parameter is required.
    """

    query_ids: list[str]
    tool_ids: list[str]
    base: np.ndarray
    param_sims: np.ndarray
    penalized: np.ndarray
    param_tool: np.ndarray
    required: np.ndarray

    def penalty(self, params: ScoringParams, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """``float64[len(rows), nt]``: the missing-parameter penalty P(q, t)."""
        sims = self.param_sims[rows].astype(np.float64)
        pw = np.where(self.required, params.w_req, params.w_opt)
        contrib = _sigmoid(params.alpha * (params.tau - sims)) * pw
        nq, nt = sims.shape[0], len(self.tool_ids)
        # Sum per (query, tool) in one bincount over flattened (row, tool) keys.
        keys = (np.arange(nq)[:, None] * nt + self.param_tool[None, :]).ravel()
        out = np.bincount(keys, weights=contrib.ravel(), minlength=nq * nt).reshape(nq, nt)
        out[~self.penalized[rows]] = 0.0
        return out

    def score(self, params: ScoringParams, rows: np.ndarray | slice = slice(None), *,
              penalty: bool = True) -> np.ndarray:
        """``float64[len(rows), nt]``: S(q, t) for every tool."""
        s = self.base[rows].astype(np.float64) @ np.asarray(params.weights, dtype=np.float64) + params.bias
        if penalty:
            s = s - self.penalty(params, rows)
        return s

    def run(self, params: ScoringParams, rows: np.ndarray | slice = slice(None), *, depth: int = 100,
            penalty: bool = True) -> dict[str, dict[str, float]]:
        """Top-``depth`` tools per query as a ``{qid: {tool_id: score}}`` run."""
        scores = self.score(params, rows, penalty=penalty)
        qids = np.asarray(self.query_ids, dtype=object)[rows]
        return scores_to_run(scores, list(qids), self.tool_ids, depth=depth)

    def subset(self, rows: np.ndarray) -> FieldScores:
        """The scores of some queries only."""
        return FieldScores([self.query_ids[i] for i in rows], self.tool_ids, self.base[rows],
                           self.param_sims[rows], self.penalized[rows], self.param_tool, self.required)


def scores_to_run(scores: np.ndarray, query_ids: list[str], tool_ids: list[str], *,
                  depth: int = 100) -> dict[str, dict[str, float]]:
    """Dense ``[nq, nt]`` scores -> a run keeping each query's top ``depth`` tools."""
    depth = min(depth, scores.shape[1])
    run: dict[str, dict[str, float]] = {}
    for i, qid in enumerate(query_ids):
        row = scores[i]
        top = np.argpartition(-row, depth - 1)[:depth] if depth < row.size else np.arange(row.size)
        run[qid] = {tool_ids[j]: float(row[j]) for j in top}
    return run
