"""Per-field scores of every (query, tool) pair, for evaluation and training.

``ToolIndex.search`` scores only candidate tools; research work (reproducing a paper's
numbers, training weights, ablations) needs every tool's field scores once, then scores
them under many parameter settings. :class:`FieldScores` holds them as dense arrays and
scores them with vectorised NumPy, following exactly the kernel's formula.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .kernels.params import ScoringParams

__all__ = ["FieldScores", "field_presence", "presence_bits"]


def field_presence(tools: Iterable, *, name_in_description: bool = True) -> np.ndarray:
    """``bool[n_tools, 4]``: whether each tool has each field (description, parameters,
    response, examples): some non-blank text, at least one parameter. Used by weight
    renormalisation; cheap, and derived from the catalogue alone so a loaded index agrees
    with the one that was built."""
    rows = [(name_in_description or bool(t.description.strip()), len(t.parameters) > 0,
             bool(t.response.strip()), any(e.strip() for e in t.examples)) for t in tools]
    return np.asarray(rows, dtype=bool).reshape(-1, 4)


def presence_bits(mask: np.ndarray) -> np.ndarray:
    """``uint8[n_tools]``: :func:`field_presence` as the kernel's field bits (1, 2, 4, 8)."""
    return (np.asarray(mask, dtype=np.uint8) << np.arange(4, dtype=np.uint8)).sum(axis=1).astype(np.uint8)


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
        present: ``bool[nt, 4]``: which fields each tool has (:func:`field_presence`);
            ``None`` = all (read only by renormalising parameters).
    """

    query_ids: list[str]
    tool_ids: list[str]
    base: np.ndarray
    param_sims: np.ndarray
    penalized: np.ndarray
    param_tool: np.ndarray
    required: np.ndarray
    present: np.ndarray | None = None

    def param_max(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """``float64[len(rows), nt]``: per tool the max of its parameter similarities (0 for
        a tool without parameters)."""
        sims = self.param_sims[rows].astype(np.float64)
        nt = len(self.tool_ids)
        out = np.zeros((sims.shape[0], nt))
        if sims.shape[1]:
            # param_tool is grouped by tool (CSR order), so one reduceat per run of a tool.
            order = np.argsort(self.param_tool, kind="stable")
            pt = self.param_tool[order]
            starts = np.flatnonzero(np.r_[True, pt[1:] != pt[:-1]])
            out[:, pt[starts]] = np.maximum.reduceat(sims[:, order], starts, axis=1)
        return out

    def features(self, params: ScoringParams, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """``float64[len(rows), nt, 4]``: field scores with the parameters field pooled as
        ``params`` says (``base`` holds the mean)."""
        base = self.base[rows].astype(np.float64)
        lam = params.param_max_share
        if lam:
            base[..., 1] = lam * self.param_max(rows) + (1.0 - lam) * base[..., 1]
        return base

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
        w = np.asarray(params.weights, dtype=np.float64)
        base = self.features(params, rows)
        if params.renormalize:
            present = np.ones((base.shape[1], 4), bool) if self.present is None else self.present
            mass = present @ np.abs(w)
            scale = np.divide(np.abs(w).sum(), mass, out=np.ones_like(mass), where=mass > 0)
            s = ((base * present) @ w) * scale + params.bias
        else:
            s = base @ w + params.bias
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
                           self.param_sims[rows], self.penalized[rows], self.param_tool, self.required,
                           self.present)


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
