"""Complex-task retrieval (ToolReAGt style): one search per sub-task, then a merge.

:func:`search_task` works with any index exposing ``search_batch(queries, k=...)`` that
returns ranked hits with ``id`` and ``score`` (e.g. :class:`~toolsift.ToolIndex`), so it
needs no change to the index class.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ..errors import QueryError
from ..schema import MAX_TEXT_CHARS, Query
from .rules import decompose, extract_arguments

__all__ = ["StepResult", "TaskResult", "search_task"]


class _Searchable(Protocol):
    def search_batch(self, queries: Sequence[Any], *, k: int = 5, complete: bool = False) -> list[list[Any]]: ...


@dataclass(frozen=True)
class StepResult:
    """Hits for one sub-task.

    Attributes:
        step: The sub-task text.
        hits: Ranked hits for it, best first.
    """

    step: str
    hits: list[Any]


@dataclass(frozen=True)
class TaskResult:
    """Per-step results plus a merged ranking.

    Attributes:
        task: The task text.
        steps: One :class:`StepResult` per sub-task, in task order.
        merged: Every tool hit by any step, once, scored by its best score over steps,
            best first; ties go to the tool found in the earlier step (then its rank
            there). ``rank`` is renumbered 1..n.
        best_step: ``{tool id: index of the step that gave its merged score}``.
    """

    task: str
    steps: list[StepResult]
    merged: list[Any]
    best_step: dict[str, int]


def _step_query(clause: str) -> Query | str:
    # A decomposed step keeps only the arguments its own clause mentions, so one step's
    # roles do not penalise tools serving another step.
    q = decompose(clause, max_needs=1, arguments=False)
    args = extract_arguments(clause)
    return Query(needs=q.needs, arguments=args, text=q.text)


def _check_steps(steps: Sequence[str]) -> list[str]:
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
        raise QueryError("steps", "expected a list of step strings")
    if not steps:
        raise QueryError("steps", "expected at least one step")
    out = []
    for i, s in enumerate(steps):
        if not isinstance(s, str) or not s.strip():
            raise QueryError(f"steps[{i}]", "each step must be a non-empty string")
        if len(s) > MAX_TEXT_CHARS:
            raise QueryError(f"steps[{i}]", f"step is longer than {MAX_TEXT_CHARS:,} characters")
        out.append(s)
    return out


def search_task(index: _Searchable, task: str, *, steps: Sequence[str] | None = None,
                k: int = 5, complete: bool = False) -> TaskResult:
    """Retrieve tools for every sub-task of ``task`` and merge the rankings.

    Args:
        index: A :class:`~toolsift.ToolIndex` or anything with the same ``search_batch``.
        task: The complex task in plain text.
        steps: Sub-tasks given by the caller (an LLM plan, an agent's own steps); each
            is searched as raw text. ``None`` splits ``task`` with
            :func:`~toolsift.decompose.decompose`, and each step is searched as a
            structured query with the argument roles its clause mentions.
        k: Hits per step.
        complete: Complete each step's hits into a tool set
            (``ToolIndex.search_batch(complete=True)``): the producers of a found
            tool's missing inputs join the step (their ``why`` says so).

    Returns:
        A :class:`TaskResult`.

    Raises:
        QueryError: ``task`` is blank or not a string, ``steps`` is malformed, or ``k``
            is not a positive integer.
    """
    if not isinstance(task, str) or not task.strip():
        raise QueryError("task", "the task must be a non-empty string")
    if steps is None:
        clauses = [n.user_intent for n in decompose(task).needs]
        queries: list[Query | str] = [_step_query(c) for c in clauses]
    else:
        clauses = _check_steps(steps)
        queries = list(clauses)
    ranked = index.search_batch(queries, k=k, complete=True) if complete else index.search_batch(queries, k=k)
    step_results = [StepResult(step=c, hits=list(h)) for c, h in zip(clauses, ranked)]
    best: dict[str, tuple[float, int, int]] = {}
    hit_of: dict[str, Any] = {}
    for si, sr in enumerate(step_results):
        for ri, hit in enumerate(sr.hits):
            key = (-float(hit.score), si, ri)
            if hit.id not in best or key < best[hit.id]:
                best[hit.id] = key
                hit_of[hit.id] = hit
    order = sorted(best, key=lambda tid: best[tid])
    merged = [replace(hit_of[tid], rank=i + 1) for i, tid in enumerate(order)]
    return TaskResult(task=task, steps=step_results, merged=merged,
                      best_step={tid: best[tid][1] for tid in order})
