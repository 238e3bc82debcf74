"""Field weights from usage: pairwise training on trusted positives and hard negatives.

The training data is built the way ``toolsift eval`` builds it from labelled folds, so
what learning from usage does is what the offline feedback numbers measured:

* a query never meets its own text among a tool's examples: the intents are split in
  ``crossfit`` parts and each part is scored on the index whose examples come from the
  other parts only (cross-fitting);
* negatives are the tools the log saw returned but not used, then the current model's
  top-ranked wrong tools;
* the trained weights replace the current ones only if they rank held-out intents
  better (NDCG@10, inner cross-validation over the same parts), so learning never
  makes the served ranking worse on what the log knows.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..evaluate.metrics import evaluate
from ..kernels.params import ScoringParams
from ..schema import Tool
from ..scores import FieldScores
from ..train import TrainConfig, concat_pairs, make_pairs, train

__all__ = ["TrainingIntent", "WeightOutcome", "fit_weights", "part_of"]

_DEPTH = 10


@dataclass(frozen=True)
class TrainingIntent:
    """One trusted intent: its key, text, positive tools and logged weak negatives."""

    key: str
    text: str
    positives: tuple[str, ...]
    negatives: tuple[str, ...] = ()


@dataclass
class WeightOutcome:
    """What weight training decided.

    Attributes:
        params: The parameters to serve (the current ones when not adopted).
        adopted: Whether trained weights replaced the current ones.
        reason: Why (or why not).
        validation: Held-out NDCG@10 of the current and the trained weights (with the
            learned examples) and of the index before learning (``"before"``).
        pairs: Training pairs used.
        keep_examples: False when the index before learning ranked the intents better
            than either learned variant: then nothing is learned at all.
    """

    params: ScoringParams
    adopted: bool
    reason: str
    validation: dict[str, float]
    pairs: int = 0
    keep_examples: bool = True


def part_of(key: str, parts: int) -> int:
    """The cross-fitting part of an intent: a stable hash, so a relearn splits alike."""
    return zlib.crc32(key.encode("utf-8")) % parts


def _strip(tool: Tool, keys: set[str], key_of) -> Tool:
    kept = tuple(e for e in tool.examples if key_of(e) not in keys)
    return tool if len(kept) == len(tool.examples) else replace(tool, examples=kept)


def crossfit_scores(base, intents: Sequence[TrainingIntent], examples: Mapping[str, Sequence[str]], *,
                    parts: int, key_of) -> FieldScores:
    """Field scores of every intent on the base index plus the learned examples of the
    *other* parts (and none of its own part, even if the base already had them)."""
    n = len(intents)
    ids = [i.key for i in intents]
    part = np.asarray([part_of(i.key, parts) for i in intents])
    out: FieldScores | None = None
    for p in range(parts):
        rows = np.flatnonzero(part == p)
        if rows.size == 0:
            continue
        own = {intents[r].key for r in rows}
        changed = []
        for tool in base.catalog:
            extra = [e for e in examples.get(tool.id, ()) if key_of(e) not in own]
            stripped = _strip(tool, own, key_of)
            if extra:
                stripped = replace(stripped, examples=tuple(dict.fromkeys(stripped.examples + tuple(extra))))
            if stripped is not tool:
                changed.append(stripped)
        view = base.with_params(base.config.params)
        if changed:
            view.replace_tools(changed)
        fs = view.field_scores([intents[r].text for r in rows], query_ids=[ids[r] for r in rows])
        if out is None:
            out = FieldScores(ids, fs.tool_ids, np.zeros((n,) + fs.base.shape[1:], np.float32),
                              np.zeros((n, fs.param_sims.shape[1]), np.float32), np.zeros(n, bool),
                              fs.param_tool, fs.required, fs.present)
        out.base[rows] = fs.base
        out.param_sims[rows] = fs.param_sims
        out.penalized[rows] = fs.penalized
    assert out is not None
    return out


def _negatives(fs: FieldScores, params: ScoringParams, intents: Sequence[TrainingIntent], n: int
               ) -> dict[str, tuple[str, ...]]:
    """Logged negatives first, then the model's best-scored wrong tools, ``n`` in all."""
    scores = fs.score(params)
    out = {}
    for r, item in enumerate(intents):
        pos = set(item.positives)
        top = np.argsort(-scores[r], kind="stable")[: n + len(pos)]
        model = [fs.tool_ids[j] for j in top]
        ranked = [t for t in dict.fromkeys(list(item.negatives) + model) if t not in pos]
        out[item.key] = tuple(ranked[:n])
    return out


