"""Retrieval metrics through pytrec_eval, and TREC run files.

Every number comes from ``pytrec_eval`` (the Python binding of NIST's ``trec_eval``), so
results match other papers' tables computed the same way; no metric formula is written
here. Two behaviours of ``trec_eval`` matter when reading the numbers:

* **Ties.** Documents are ranked by score, descending; equal scores are ordered by
  document id, *descending* byte order (``"b"`` before ``"a"``, ``"a9"`` before
  ``"a10"``). The order of a query's dictionary, and any rank the caller had in mind,
  are ignored. :func:`ranked` and :func:`write_trec_run` use the same rule.
* **Missing queries.** ``pytrec_eval`` silently leaves out a query that has judgements
  but no retrieved documents, which would raise the mean. :func:`evaluate` scores such a
  query 0 on every metric and pools over *all* judged queries. Queries in the run but
  not in the judgements are ignored.

``nDCG`` uses the relevance grade as the gain (``trec_eval``'s linear gain); with the
binary labels of the benchmarks here that is the usual nDCG.

Metric names are ``"<family>@<k>"`` or a bare family: ``ndcg@k``, ``recall@k``,
``precision@k``, ``map@k``, ``success@k``, ``completeness@k``, and ``ndcg``, ``map``,
``mrr``, ``rprec``.

``completeness@k`` (the ToolLens / COLT measure for multi-tool tasks) is 1 for a query
whose relevant tools are *all* in the top ``k``, else 0: trec_eval's ``recall@k`` equal to
1, read from the same evaluation (no formula of ours beyond that test).
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ToolsiftError

__all__ = [
    "METRICS",
    "EvalResult",
    "evaluate",
    "ranked",
    "write_trec_run",
    "read_trec_run",
    "RunFormatError",
]

Qrels = Mapping[str, Mapping[str, int]]
Run = Mapping[str, Mapping[str, float]]

#: Default metrics: the cut-offs reported by the MFTR and ToolRet papers, plus MRR.
METRICS: tuple[str, ...] = (
    "ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "ndcg@20",
    "recall@1", "recall@2", "recall@5", "recall@10", "recall@20",
    "mrr",
)

# Our family name -> trec_eval measure, for "family@k" and for a bare family.
_CUT_FAMILIES = {
    "ndcg": "ndcg_cut",
    "recall": "recall",
    "precision": "P",
    "p": "P",
    "map": "map_cut",
    "success": "success",
    "completeness": "recall",  # 1 when recall@k is 1 (see the module docstring)
}
_WHOLE = {"mrr": "recip_rank", "ndcg": "ndcg", "map": "map", "rprec": "Rprec"}
_NAME = re.compile(r"^([a-z]+)(?:@(\d+))?$")


class RunFormatError(ToolsiftError, ValueError):
    """A TREC run file or run dictionary is malformed."""


@dataclass(frozen=True)
class EvalResult:
    """Metric values per query and pooled.

    Attributes:
        metrics: The metric names, in the order asked for.
        per_query: ``{query id: {metric: value}}`` for every judged query; a query the
            run does not cover scores 0.
        mean: ``{metric: mean over all judged queries}``.
    """

    metrics: tuple[str, ...]
    per_query: dict[str, dict[str, float]]
    mean: dict[str, float]

    def __str__(self) -> str:
        return "  ".join(f"{m}={self.mean[m]:.4f}" for m in self.metrics)


def _trec_measure(metric: str) -> tuple[str, str]:
    """``(measure spec for RelevanceEvaluator, key in its output)`` for one metric."""
    m = _NAME.match(metric)
    if m is None:
        raise ValueError(f"metric {metric!r}: expected lower-case 'name@k' or 'name'")
    family, cut = m.group(1), m.group(2)
    if cut is not None:
        trec = _CUT_FAMILIES.get(family)
        if trec is None or int(cut) < 1:
            raise ValueError(
                f"metric {metric!r}: unknown; cut-off families are {sorted(_CUT_FAMILIES)}, k >= 1"
            )
        k = int(cut)
        return f"{trec}.{k}", f"{trec}_{k}"
    trec = _WHOLE.get(family)
    if trec is None:
        raise ValueError(
            f"metric {metric!r}: unknown; expected one of {sorted(_WHOLE)} or "
            f"{sorted(_CUT_FAMILIES)} with '@k'"
        )
    return trec, trec


def _value(metric: str, value: float) -> float:
    if metric.startswith("completeness@"):
        # recall is a ratio of small integers: all found is exactly 1.0 in trec_eval's output
        return 1.0 if value >= 1.0 - 1e-9 else 0.0
    return value


def _clean_run(run: Run) -> dict[str, dict[str, float]]:
    """The run as pytrec_eval wants it: str ids, float scores, no empty queries."""
    out: dict[str, dict[str, float]] = {}
    for qid, docs in run.items():
        scores: dict[str, float] = {}
        for doc, score in docs.items():
            value = float(score)
            # trec_eval orders NaN arbitrarily, which would make metrics meaningless.
            if not math.isfinite(value):
                raise RunFormatError(f"run[{qid!r}][{doc!r}]: score must be finite, got {score!r}")
            scores[str(doc)] = value
        if scores:
            out[str(qid)] = scores
    return out


def evaluate(qrels: Qrels, run: Run, metrics: Sequence[str] = METRICS) -> EvalResult:
    """Score a run against relevance judgements with pytrec_eval.

    Args:
        qrels: ``{query id: {tool id: relevance}}``; relevance > 0 means relevant.
            Every query here is scored, whether or not the run has it.
        run: ``{query id: {tool id: score}}``; higher is better, ties are broken by
            tool id (see the module docstring). Queries not in ``qrels`` are ignored.
        metrics: Metric names, e.g. ``("ndcg@10", "recall@10", "mrr")``.

    Returns:
        Per-query values and their means over all queries of ``qrels``.

    Raises:
        ValueError: If ``qrels`` is empty or a metric name is unknown.
        RunFormatError: If a score is not a finite number.
        MissingExtraError: pytrec_eval is not installed (``pip install "toolsift[eval]"``).
    """
    from ..extras import require_extra

    pytrec_eval = require_extra("pytrec_eval", extra="eval", feature="evaluation metrics")

    if not qrels:
        raise ValueError("qrels is empty: there is nothing to evaluate")
    names = tuple(dict.fromkeys(metrics))
    if not names:
        raise ValueError("no metrics requested")
    measures = {name: _trec_measure(name) for name in names}
    judged = {str(q): {str(d): int(r) for d, r in docs.items()} for q, docs in qrels.items()}
    evaluator = pytrec_eval.RelevanceEvaluator(judged, {spec for spec, _ in measures.values()})
    raw = evaluator.evaluate(_clean_run(run))
    per_query: dict[str, dict[str, float]] = {}
    for qid in judged:
        values = raw.get(qid)
        per_query[qid] = {
            name: _value(name, float(values[key])) if values is not None else 0.0
            for name, (_, key) in measures.items()
        }
    n = len(per_query)
    mean = {name: math.fsum(v[name] for v in per_query.values()) / n for name in names}
    return EvalResult(metrics=names, per_query=per_query, mean=mean)


def ranked(scores: Mapping[str, float], depth: int | None = None) -> list[tuple[str, float]]:
    """One query's documents in trec_eval's order: score descending, then id descending.

    Args:
        scores: ``{tool id: score}``.
        depth: Keep only the first ``depth`` documents; ``None`` keeps all.

    Returns:
        ``[(tool id, score), ...]`` best first.
    """
    order = sorted(((str(d), float(s)) for d, s in scores.items()),
                   key=lambda item: (item[1], item[0]), reverse=True)
    return order if depth is None else order[:depth]


def _check_token(value: str, what: str) -> str:
    if not value or any(c.isspace() for c in value):
        raise RunFormatError(f"{what} {value!r}: TREC run fields cannot be empty or hold spaces")
    return value


def write_trec_run(
    run: Run, path: str | os.PathLike[str], *, tag: str = "toolsift", depth: int | None = 100
) -> Path:
    """Write a run as a standard six-column TREC file, atomically.

    Each line is ``qid Q0 doc rank score tag``; queries keep the run's order, documents
    follow :func:`ranked` and ranks start at 1. Scores are written with ``repr`` so they
    read back as the same floats: evaluating the file gives the same metrics as the
    dictionary for every cut-off up to ``depth`` (MRR too when the first relevant tool
    is within ``depth``). The file is written to a temporary name beside ``path`` and
    moved into place, so a reader never sees half a file.

    Args:
        run: ``{query id: {tool id: score}}``.
        path: Destination file.
        tag: Run name in the sixth column.
        depth: Documents kept per query; ``None`` keeps all.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        RunFormatError: If an id or the tag is empty or holds whitespace, or a score is
            not finite.
        ValueError: If ``depth`` is less than 1.
    """
    if depth is not None and depth < 1:
        raise ValueError(f"depth must be >= 1 or None, got {depth}")
    _check_token(tag, "tag")
    lines: list[str] = []
    for qid, docs in _clean_run(run).items():
        _check_token(qid, "query id")
        for rank, (doc, score) in enumerate(ranked(docs, depth), start=1):
            lines.append(f"{qid} Q0 {_check_token(doc, 'tool id')} {rank} {score!r} {tag}\n")
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.writelines(lines)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def read_trec_run(path: str | os.PathLike[str]) -> dict[str, dict[str, float]]:
    """Read a six-column TREC run file.

    Args:
        path: The run file; blank lines are skipped.

    Returns:
        ``{query id: {tool id: score}}``, queries and documents in file order. The rank
        column is not used (trec_eval ignores it too).

    Raises:
        RunFormatError: On a line without six fields, a non-numeric score, or a tool
            listed twice for one query; the message names file and line.
    """
    source = Path(path)
    out: dict[str, dict[str, float]] = {}
    with source.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 6:
                raise RunFormatError(f"{source}:{n}: expected 6 fields "
                                     f"'qid Q0 doc rank score tag', got {len(fields)}")
            qid, _, doc, _, score, _ = fields
            try:
                value = float(score)
            except ValueError:
                raise RunFormatError(f"{source}:{n}: score {score!r} is not a number") from None
            docs = out.setdefault(qid, {})
            if doc in docs:
                raise RunFormatError(f"{source}:{n}: tool {doc!r} listed twice for query {qid!r}")
            docs[doc] = value
    return out
