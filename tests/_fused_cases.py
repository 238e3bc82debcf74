"""What the fused-path tests (tests/test_fused.py, tests/test_fused_hybrid.py) share: the
benchmark sets' tools and queries, and the comparison of a fused engine call against the
general search path, its reference.

The loaders are cached per test process: several tests read the same set, and none
changes what it gets (each builds its own index from the tools).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

import pytest

from toolsift import Query, ToolNeed
from toolsift.adapters import load_catalog
from toolsift.adapters.benchmark import load_queries
from toolsift.search import _general, is_raw

from .conftest import dataset

MFTR = ("apibank", "apigen", "gorilla-huggingface", "toolink")

#: ``run(batch, params)``: a fused call's hits for each query of ``batch``.
FusedRun = Callable[[list, object], Sequence[Sequence]]


@cache
def mftr(name: str) -> tuple[list, list[str], list[Query]]:
    """One MFTR set: its tools, the raw test queries of its five folds and their LLM
    rewrites (structured queries)."""
    root = dataset(f"mftr-{name}") / "dataset"
    tools = load_catalog(root / f"from_toolret/{name}/tools.json")
    bqs = [q for k in range(5) for q in load_queries(root / f"train_and_test/{name}/fold_{k}/test_queries.json")]
    return tools, [q.text for q in bqs], [q.rewritten for q in bqs if q.rewritten is not None]


@cache
def ultratool() -> tuple[list, list[str], list[Query]]:
    """UltraTool: its tools, raw questions, and each question decomposed into one tool
    need per plan step, the question as the request."""
    from toolsift.evaluate import UltraToolDataset

    ds = UltraToolDataset.load(dataset("ultratool"))
    raw = [q.question for q in ds.queries]
    structured = [Query(needs=tuple(ToolNeed(s, s, s) for s in q.steps if s.strip()), text=q.question)
                  for q in ds.queries if any(s.strip() for s in q.steps)]
    return ds.tools, raw, structured


def assert_same_hits(got: Sequence, want: Sequence, what: str) -> None:
    """The same tools in the same order, ranks, ``matched`` flags and scores (to 1e-6)."""
    assert [h.id for h in got] == [h.id for h in want], what
    assert [h.matched for h in got] == [h.matched for h in want], what
    assert [h.rank for h in got] == [h.rank for h in want], what
    assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-6, rel=0), what


def assert_fused_equals_general(st, cfg, queries: list, k: int, run: FusedRun) -> list[tuple[Query, Sequence]]:
    """Assert ``run`` answers every query as the general path does, one query at a time
    and as one batch per kind (raw, structured). Returns each parsed query with the
    general path's hits for it."""
    pairs: list[tuple[Query, Sequence]] = []
    parsed = [q if isinstance(q, Query) else Query.from_text(q) for q in queries]
    for structured in (False, True):
        batch = [q for q in parsed if (not is_raw(q)) == structured]
        if not batch:
            continue
        params = cfg.params_for(structured)
        want = _general(st, cfg, batch, k=k, explain=False, params=params)
        got_batch = run(batch, params)
        for q, w, gb in zip(batch, want, got_batch):
            (g,) = run([q], params)
            assert_same_hits(g, w, q.text)
            assert_same_hits(gb, w, q.text)
            pairs.append((q, w))
    return pairs


def hybrid_setting_variants(index) -> list:
    """``index`` under the settings variants the one-call hybrid paths are checked with (a
    small candidate cut, another hybrid weight and dense candidate rule, a need field left
    BM25, no intent in the parameters field): objects with ``_state`` and ``config``."""
    from dataclasses import replace
    from types import SimpleNamespace

    base = index.config
    retr = dict(base.retrievers)
    retr["response"] = "bm25"
    configs = (replace(base, candidates=3),
               replace(base, hybrid_weight=0.25, dense_candidates=5, dense_candidates_from=("response",)),
               replace(base, retrievers=tuple(retr.items())), replace(base, no_argument_params="zero"))
    return [SimpleNamespace(_state=index._state, config=cfg) for cfg in configs]

