"""Retrieval methods evaluated on the MFTR benchmarks, all 5-fold cross-validated.

=================  =====================================================================
``fulldoc``        the raw documentation JSON as one BM25 document, the raw query
                   (the paper's Full-Doc baseline)
``reproduce``      MFTR on the raw BM25 scale with the authors' per-fold learned weights,
                   the authors' standardized docs and rewritten queries (the reference
                   implementation's setup: :meth:`IndexConfig.reference`)
``mftr``           MFTR trained by toolsift: per outer fold, the index setup (scale,
                   stemming) is chosen by inner cross-validation on the training queries
                   only, then weights are trained on all training queries
``mftr-nopenalty`` ablation: ``mftr`` without the missing-parameter penalty
``mftr-mean``      ablation: the mean of the four field scores, no training
``llm-free``       rule-based docs from the raw documentation, the raw query for every
                   field, no arguments, no LLM anywhere; weights trained as ``mftr``
``mftr-rules``     ``mftr`` with the LLM rewrites replaced by :func:`toolsift.decompose.decompose`
                   (rule-based needs and argument roles, no LLM)
``mftr-llm``       ``mftr`` with queries rewritten by :mod:`toolsift.llm` (needs an
                   OpenAI-compatible server in ``TOOLSIFT_LLM_BASE_URL``)
=================  =====================================================================

Documents: ``docs="authors"`` uses the authors' LLM-standardized tools (APIBank only);
``docs="rules"`` standardizes the raw documentation with :mod:`toolsift.standardize`,
with example intents taken from *training-fold* queries of labelled tools
(``feedback=True``; never a test-fold query, checked by :func:`fold_examples`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np

from .. import _core
from ..analyze import Analyzer, Vocabulary
from ..config import IndexConfig
from ..decompose import decompose
from ..errors import ToolsiftError
from ..kernels.params import ScoringParams
from ..schema import Catalog, Query
from ..scores import FieldScores, scores_to_run
from ..standardize import _examples as _clean_examples  # the same clean-up standardize_catalog applies
from ..standardize import standardize_catalog
from ..toolindex import ToolIndex
from ..train import TrainConfig, concat_pairs, make_pairs, train
from .datasets import MftrDataset
from .metrics import evaluate

__all__ = ["METHODS", "MethodUnavailable", "MethodOutput", "run_method", "fold_examples", "examples_from",
           "mine_negatives", "MFTR_GRID", "RETRIEVER_PRESETS", "train_index"]

METHODS = ("fulldoc", "reproduce", "mftr", "mftr-nopenalty", "mftr-mean", "llm-free", "mftr-rules", "mftr-llm")

#: Index setups the ``mftr`` method selects from by inner cross-validation: the three
#: field score scales, with English stemming.
MFTR_GRID: tuple[dict, ...] = tuple(
    {"scale": scale, "analyzer": Analyzer(stemmer="english")} for scale in ("bounded", "linear", "raw")
)

#: ``--retriever`` presets: the retriever of each field (description, parameters,
#: response, examples) and the authors' weight folder for ``reproduce``.
RETRIEVER_PRESETS: dict[str, tuple[dict[str, str], str]] = {
    "bm25": ({f: "bm25" for f in ("description", "parameters", "response", "examples")}, "bm25"),
    "minilm": ({f: "dense" for f in ("description", "parameters", "response", "examples")},
               "all-MiniLM-L6-v2"),
    "hybrid": ({"description": "hybrid", "parameters": "bm25", "response": "hybrid", "examples": "hybrid"},
               ""),
}


def _preset(retriever: str) -> tuple[dict[str, str], str]:
    if retriever not in RETRIEVER_PRESETS:
        raise ValueError(f"unknown retriever {retriever!r} (retrievers: {', '.join(RETRIEVER_PRESETS)})")
    return RETRIEVER_PRESETS[retriever]


def _grid(grid: Sequence[dict], retriever: str) -> list[dict]:
    """The setups worth comparing for a retriever: scales only matter to BM25 fields."""
    fields, _ = _preset(retriever)
    kinds = set(fields.values())
    if kinds == {"dense"}:
        return [dict(grid[0], scale="bounded")]
    if "hybrid" in kinds:
        return [g for g in grid if g["scale"] != "raw"] or [dict(grid[0], scale="bounded")]
    return list(grid)


#: Cross-fitting splits for feedback examples (see :func:`_fold_field_scores`).
_CROSSFIT = 3

_DEPTH = 100

#: standardize_catalog's default ``max_examples``.
_MAX_EXAMPLES = 5


class MethodUnavailable(ToolsiftError):
    """The method needs data the dataset does not have (e.g. standardized docs)."""


@dataclass
class MethodOutput:
    """A method's pooled run over all test folds, and what it cost.

    Attributes:
        run: ``{query_id: {tool_id: score}}``, top 100 per query.
        seconds: Wall time of the whole method (index builds, scoring, training).
        pairs: Query-tool pairs scored.
        notes: Per-fold choices (selected setup, learned parameters).
    """

    run: dict[str, dict[str, float]]
    seconds: float
    pairs: int
    notes: list[dict] = field(default_factory=list)


# ------------------------------------------------------------------- helpers
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


def examples_from(ds: MftrDataset, query_ids: Sequence[str], *, exclude_texts: set[str] = frozenset()
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


def _catalog(ds: MftrDataset, docs: str, examples: Mapping[str, Sequence[str]] | None) -> Catalog:
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


def _queries(ds: MftrDataset, form: str) -> list[Query | str]:
    if form == "raw":
        return [q.text for q in ds.queries]
    if form == "rules":
        return [decompose(q.text) for q in ds.queries]
    missing = [q.id for q in ds.queries if q.rewritten is None]
    if missing:
        raise MethodUnavailable(f"{ds.name}: {len(missing)} queries have no rewrite (e.g. {missing[0]})")
    return [q.rewritten for q in ds.queries]


def _rows(ds: MftrDataset, ids: Sequence[str]) -> np.ndarray:
    pos = {q.id: i for i, q in enumerate(ds.queries)}
    return np.asarray([pos[i] for i in ids], dtype=np.int64)


def _labels(ds: MftrDataset) -> dict[str, tuple[str, ...]]:
    return {q.id: q.labels for q in ds.queries}


def _train_select(fs_by_setup: Sequence[FieldScores], rows: np.ndarray, ds: MftrDataset,
                  negatives: Mapping, tc: TrainConfig, *, inner: int = 3) -> tuple[int, ScoringParams]:
    """Pick the setup with the best inner-CV NDCG@10 on ``rows``; train it on all rows."""
    labels = _labels(ds)
    qrels = ds.qrels()
    splits = np.array_split(rows, inner)
    # Pairs never span queries, so a set of rows' pairs are its splits' pairs joined in
    # order (exactly make_pairs on the joined rows): pair each split once per setup.
    split_pairs = [[make_pairs(fs, part, labels, negatives) for part in splits] for fs in fs_by_setup]
    best, best_score = 0, -1.0
    if len(fs_by_setup) > 1:
        def fold_run(s: int, k: int) -> dict:
            res = train(concat_pairs([split_pairs[s][j] for j in range(inner) if j != k]), tc)
            return fs_by_setup[s].run(res.params, splits[k], depth=_DEPTH)

        # Independent fits: run them side by side (the trainer's compiled pass and NumPy
        # release the GIL); results are collected in a fixed order, so nothing changes.
        jobs = [(s, k) for s in range(len(fs_by_setup)) for k in range(inner)]
        with ThreadPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1)) as pool:
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


# ------------------------------------------------------------------- methods
def _fulldoc(ds: MftrDataset, *, retriever: str = "bm25", encoder: str | None = None, **_) -> MethodOutput:
    t0 = time.perf_counter()
    _preset(retriever)
    if retriever == "bm25":
        scores = fulldoc_scores(ds, [q.text for q in ds.queries])
    else:
        from ..index.dense_field import encode_texts
        from ..toolindex import get_encoder

        enc = get_encoder(IndexConfig(encoder=encoder))
        docs = encode_texts(enc, [json.dumps(ds.raw_documentation(t.id)) for t in ds.raw_tools])
        qv = encode_texts(enc, [q.text for q in ds.queries])
        scores = qv @ docs.T
        if retriever == "hybrid":
            bm = fulldoc_scores(ds, [q.text for q in ds.queries])
            ref = bm.max(axis=1, keepdims=True)
            scores = 0.5 * np.divide(bm, ref, out=np.zeros_like(bm), where=ref > 0) + 0.5 * np.maximum(scores, 0)
    run = scores_to_run(scores, [q.id for q in ds.queries], [t.id for t in ds.raw_tools], depth=_DEPTH)
    return MethodOutput(run, time.perf_counter() - t0, scores.size)


def _reproduce(ds: MftrDataset, *, retriever: str = "bm25", encoder: str | None = None, **_) -> MethodOutput:
    t0 = time.perf_counter()
    fields, weights = _preset(retriever)
    if not weights:
        raise MethodUnavailable(f"the authors published no weights for the {retriever!r} retriever")
    cat = _catalog(ds, "authors", None)
    index = ToolIndex.build(cat, config=IndexConfig.reference(retrievers=tuple(fields.items()), encoder=encoder))
    fs = index.field_scores(_queries(ds, "rewritten"), query_ids=[q.id for q in ds.queries])
    run: dict = {}
    for k, params in enumerate(ds.learned_params(weights)):
        run.update(fs.run(params, _rows(ds, ds.test_ids(k)), depth=_DEPTH))
    return MethodOutput(run, time.perf_counter() - t0, fs.base.shape[0] * fs.base.shape[1])


def _indexes(cat: Catalog, configs: Sequence[IndexConfig]) -> list[ToolIndex]:
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


def _scores(ds: MftrDataset, cat: Catalog, configs: Sequence[IndexConfig], qs: Sequence, rows: np.ndarray,
            into: list[FieldScores]) -> None:
    """Field scores of the queries at ``rows`` on ``cat``, written into ``into`` per config."""
    if rows.size == 0:
        return
    ids = [ds.queries[r].id for r in rows]
    batch = [qs[r] for r in rows]
    for index, full in zip(_indexes(cat, configs), into):
        part = index.field_scores(batch, query_ids=ids)
        full.base[rows] = part.base
        full.param_sims[rows] = part.param_sims
        full.penalized[rows] = part.penalized


def _fold_field_scores(ds: MftrDataset, train_rows: np.ndarray, test_rows: np.ndarray, docs: str,
                       feedback: bool, configs: Sequence[IndexConfig], qs: Sequence) -> list[FieldScores]:
    """Field scores of the training and test queries, one per config.

    With feedback, a query must never meet its own text among a tool's examples: that
    never happens at test time, and a model trained on it learns to trust the examples
    field far too much. So training queries are cross-fitted: the queries of each of
    :data:`_CROSSFIT` splits are scored on a catalogue whose examples come from the other
    splits only; test queries on a catalogue with examples from all training queries.
    """
    n = len(ds.queries)
    # Only the tool layout is read from this index; threads=0 as in _indexes (a one-query
    # batch runs serially anyway).
    template = _indexes(_catalog(ds, docs, None), configs[:1])[0].field_scores(qs[:1], query_ids=["_"])
    n_tools, n_params = template.base.shape[1], template.param_sims.shape[1]
    out = [FieldScores([q.id for q in ds.queries], template.tool_ids, np.zeros((n, n_tools, 4), np.float32),
                       np.zeros((n, n_params), np.float32), np.zeros(n, bool), template.param_tool,
                       template.required) for _ in configs]
    if not feedback:
        _scores(ds, _catalog(ds, docs, None), configs, qs, np.concatenate([train_rows, test_rows]), out)
        return out
    if set(train_rows.tolist()) & set(test_rows.tolist()):
        raise ToolsiftError("train and test queries overlap")
    test_texts = {ds.queries[r].text for r in test_rows}
    train_ids = [ds.queries[r].id for r in train_rows]
    _scores(ds, _catalog(ds, docs, examples_from(ds, train_ids, exclude_texts=test_texts)), configs, qs,
            test_rows, out)
    for part in np.array_split(train_rows, _CROSSFIT):
        in_part = set(part.tolist())
        others = [ds.queries[r].id for r in train_rows if r not in in_part]
        own_texts = {ds.queries[r].text for r in part}
        ex = examples_from(ds, others, exclude_texts=test_texts | own_texts)
        _scores(ds, _catalog(ds, docs, ex), configs, qs, part, out)
    return out


def _mftr(ds: MftrDataset, *, docs: str = "auto", queries: str = "rewritten", penalty: bool = True,
          feedback: bool = True, train_config: TrainConfig | None = None, grid: Sequence[dict] = MFTR_GRID,
          retriever: str = "bm25", encoder: str | None = None, progress: bool = False, **_) -> MethodOutput:
    t0 = time.perf_counter()
    if docs == "auto":
        docs = "authors" if ds.standardized_tools is not None else "rules"
    tc = train_config or TrainConfig()
    if not penalty:
        tc = replace(tc, penalty=False)
    qs = _queries(ds, queries)
    negatives = mine_negatives(ds)
    fields, _ = _preset(retriever)
    grid = _grid(grid, retriever)
    configs = [IndexConfig(penalize_without_arguments=(queries != "raw"), retrievers=tuple(fields.items()),
                           encoder=encoder, **g)
               for g in grid]
    run: dict = {}
    notes = []
    pairs = 0
    folds = range(len(ds.folds))
    if progress:
        from tqdm.auto import tqdm

        folds = tqdm(folds, desc=f"{ds.name} folds", leave=False)
    # Without feedback the catalogue is the same on every fold, so are all field scores:
    # compute them once (every query's scores are independent of the others in its batch).
    shared = None if feedback else _fold_field_scores(ds, np.arange(len(ds.queries)), np.zeros(0, np.int64),
                                                      docs, False, configs, qs)
    for k in folds:
        train_rows = _rows(ds, ds.train_ids(k))
        test_rows = _rows(ds, ds.test_ids(k))
        setups = shared or _fold_field_scores(ds, train_rows, test_rows, docs, feedback, configs, qs)
        best, params = _train_select(setups, train_rows, ds, negatives, tc)
        run.update(setups[best].run(params, test_rows, depth=_DEPTH))
        pairs += len(ds.queries) * len(setups[0].tool_ids) * len(grid)
        g = grid[best]
        notes.append({"fold": k, "scale": g["scale"], "stemmer": g["analyzer"].stemmer,
                      "docs": docs, "params": params.to_dict()})
    return MethodOutput(run, time.perf_counter() - t0, pairs, notes)


def _mftr_mean(ds: MftrDataset, *, docs: str = "auto", feedback: bool = True, retriever: str = "bm25",
               encoder: str | None = None, **_) -> MethodOutput:
    t0 = time.perf_counter()
    if docs == "auto":
        docs = "authors" if ds.standardized_tools is not None else "rules"
    qs = _queries(ds, "rewritten")
    mean = ScoringParams(weights=(0.25, 0.25, 0.25, 0.25), w_req=0.0, w_opt=0.0)
    run: dict = {}
    fs = None
    for k in range(len(ds.folds)):
        if fs is None or feedback:
            index = ToolIndex.build(_catalog(ds, docs, fold_examples(ds, k) if feedback else None),
                                    config=IndexConfig(retrievers=tuple(_preset(retriever)[0].items()), encoder=encoder))
            fs = index.field_scores(qs, query_ids=[q.id for q in ds.queries])
        run.update(fs.run(mean, _rows(ds, ds.test_ids(k)), depth=_DEPTH, penalty=False))
    return MethodOutput(run, time.perf_counter() - t0, len(ds.queries) * len(ds.raw_tools))


def _llm_free(ds: MftrDataset, **kw) -> MethodOutput:
    return _mftr(ds, **{**kw, "docs": "rules", "queries": "raw"})


def _mftr_rules(ds: MftrDataset, **kw) -> MethodOutput:
    return _mftr(ds, **{**kw, "queries": "rules"})


def _mftr_llm(ds: MftrDataset, *, progress: bool = False, **kw) -> MethodOutput:
    """MFTR with queries rewritten by toolsift's LLM client instead of the authors' rewrites."""
    from ..llm import LLMClient, LLMUnavailable, rewrite_dataset, with_rewrites

    try:
        client = LLMClient()
    except LLMUnavailable as exc:
        raise MethodUnavailable(str(exc)) from None
    t0 = time.perf_counter()
    queries, report = rewrite_dataset(ds, client, progress=progress)
    out = _mftr(with_rewrites(ds, queries), progress=progress, **kw)
    out.seconds = time.perf_counter() - t0  # the rewrites are part of the method's cost
    out.notes.append({"llm_rewrite": report.to_dict()})
    return out


def _nopenalty(ds: MftrDataset, **kw) -> MethodOutput:
    return _mftr(ds, **{**kw, "penalty": False})


_RUNNERS: dict[str, Callable[..., MethodOutput]] = {
    "fulldoc": _fulldoc,
    "reproduce": _reproduce,
    "mftr": _mftr,
    "mftr-nopenalty": _nopenalty,
    "mftr-mean": _mftr_mean,
    "llm-free": _llm_free,
    "mftr-rules": _mftr_rules,
    "mftr-llm": _mftr_llm,
}


def run_method(ds: MftrDataset, method: str, **options) -> MethodOutput:
    """Run one method over all five folds of ``ds``.

    Args:
        ds: The dataset.
        method: One of :data:`METHODS`, or a cold-start method of
            :data:`toolsift.evaluate.cold.COLD_METHODS` (raw tools, raw query text, no
            folds, labels or feedback; only ``encoder`` is read from ``options``).
        **options: ``retriever`` (reproduce), ``encoder`` (model directory for dense
            fields; default the bundled int8 MiniLM), ``docs`` ("auto", "authors", "rules"),
            ``feedback`` (examples from training queries), ``train_config``.

    Raises:
        ValueError: Unknown method.
        MethodUnavailable: The dataset lacks what the method needs.
    """
    from .cold import COLD_METHODS, run_cold  # imported here: cold imports this module

    if method in COLD_METHODS:
        # Cold-start methods use no fold, label or feedback: one pass over all queries.
        return run_cold(method, ds.raw_tools, [(q.id, q.text) for q in ds.queries],
                        encoder=options.get("encoder"), dataset=ds.root.name)
    if method not in _RUNNERS:
        raise ValueError(f"unknown method {method!r} (methods: {', '.join(METHODS + COLD_METHODS)})")
    return _RUNNERS[method](ds, **options)


def train_index(ds: MftrDataset, *, docs: str = "auto", queries: str = "rewritten", feedback: bool = True,
                train_config: TrainConfig | None = None, grid: Sequence[dict] = MFTR_GRID,
                retriever: str = "bm25", encoder: str | None = None,
                progress: bool = False) -> tuple[ToolIndex, dict]:
    """Train on *all* queries of ``ds`` and return a ready index carrying the learned
    parameters (setup chosen by cross-validation and features cross-fitted, as in
    ``mftr``); with feedback, every query's text becomes an example of its tools."""
    if docs == "auto":
        docs = "authors" if ds.standardized_tools is not None else "rules"
    tc = train_config or TrainConfig()
    qs = _queries(ds, queries)
    fields, _ = _preset(retriever)
    grid = _grid(grid, retriever)
    configs = [IndexConfig(penalize_without_arguments=(queries != "raw"), retrievers=tuple(fields.items()),
                           encoder=encoder, **g)
               for g in grid]
    rows = np.arange(len(ds.queries))
    setups = _fold_field_scores(ds, rows, np.zeros(0, np.int64), docs, feedback, configs, qs)
    best, params = _train_select(setups, rows, ds, mine_negatives(ds), tc)
    examples = examples_from(ds, [q.id for q in ds.queries]) if feedback else None
    index = ToolIndex.build(_catalog(ds, docs, examples), config=configs[best].with_params(params))
    g = grid[best]
    note = {"scale": g["scale"], "stemmer": g["analyzer"].stemmer, "docs": docs, "params": params.to_dict()}
    return index, note