def _ndcg(fs: FieldScores, params: ScoringParams, rows: np.ndarray, labels: Mapping[str, Sequence[str]]) -> float:
    run = fs.run(params, rows, depth=_DEPTH)
    qrels = {fs.query_ids[r]: {t: 1 for t in labels[fs.query_ids[r]]} for r in rows}
    return evaluate(qrels, run, metrics=("ndcg@10",)).mean["ndcg@10"]


def fit_weights(base, intents: Sequence[TrainingIntent], examples: Mapping[str, Sequence[str]], *,
                parts: int, n_negatives: int, key_of, min_gain: float = 0.0) -> WeightOutcome:
    """Train field weights on the intents; adopt them only if held-out NDCG@10 improves.

    Args:
        base: The index before learning (its examples and current parameters).
        intents: Trusted intents.
        examples: The learned examples per tool (intent texts).
        parts: Cross-fitting / validation parts.
        n_negatives: Negatives per intent.
        key_of: The intent key function.
        min_gain: Held-out NDCG@10 the trained weights must add to be adopted.
    """
    current = base.config.params
    fs = crossfit_scores(base, intents, examples, parts=parts, key_of=key_of)
    labels = {i.key: i.positives for i in intents}
    negatives = _negatives(fs, current, intents, n_negatives)
    part = np.asarray([part_of(i.key, parts) for i in intents])
    tc = TrainConfig(init=current, nonnegative=True, penalty=bool(fs.penalized.any()))
    splits = [np.flatnonzero(part == p) for p in range(parts)]
    split_pairs = [make_pairs(fs, rows, labels, negatives, n_negatives=n_negatives) for rows in splits]
    val = {"current": 0.0, "trained": 0.0}
    n_val = 0
    for p, rows in enumerate(splits):
        others = [split_pairs[q] for q in range(parts) if q != p and split_pairs[q].n_pairs]
        if rows.size == 0 or not others:
            continue
        trained = train(concat_pairs(others), tc).params
        val["current"] += _ndcg(fs, current, rows, labels) * rows.size
        val["trained"] += _ndcg(fs, trained, rows, labels) * rows.size
        n_val += rows.size
    if n_val == 0:
        return WeightOutcome(current, False, "not enough intents in every part to validate", {})
    val = {k: v / n_val for k, v in val.items()}
    # The index before learning, on the same intents (its examples hold none of them
    # unless it was learned already: then they are stripped as in cross-fitting).
    rows = np.concatenate([r for r in splits if r.size])
    before = crossfit_scores(base, [intents[r] for r in rows], {}, parts=parts, key_of=key_of)
    val["before"] = _ndcg(before, current, np.arange(rows.size), labels)
    all_pairs = concat_pairs([p for p in split_pairs if p.n_pairs])
    if max(val["trained"], val["current"]) < val["before"]:
        return WeightOutcome(current, False, f"learning did not beat the index before learning on held-out intents "
                             f"(NDCG@10 {max(val['trained'], val['current']):.4f} vs {val['before']:.4f}); "
                             "nothing learned", val, 0, keep_examples=False)
    if val["trained"] < val["current"] + min_gain:
        return WeightOutcome(current, False, f"trained weights did not beat the current ones on held-out intents "
                             f"(NDCG@10 {val['trained']:.4f} vs {val['current']:.4f})", val, all_pairs.n_pairs)
    params = train(all_pairs, tc).params
    return WeightOutcome(params, True, f"held-out NDCG@10 {val['current']:.4f} -> {val['trained']:.4f}", val,
                         all_pairs.n_pairs)
