"""UltraTool (the ToolReAGt benchmark): complex tasks, plain question vs decomposed plan.

``plain`` ranks tools for the whole question. ``decomposed`` turns each plan step into a
tool need (its text for all three need fields) and ranks by the max over needs, the way
MFTR treats multi-need queries. Both use BM25 through :class:`~toolsift.ToolIndex`.
"""

from __future__ import annotations

import time

from ..config import IndexConfig
from ..schema import Query, ToolNeed
from ..toolindex import ToolIndex
from .datasets import UltraToolDataset
from .output import MethodOutput

__all__ = ["ULTRATOOL_METHODS", "ULTRATOOL_METRICS", "run_ultratool"]

ULTRATOOL_METHODS = ("plain", "decomposed")
ULTRATOOL_METRICS = ("recall@1", "recall@2", "recall@5", "recall@10", "ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10",
                     "completeness@10")


def _query(q, method: str) -> Query | str:
    if method == "plain" or not q.steps:
        return q.question
    needs = tuple(ToolNeed(s, s, s) for s in q.steps if s.strip())
    return Query(needs=needs or (ToolNeed(q.question, q.question, q.question),), text=q.question)


def run_ultratool(ds: UltraToolDataset, method: str, *, config: IndexConfig | None = None,
                  depth: int = 100, encoder: str | None = None) -> MethodOutput:
    """Rank the UltraTool corpus for every task with ``method``: "plain", "decomposed", or
    a cold-start method of :data:`toolsift.evaluate.cold.COLD_METHODS` (``encoder`` is for
    those; ``config`` and ``depth`` for the first two)."""
    from .cold import COLD_METHODS, canonical_method, run_cold

    method = canonical_method(method)
    if method in COLD_METHODS:
        # The user's view: the corpus of distinct tools, the task's question as the query.
        return run_cold(method, ds.tools, [(q.id, q.question) for q in ds.queries], encoder=encoder,
                        dataset=ds.root.name if getattr(ds, "root", None) else None)
    if method not in ULTRATOOL_METHODS:
        raise ValueError(f"unknown UltraTool method {method!r} "
                         f"(methods: {', '.join(ULTRATOOL_METHODS + COLD_METHODS)})")
    t0 = time.perf_counter()
    index = ToolIndex.build(ds.tools, config=config or IndexConfig())
    fs = index.field_scores([_query(q, method) for q in ds.queries], query_ids=[q.id for q in ds.queries])
    run = fs.run(index.config.params, depth=depth)
    return MethodOutput(run, time.perf_counter() - t0, fs.base.shape[0] * fs.base.shape[1])
