"""The inputs of the fold-based methods: documents (authors' or rule-based, with feedback
examples from training queries only), query forms, hard negatives and row lookups."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence, Set
from dataclasses import replace

import numpy as np

from .. import _core
from ..analyze import Analyzer, Vocabulary
from ..decompose import decompose
from ..errors import ToolsiftError
from ..schema import Catalog, Query
from ..standardize import _examples as _clean_examples  # the same clean-up standardize_catalog applies
from ..standardize import standardize_catalog
from .datasets import MftrDataset
from .output import MethodUnavailable

__all__ = ["fulldoc_scores", "mine_negatives", "examples_from", "fold_examples", "catalog_for", "queries_for",
           "rows_of", "labels_of"]

#: standardize_catalog's default ``max_examples``.
_MAX_EXAMPLES = 5


def fulldoc_scores(ds: MftrDataset, texts: Sequence[str]) -> np.ndarray:
    """Raw BM25 of ``texts`` against each tool's documentation JSON as one document."""
    docs = [json.dumps(ds.raw_documentation(t.id)) for t in ds.raw_tools]
    an = Analyzer()
    vocab = Vocabulary()
    batch = vocab.encode_batch([an.tokenize(d) for d in docs], grow=True)
    core = _core.InvertedIndex.build(batch.terms, batch.offsets, len(vocab))
    qb = vocab.encode_batch([an.tokenize(t) for t in texts], grow=False)
    return core.score_dense(qb.terms, qb.offsets, scale="raw", threads=0)


def mine_negatives(ds: MftrDataset, *, depth: int = 100) -> dict[str, tuple[str, ...]]:
    """BM25 hard negatives as the authors made them: Full-Doc BM25 top 150, positives
    removed, first ``depth`` kept. Uses the dataset's own file when it has one."""
    if ds.hard_negatives is not None:
        return ds.hard_negatives
    scores = fulldoc_scores(ds, [q.text for q in ds.queries])
    ids = [t.id for t in ds.raw_tools]
    out = {}
    for i, q in enumerate(ds.queries):
        top = np.lexsort((np.arange(len(ids)), -scores[i]))[:150]
        rel = set(q.labels)
        out[q.id] = tuple(ids[j] for j in top if ids[j] not in rel)[:depth]
    return out


def examples_from(ds: MftrDataset, query_ids: Sequence[str], *, exclude_texts: Set[str] = frozenset()
                  ) -> dict[str, list[str]]:
    """Example intents per tool: each given query's text becomes an example of every tool
    it is labelled with (document expansion from feedback), skipping ``exclude_texts``."""
    ids = set(query_ids)
    out: dict[str, list[str]] = {}
    for q in ds.queries:
        if q.id in ids and q.text not in exclude_texts:
            for t in q.labels:
                out.setdefault(t, []).append(q.text)
    return out


def fold_examples(ds: MftrDataset, fold: int) -> dict[str, list[str]]:
    """Example intents per tool from the *training* queries of ``fold`` only; a training
    query whose text equals a test query's is skipped too.

    Raises:
        ToolsiftError: If the fold's train and test queries overlap (a guard).
    """
    train_ids = set(ds.train_ids(fold))
    test_ids = set(ds.test_ids(fold))
    if train_ids & test_ids:
        raise ToolsiftError(f"fold {fold}: train and test queries overlap")
    test_texts = {q.text for q in ds.queries if q.id in test_ids}
    return examples_from(ds, ds.train_ids(fold), exclude_texts=test_texts)


def catalog_for(ds: MftrDataset, docs: str, examples: Mapping[str, Sequence[str]] | None) -> Catalog:
    if docs == "authors":
        if ds.standardized_tools is None:
            raise MethodUnavailable(f"{ds.name} has no standardized tools (only apibank does); use docs='rules'")
        if not examples:
            return ds.standardized_tools
        # Feedback examples join the authors' own example intents.
        return Catalog([replace(t, examples=t.examples + tuple(examples.get(t.id, ())))
                        for t in ds.standardized_tools], name=ds.standardized_tools.name)
    base = _rules_base(ds)
    if not examples:
        return base
    # Exactly standardize_catalog(raw, examples=...): only the examples differ from the
    # example-free standardisation, which is derived once per dataset (it is the slow part).
    # A tool without examples stays the base object (replace re-validates every tool).
    tools = []
    for t in base:
        ex = _clean_examples(examples.get(t.id, ()), _MAX_EXAMPLES)
        tools.append(replace(t, examples=ex) if ex else t)
    return Catalog(tools, name=base.name)


_RULES_BASE: dict[int, tuple[MftrDataset, Catalog]] = {}


def _rules_base(ds: MftrDataset) -> Catalog:
    """``standardize_catalog(ds.raw_tools)`` (no examples), computed once per dataset object."""
    hit = _RULES_BASE.get(id(ds))
    if hit is None or hit[0] is not ds:
        # Keyed by identity, holding the dataset so its id cannot be reused while cached.
        _RULES_BASE.clear()
        hit = _RULES_BASE[id(ds)] = (ds, standardize_catalog(ds.raw_tools, examples=None))
    return hit[1]


def queries_for(ds: MftrDataset, form: str) -> list[Query | str]:
    if form == "raw":
        return [q.text for q in ds.queries]
    if form == "rules":
        return [decompose(q.text) for q in ds.queries]
    missing = [q.id for q in ds.queries if q.rewritten is None]
    if missing:
        raise MethodUnavailable(f"{ds.name}: {len(missing)} queries have no rewrite (e.g. {missing[0]})")
    return [q.rewritten for q in ds.queries if q.rewritten is not None]  # none is missing (checked above)


def rows_of(ds: MftrDataset, ids: Sequence[str]) -> np.ndarray:
    pos = {q.id: i for i, q in enumerate(ds.queries)}
    return np.asarray([pos[i] for i in ids], dtype=np.int64)


def labels_of(ds: MftrDataset) -> dict[str, tuple[str, ...]]:
    return {q.id: q.labels for q in ds.queries}
