"""Field weights from usage: pairwise training on trusted positives and hard negatives.

The training data is built the way ``toolsift eval`` builds it from labelled folds, so
what learning from usage does is what the offline feedback numbers measured:

* a query never meets its own text among a tool's examples: the intents are split in
  ``crossfit`` parts and each part is scored on the index whose examples come from the
  other parts only (cross-fitting);
* negatives are the tools the log saw returned but not used, then the current model's
  top-ranked wrong tools;
* what is learned is kept only if it ranks held-out intents better than the index
  before learning (NDCG@10 per intent, a one-sided paired t-test), so learning does
  not make the served ranking worse on what the log knows; trained weights replace
  the current ones only if they also beat the learned examples alone.
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

__all__ = ["TrainingIntent", "WeightOutcome", "validate", "part_of", "crossfit_scores"]

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
        own = {intents[r].key for r in rows.tolist()}
        changed = []
        for tool in base.catalog:
            extra = [e for e in examples.get(tool.id, ()) if key_of(e) not in own]
            stripped = _strip(tool, own, key_of)
            if extra:
                stripped = replace(stripped, examples=tuple(dict.fromkeys(stripped.examples + tuple(extra))))
            if stripped is not tool:
                changed.append(stripped)
        view = base.with_params(base.config.params, structured="keep")
        if changed:
            view.replace_tools(changed)
        fs = view.field_scores([intents[r].text for r in rows.tolist()], query_ids=[ids[r] for r in rows.tolist()])
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


def _ndcg(fs: FieldScores, params: ScoringParams, rows: np.ndarray, labels: Mapping[str, Sequence[str]]
          ) -> dict[str, float]:
    """NDCG@10 per intent (pytrec_eval)."""
    run = fs.run(params, rows, depth=_DEPTH)
    qrels = {fs.query_ids[r]: {t: 1 for t in labels[fs.query_ids[r]]} for r in rows}
    return {q: m["ndcg@10"] for q, m in evaluate(qrels, run, metrics=("ndcg@10",)).per_query.items()}


def _better(new: dict[str, float], old: dict[str, float], alpha: float) -> tuple[bool, float]:
    """Whether ``new`` beats ``old`` per intent: mean gain > 0 and a one-sided paired
    t-test at level ``alpha`` (a gain that may be noise is not taken)."""
    from scipy.stats import ttest_rel

    keys = sorted(old)
    a = np.asarray([new[k] for k in keys])
    b = np.asarray([old[k] for k in keys])
    if not (a - b).any():
        return False, 1.0
    p = float(ttest_rel(a, b, alternative="greater").pvalue)
    return bool((a - b).mean() > 0 and p < alpha), p


def validate(base, intents: Sequence[TrainingIntent], examples: Mapping[str, Sequence[str]], *,
             parts: int, n_negatives: int, key_of, train_weights: bool, alpha: float = 0.05) -> WeightOutcome:
    """Decide what to learn, on held-out intents only.

    Three candidates are scored per intent, each intent on an index whose learned
    examples come from the other parts only: the index before learning, the learned
    examples with the current weights, and (with ``train_weights``) with weights trained
    on the other parts. The better learned candidate is taken only if it beats the
    index before learning (:func:`_better`); otherwise nothing is learned. Weights are
    then trained on all intents.

    Args:
        base: The index before learning (its examples and current parameters).
        intents: Trusted intents.
        examples: The learned examples per tool (intent texts).
        parts: Cross-fitting / validation parts.
        n_negatives: Negatives per intent.
        key_of: The intent key function.
        train_weights: Also consider retrained weights.
        alpha: Level of the one-sided paired t-test against the index before learning.
    """
    current = base.config.params
    fs = crossfit_scores(base, intents, examples, parts=parts, key_of=key_of)
    labels = {i.key: i.positives for i in intents}
    part = np.asarray([part_of(i.key, parts) for i in intents])
    splits = [np.flatnonzero(part == p) for p in range(parts)]
    everything = np.arange(len(intents))
    before_fs = crossfit_scores(base, intents, {}, parts=parts, key_of=key_of)
    scores = {"before": _ndcg(before_fs, current, everything, labels),
              "current": _ndcg(fs, current, everything, labels)}
    all_pairs = None
    tc = TrainConfig(init=current, nonnegative=True, penalty=bool(fs.penalized.any()))
    if train_weights:
        negatives = _negatives(fs, current, intents, n_negatives)
        split_pairs = [make_pairs(fs, rows, labels, negatives, n_negatives=n_negatives) for rows in splits]
        trained: dict[str, float] = {}
        for p, rows in enumerate(splits):
            others = [split_pairs[q] for q in range(parts) if q != p and split_pairs[q].n_pairs]
            if rows.size == 0:
                continue
            params = train(concat_pairs(others), tc).params if others else current
            trained.update(_ndcg(fs, params, rows, labels))
        scores["trained"] = trained
        all_pairs = concat_pairs([p for p in split_pairs if p.n_pairs])
    val = {k: float(np.mean(list(v.values()))) for k, v in scores.items()}
    final = train(all_pairs, tc).params if all_pairs is not None else None  # set iff train_weights
    # All-zero weights score every tool alike: rankings then fall to tie-breaking by id,
    # which must never pass for a model, however the validation numbers look.
    degenerate = final is not None and sum(abs(w) for w in final.weights) < 1e-9
    use_trained = train_weights and not degenerate and val["trained"] >= val["current"]
    best = "trained" if use_trained else "current"
    ok, pvalue = _better(scores[best], scores["before"], alpha)
    val["p_value"] = pvalue
    if not ok:
        return WeightOutcome(current, False, f"learning did not clearly beat the index before learning on held-out "
                             f"intents (NDCG@10 {val[best]:.4f} vs {val['before']:.4f}, p={pvalue:.3g}); "
                             "nothing learned", val, 0, keep_examples=False)
    if not use_trained or final is None or all_pairs is None:
        why = ("weights not retrained (train_weights off)" if not train_weights else
               "trained weights are all zero" if degenerate else
               f"trained weights did not beat the current ones on held-out intents "
               f"(NDCG@10 {val['trained']:.4f} vs {val['current']:.4f})")
        return WeightOutcome(current, False, f"examples kept (NDCG@10 {val['before']:.4f} -> {val['current']:.4f}, "
                             f"p={pvalue:.3g}); {why}", val, 0)
    # On the one documented score scale (same ranking), so thresholds keep their meaning.
    params = final.to_unit_scale()
    return WeightOutcome(params, True, f"held-out NDCG@10 {val['before']:.4f} -> {val['current']:.4f} (examples) "
                         f"-> {val['trained']:.4f} (weights), p={pvalue:.3g}", val, all_pairs.n_pairs)
