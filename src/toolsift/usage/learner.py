"""Learning from usage: example intents from trusted positives, then field weights.

:func:`learn` turns a usage log into a new index (the input index is never modified):

1. attribute the log (:mod:`toolsift.usage.attribution`);
2. trust an (intent -> tool) positive when at least ``min_voters`` distinct sessions
   from at least ``min_clients`` distinct client identities gave it and fewer voters
   saw the tool returned and passed over it;
3. add trusted intents to each tool's ``examples`` (de-duplicated against what the tool
   has, at most ``max_examples_per_tool`` learned ones, best supported first): the same
   document expansion ``toolsift eval`` measures with labelled training queries;
4. with at least ``min_train_intents`` trusted intents, retrain the field weights on
   them (:mod:`toolsift.usage.weights`) and keep them only if they rank held-out
   intents better.

:func:`learn_index` does the same on index directories, writing a new one atomically;
the input directory stays as it was, so serving it again is the rollback.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import ConfigDict, InstanceOf

from ..checking import Strict, check_fields
from ..errors import ToolsiftError
from ..kernels.params import ScoringParams
from .attribution import AttributionRules, Evidence, attribute, intent_key
from .store import UsageLog
from .weights import TrainingIntent, WeightOutcome, validate

__all__ = ["LearnConfig", "LearnResult", "UnknownToolsWarning", "learn", "learn_index", "trusted_intents", "REPORT_FILE"]

#: Written into a learned index directory: what was learned, from what.
REPORT_FILE = "usage-learn.json"


@dataclass(frozen=True)
class LearnConfig:
    """How usage becomes examples and weights.

    Attributes:
        rules: Attribution settings (window, per-session caps).
        min_voters: Distinct sessions (voters) an (intent, tool) positive needs to be trusted.
        min_clients: Distinct client identities behind those voters a positive needs
            (the recorded client: over HTTP the peer address, else the configured
            identity; all voters without one are one anonymous identity). Sessions are free to open,
            so this is what bounds collusion: with the default 5, fewer than five
            colluding clients cannot add an example to any tool.
        max_examples_per_tool: Learned intents kept per tool (the best supported).
        train_weights: Retrain the field weights when there is enough data.
        min_train_intents: Trusted intents needed before weights are retrained.
        validate: Keep what is learned only if it ranks held-out trusted intents
            better than the index before learning (see :func:`toolsift.usage.weights.validate`).
        min_validate_intents: With fewer trusted intents, examples are added without
            validation (too few to test; each is backed by ``min_voters`` sessions).
        alpha: Level of the validation's one-sided paired t-test.
        crossfit: Parts for cross-fitting and held-out validation of the weights.
        n_negatives: Hard negatives per intent in weight training.
    """

    rules: InstanceOf[AttributionRules] = field(default_factory=AttributionRules)
    min_voters: Annotated[int, Strict(ge=1)] = 2
    min_clients: Annotated[int, Strict(ge=1)] = 5
    max_examples_per_tool: Annotated[int, Strict(ge=0)] = 20
    train_weights: Annotated[bool, Strict()] = True
    min_train_intents: Annotated[int, Strict(ge=2)] = 30
    validate: Annotated[bool, Strict()] = True
    min_validate_intents: Annotated[int, Strict(ge=2)] = 10
    alpha: Annotated[float, Strict(gt=0, le=1)] = 0.05
    crossfit: Annotated[int, Strict(ge=2)] = 3
    n_negatives: Annotated[int, Strict(ge=1)] = 32

    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(arbitrary_types_allowed=True)

    def __post_init__(self) -> None:
        check_fields(self, "learn")


class UnknownToolsWarning(UserWarning):
    """The usage log votes for tool ids the index does not have (a log written by a
    gateway over another index: learn from the index the gateway saved with
    ``toolsift serve --save-index``)."""


@dataclass
class LearnResult:
    """The learned index and what changed.

    Attributes:
        index: The new :class:`~toolsift.toolindex.ToolIndex` (the input is untouched).
        added: Tool id -> intents added to its examples.
        params_before: The input index's scoring parameters.
        params_after: The learned index's.
        weights: What weight training decided (``None`` when it did not run).
        stats: Counts from attribution and trust.
        unknown_tools: Tool ids the log votes for that the index does not have
            (ignored; see :class:`UnknownToolsWarning`).
    """

    index: Any
    added: dict[str, tuple[str, ...]]
    params_before: ScoringParams
    params_after: ScoringParams
    weights: WeightOutcome | None
    stats: dict[str, int]
    unknown_tools: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether the learned index differs from the input."""
        return bool(self.added) or self.params_after != self.params_before

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready report (no index)."""
        w = self.weights
        return {
            "added": {t: list(v) for t, v in sorted(self.added.items())},
            "params_before": self.params_before.to_dict(),
            "params_after": self.params_after.to_dict(),
            "weights": None if w is None else {"adopted": w.adopted, "reason": w.reason,
                                               "validation": w.validation, "pairs": w.pairs},
            "stats": dict(self.stats),
            "unknown_tools": list(self.unknown_tools),
        }

    def summary(self) -> str:
        """What would change per tool, one line each, then the weights."""
        lines = [f"{len(self.added)} tool(s) gain {sum(len(v) for v in self.added.values())} example intent(s)"]
        for tool, intents in sorted(self.added.items()):
            shown = "; ".join(repr(i[:60]) for i in intents[:3])
            more = f" (+{len(intents) - 3} more)" if len(intents) > 3 else ""
            lines.append(f"  {tool}: +{len(intents)}: {shown}{more}")
        w = self.weights
        if w is None:
            lines.append("weights: unchanged; not validated (too few trusted intents)")
        else:
            lines.append(f"weights: {'retrained' if w.adopted else 'kept'} ({w.reason})")
            if w.adopted:
                before = ", ".join(f"{x:.3f}" for x in self.params_before.weights)
                after = ", ".join(f"{x:.3f}" for x in self.params_after.weights)
                lines.append(f"  field weights ({before}) -> ({after})")
        s = self.stats
        lines.append(f"log: {s.get('finds', 0)} finds, {s.get('uses', 0)} uses ({s.get('failed_uses_ignored', 0)} "
                     f"failed, ignored); {s.get('positives', 0)} positive votes, {s.get('trusted', 0)} trusted "
                     f"(intent, tool) pairs, {s.get('untrusted', 0)} below the trust bar")
        if self.unknown_tools:
            lines.append(_unknown_message(self.unknown_tools))
        return "\n".join(lines)


def _unknown_message(ids: tuple[str, ...]) -> str:
    shown = ", ".join(repr(t) for t in ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    return (f"warning: the log names {len(ids)} tool id(s) this index does not have ({shown}); their votes are "
            "ignored. Learn from the index the gateway served (toolsift serve --save-index DIR).")


def trusted_intents(evidence: Evidence, *, min_voters: int, known: set[str],
                    min_clients: int = 1) -> list[TrainingIntent]:
    """The intents with at least one trusted positive (see :func:`learn`), sorted by key."""
    out = []
    for key in sorted(evidence.intents):
        item = evidence.intents[key]
        pos = []
        for tool, voters in item.positives.items():
            against = len(item.negatives.get(tool, ()))
            clients = len(item.clients.get(tool, ()))
            if tool in known and len(voters) >= min_voters and len(voters) > against and clients >= min_clients:
                pos.append((-len(voters), tool))
        if not pos:
            evidence.bump("untrusted", len(item.positives))
            continue
        evidence.bump("trusted", len(pos))
        evidence.bump("untrusted", len(item.positives) - len(pos))
        tools = tuple(t for _, t in sorted(pos))
        negs = sorted(((-len(v), t) for t, v in item.negatives.items() if t not in tools and t in known))
        out.append(TrainingIntent(key, item.text, tools, tuple(t for _, t in negs)))
    return out


def _support(evidence: Evidence, intent: TrainingIntent, tool: str) -> tuple[int, float]:
    item = evidence.intents[intent.key]
    return (-len(item.positives[tool]), item.first_seen)


def learn(index: Any, log: UsageLog | Evidence, *, config: LearnConfig | None = None) -> LearnResult:
    """Learn from a usage log; returns a new index and what changed.

    Args:
        index: The :class:`~toolsift.toolindex.ToolIndex` to start from (not modified).
        log: The usage log, or evidence already attributed from one.
        config: Trust, caps and training settings; default :class:`LearnConfig()`.
    """
    cfg = config or LearnConfig()
    if not (hasattr(index, "catalog") and hasattr(index, "with_params")):
        raise TypeError(f"index must be a ToolIndex, got {type(index).__name__}")
    evidence = log if isinstance(log, Evidence) else attribute(log, rules=cfg.rules)
    catalog = index.catalog
    known = set(catalog.ids)
    unknown = tuple(sorted({t for item in evidence.intents.values() for t in item.positives if t not in known}))
    if unknown:
        import warnings

        warnings.warn(_unknown_message(unknown).removeprefix("warning: "), UnknownToolsWarning, stacklevel=2)
    intents = trusted_intents(evidence, min_voters=cfg.min_voters, known=known, min_clients=cfg.min_clients)
    # Per tool, its trusted intents, best supported first, capped.
    per_tool: dict[str, list[tuple[tuple[int, float], str]]] = {}
    for item in intents:
        for tool in item.positives:
            per_tool.setdefault(tool, []).append((_support(evidence, item, tool), item.text))
    added: dict[str, tuple[str, ...]] = {}
    learned: dict[str, tuple[str, ...]] = {}
    changed = []
    for tool in catalog:
        cands = [text for _, text in sorted(per_tool.get(tool.id, ()))][: cfg.max_examples_per_tool]
        if not cands:
            continue
        learned[tool.id] = tuple(cands)
        have = {intent_key(e) for e in tool.examples}
        new = tuple(t for t in cands if intent_key(t) not in have)
        if new:
            added[tool.id] = new
            changed.append(replace(tool, examples=tool.examples + new))
    params_before = index.config.params
    outcome = None
    if cfg.validate and len(intents) >= cfg.min_validate_intents:
        outcome = validate(index, intents, learned, parts=cfg.crossfit, n_negatives=cfg.n_negatives,
                           key_of=intent_key, alpha=cfg.alpha,
                           train_weights=cfg.train_weights and len(intents) >= cfg.min_train_intents)
    if outcome is not None and not outcome.keep_examples:
        added, changed = {}, []
    params_after = outcome.params if outcome is not None else params_before
    # Weights learned from raw intents: structured queries keep scoring as before.
    new_index = index.with_params(params_after, structured="keep")
    if changed:
        new_index.replace_tools(changed)
    evidence.bump("trusted_intents", len(intents))
    return LearnResult(new_index, added, params_before, params_after, outcome, dict(evidence.stats), unknown)


def _same(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def _check_out(src: Path, out: Path) -> None:
    """Refuse an OUT equal to, inside, or containing INDEX, by resolved path (symlinks,
    ``..``) and by file identity of the folders that exist (other names of one folder).

    Saving there would rewrite or delete the input's files (its generation folders, its
    manifest), and the input must stay loadable: serving it again is the rollback.
    """
    src_r, out_r = src.absolute().resolve(), out.absolute().resolve()
    how = None
    if out_r == src_r or _same(out_r, src_r):
        how = "is"
    elif src_r in out_r.parents or any(_same(p, src_r) for p in out_r.parents):
        how = "is inside"
    elif out_r in src_r.parents or (out_r.exists() and any(_same(out_r, p) for p in src_r.parents)):
        how = "contains"
    if how is not None:
        raise ToolsiftError(f"learn: OUT ({out}) {how} INDEX ({src}): OUT must be a folder of its own, outside "
                            "the input index, which is kept unchanged so that serving it again rolls the "
                            "learning back")


def learn_index(index_path: str | os.PathLike, usage_path: str | os.PathLike, out: str | os.PathLike | None, *,
                config: LearnConfig | None = None, dry_run: bool = False) -> LearnResult:
    """:func:`learn` on directories: load ``index_path``, read ``usage_path``, and unless
    ``dry_run`` save the learned index to ``out`` atomically with a report
    (:data:`REPORT_FILE`) beside its files.

    Raises:
        ToolsiftError: ``out`` is, is inside or contains the input index (it must stay
            loadable for rollback), or ``out`` is missing without ``dry_run``.
        IndexFormatError: ``index_path`` is not an index.
        UsageLogError: ``usage_path`` is not a usage log.
    """
    from ..toolindex import ToolIndex

    src = Path(index_path)
    if not dry_run:
        if out is None:
            raise ToolsiftError("learn: OUT is required unless --dry-run is given")
        _check_out(src, Path(out))
    if not Path(usage_path).is_file():
        raise ToolsiftError(f"learn: usage log {usage_path} does not exist")
    index = ToolIndex.load(src)
    with UsageLog(usage_path) as log:
        result = learn(index, log, config=config)
    if not dry_run:
        target = result.index.save(out)
        report = dict(result.to_dict(), base_index=str(src.absolute()), usage_log=str(Path(usage_path).absolute()),
                      config={k: v for k, v in asdict(config or LearnConfig()).items()})
        tmp = target / f".{REPORT_FILE}.tmp"
        tmp.write_text(json.dumps(report, indent=1, ensure_ascii=False, default=str), encoding="utf-8")
        os.replace(tmp, target / REPORT_FILE)
    return result
