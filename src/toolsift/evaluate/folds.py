"""Per-fold field scores (cross-fitted feedback examples) and the inner cross-validated
choice of index setup, shared by the trained methods and :func:`~.methods.train_index`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from ..config import IndexConfig
from ..cpus import available_cpus
from ..errors import ToolsiftError
from ..kernels.params import ScoringParams
from ..schema import Catalog
from ..scores import FieldScores
from ..toolindex import ToolIndex
from ..train import TrainConfig, concat_pairs, make_pairs, train
from .datasets import MftrDataset
from .inputs import catalog_for, examples_from, labels_of
from .metrics import evaluate

__all__ = ["fold_field_scores", "field_layout", "score_rows", "train_select", "build_indexes", "CROSSFIT", "DEPTH"]

#: Cross-fitting splits for feedback examples (see :func:`fold_field_scores`).
CROSSFIT = 3

#: Run depth (tools kept per query).
DEPTH = 100


def train_select(fs_by_setup: Sequence[FieldScores], rows: np.ndarray, ds: MftrDataset,
                                   negatives: Mapping, tc: TrainConfig, *, inner: int = 3) -> tuple[int, ScoringParams]:
    """Pick the setup with the best inner-CV NDCG@10 on ``rows``; train it on all rows."""
    labels = labels_of(ds)
    qrels = ds.qrels()
    splits = np.array_split(rows, inner)
    # Pairs never span queries, so a set of rows' pairs are its splits' pairs joined in
    # order (exactly make_pairs on the joined rows): pair each split once per setup.
    split_pairs = [[make_pairs(fs, part, labels, negatives) for part in splits] for fs in fs_by_setup]
    best, best_score = 0, -1.0
    if len(fs_by_setup) > 1:
        def fold_run(s: int, k: int) -> dict:
            res = train(concat_pairs([split_pairs[s][j] for j in range(inner) if j != k]), tc)
            return fs_by_setup[s].run(res.params, splits[k], depth=DEPTH)

        # Independent fits: run them side by side (the trainer's compiled pass and NumPy
        # release the GIL); results are collected in a fixed order, so nothing changes.
        jobs = [(s, k) for s in range(len(fs_by_setup)) for k in range(inner)]
        with ThreadPoolExecutor(max_workers=min(len(jobs), available_cpus())) as pool:
            runs = list(pool.map(lambda job: fold_run(*job), jobs))
        for s, fs in enumerate(fs_by_setup):
            run: dict = {}
            for k in range(inner):
                run.update(runs[s * inner + k])
            val_qrels = {fs.query_ids[r]: qrels[fs.query_ids[r]] for r in rows}
            score = evaluate(val_qrels, run, metrics=("ndcg@10",)).mean["ndcg@10"]
            if score > best_score + 1e-12:
                best, best_score = s, score
    res = train(concat_pairs(split_pairs[best]), tc)
    return best, res.params



def build_indexes(cat: Catalog, configs: Sequence[IndexConfig]) -> list[ToolIndex]:
    """One index per config over ``cat``, all threads on (batch work). Configs that differ
    only in ``scale`` share one build: the scale is applied when scoring, never stored."""
    out: list[ToolIndex] = []
    built: list[tuple[IndexConfig, ToolIndex]] = []
    for cfg in configs:
        cfg = replace(cfg, threads=0)
        key = replace(cfg, scale="linear")
        same = next((index for k, index in built if k == key), None)
        if same is None:
            same = ToolIndex.build(cat, config=cfg)
            built.append((key, same))
            out.append(same)
        else:
            # A view on the same arrays with another scale, as ToolIndex.with_params makes one.
            st = same._state
            out.append(ToolIndex(st.catalog, cfg, st.vocab, st.fields, tokens=st.tokens, dense=st.dense))
    return out


def score_rows(ds: MftrDataset, cat: Catalog, configs: Sequence[IndexConfig], qs: Sequence, rows: np.ndarray,
            into: list[FieldScores]) -> None:
    """Field scores of the queries at ``rows`` on ``cat``, written into ``into`` per config."""
    if rows.size == 0:
        return
    ids = [ds.queries[r].id for r in rows]
    batch = [qs[r] for r in rows]
    for index, full in zip(build_indexes(cat, configs), into):
        part = index.field_scores(batch, query_ids=ids)
        full.base[rows] = part.base
        full.param_sims[rows] = part.param_sims
        full.penalized[rows] = part.penalized


def field_layout(ds: MftrDataset, docs: str, configs: Sequence[IndexConfig], qs: Sequence) -> FieldScores:
    """One query's field scores on the catalogue without examples: only its layout (tool
    ids, parameter -> tool map, required flags, widths) is read, and that is the same for
    every fold, since examples never add a tool or a parameter."""
    # threads=0 as in build_indexes (a one-query batch runs serially anyway).
    return build_indexes(catalog_for(ds, docs, None), configs[:1])[0].field_scores(qs[:1], query_ids=["_"])


def fold_field_scores(ds: MftrDataset, train_rows: np.ndarray, test_rows: np.ndarray, docs: str,
                       feedback: bool, configs: Sequence[IndexConfig], qs: Sequence,
                       layout: FieldScores | None = None) -> list[FieldScores]:
    """Field scores of the training and test queries, one per config.

    With feedback, a query must never meet its own text among a tool's examples: that
    never happens at test time, and a model trained on it learns to trust the examples
    field far too much. So training queries are cross-fitted: the queries of each of
    :data:`CROSSFIT` splits are scored on a catalogue whose examples come from the other
    splits only; test queries on a catalogue with examples from all training queries.

    ``layout``: :func:`field_layout` of the same arguments, when the caller scores several
    folds (it is built here otherwise).
    """
    n = len(ds.queries)
    template = layout if layout is not None else field_layout(ds, docs, configs, qs)
    n_tools, n_params = template.base.shape[1], template.param_sims.shape[1]
    out = [FieldScores([q.id for q in ds.queries], template.tool_ids, np.zeros((n, n_tools, 4), np.float32),
                       np.zeros((n, n_params), np.float32), np.zeros(n, bool), template.param_tool,
                       template.required) for _ in configs]
    if not feedback:
        score_rows(ds, catalog_for(ds, docs, None), configs, qs, np.concatenate([train_rows, test_rows]), out)
        return out
    if set(train_rows.tolist()) & set(test_rows.tolist()):
        raise ToolsiftError("train and test queries overlap")
    test_texts = {ds.queries[r].text for r in test_rows}
    train_ids = [ds.queries[r].id for r in train_rows]
    score_rows(ds, catalog_for(ds, docs, examples_from(ds, train_ids, exclude_texts=test_texts)), configs, qs,
            test_rows, out)
    for part in np.array_split(train_rows, CROSSFIT):
        in_part = set(part.tolist())
        others = [ds.queries[r].id for r in train_rows if r not in in_part]
        own_texts = {ds.queries[r].text for r in part}
        ex = examples_from(ds, others, exclude_texts=test_texts | own_texts)
        score_rows(ds, catalog_for(ds, docs, ex), configs, qs, part, out)
    return out
