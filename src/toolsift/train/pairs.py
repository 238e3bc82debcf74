"""Training pairs: (query, relevant tool) against (query, hard negative tool).

Every (query, tool) that appears on either side of a pair becomes one *side*: its four
base features, whether the penalty applies, and its parameters' similarities as a ragged
segment. Pairs then index sides, so each step scores every side once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..scores import FieldScores

__all__ = ["PairSet", "concat_pairs", "make_pairs"]


@dataclass
class PairSet:
    """Sides and pairs for pairwise training.

    Attributes:
        base: ``float64[n_sides, 4]`` field features.
        penalized: ``bool[n_sides]``.
        param_sims: ``float64[n_entries]``: the sides' parameter similarities, concatenated.
        param_side: ``int64[n_entries]``: the side of each entry.
        param_required: ``bool[n_entries]``.
        pos: ``int64[n_pairs]`` side of the relevant tool; ``neg``: of the negative.
        param_max: ``float64[n_sides]``: max of the side's parameter similarities (0 without
            parameters); the trainer pools it with the mean in ``base[:, 1]``.
        present: ``bool[n_sides, 4]``: which fields the side's tool has.
    """

    base: np.ndarray
    penalized: np.ndarray
    param_sims: np.ndarray
    param_side: np.ndarray
    param_required: np.ndarray
    pos: np.ndarray
    neg: np.ndarray
    param_max: np.ndarray | None = None
    present: np.ndarray | None = None

    @property
    def n_pairs(self) -> int:
        """Number of pairs."""
        return int(self.pos.size)


def make_pairs(scores: FieldScores, rows: Sequence[int] | np.ndarray, labels: Mapping[str, Sequence[str]],
               negatives: Mapping[str, Sequence[str]], *, n_negatives: int = 64) -> PairSet:
    """Pair every relevant tool of each query with its first ``n_negatives`` negatives.

    Args:
        scores: Field scores of (at least) the training queries against all tools.
        rows: Rows of ``scores`` to train on (the training queries).
        labels: Relevant tool ids per query id.
        negatives: Ranked hard-negative tool ids per query id (relevant ones are skipped).
        n_negatives: Negatives kept per query.

    Raises:
        KeyError: A label or negative names a tool that ``scores`` does not have.
    """
    tool_pos = {t: i for i, t in enumerate(scores.tool_ids)}
    side_of: dict[tuple[int, int], int] = {}
    sides: list[tuple[int, int]] = []
    pos: list[int] = []
    neg: list[int] = []

    def side(r: int, t: int) -> int:
        key = (r, t)
        s = side_of.get(key)
        if s is None:
            s = side_of[key] = len(sides)
            sides.append(key)
        return s

    for r in rows:
        qid = scores.query_ids[r]
        rel = list(dict.fromkeys(labels.get(qid, ())))
        if not rel:
            continue
        rel_set = set(rel)
        negs = [n for n in negatives.get(qid, ()) if n not in rel_set][:n_negatives]
        for p in rel:
            ps = side(r, tool_pos[p])
            for neg_id in negs:
                pos.append(ps)
                neg.append(side(r, tool_pos[neg_id]))

    n = len(sides)
    sr = np.fromiter((s[0] for s in sides), dtype=np.int64, count=n)
    st = np.fromiter((s[1] for s in sides), dtype=np.int64, count=n)
    base = scores.base[sr, st].astype(np.float64) if n else np.zeros((0, 4))
    # Ragged parameter segments: for each side, its tool's parameters.
    order = np.argsort(scores.param_tool, kind="stable")
    ptool = scores.param_tool[order]
    counts = np.bincount(ptool, minlength=len(scores.tool_ids))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    c = counts[st]
    side_idx = np.repeat(np.arange(n), c)
    local = np.arange(int(c.sum())) - np.repeat(np.cumsum(c) - c, c)
    param_cols = order[np.repeat(starts[st], c) + local]
    pmax = np.zeros(n)
    if side_idx.size:
        seg = np.flatnonzero(np.r_[True, side_idx[1:] != side_idx[:-1]])
        pmax[side_idx[seg]] = np.maximum.reduceat(
            scores.param_sims[sr[side_idx], param_cols].astype(np.float64), seg)
    present = (scores.present[st] if scores.present is not None else np.ones((n, 4), bool))
    return PairSet(
        param_max=pmax,
        present=present,
        base=base,
        penalized=scores.penalized[sr] if n else np.zeros(0, bool),
        param_sims=scores.param_sims[sr[side_idx], param_cols].astype(np.float64),
        param_side=side_idx.astype(np.int64),
        param_required=scores.required[param_cols],
        pos=np.asarray(pos, dtype=np.int64),
        neg=np.asarray(neg, dtype=np.int64),
    )


def concat_pairs(sets: Sequence[PairSet]) -> PairSet:
    """One :class:`PairSet` holding the sides and pairs of several (e.g. one per data set,
    to learn weights across catalogues)."""
    if not sets:
        raise ValueError("concat_pairs: no pair sets given")
    offsets = np.cumsum([0] + [p.base.shape[0] for p in sets])
    cat = np.concatenate

    def opt(name: str, default) -> np.ndarray:
        return cat([getattr(p, name) if getattr(p, name) is not None else default(p) for p in sets])

    return PairSet(
        base=cat([p.base for p in sets]),
        penalized=cat([p.penalized for p in sets]),
        param_sims=cat([p.param_sims for p in sets]),
        param_side=cat([p.param_side + o for p, o in zip(sets, offsets)]),
        param_required=cat([p.param_required for p in sets]),
        pos=cat([p.pos + o for p, o in zip(sets, offsets)]),
        neg=cat([p.neg + o for p, o in zip(sets, offsets)]),
        param_max=opt("param_max", lambda p: np.zeros(p.base.shape[0])),
        present=opt("present", lambda p: np.ones((p.base.shape[0], 4), bool)),
    )
