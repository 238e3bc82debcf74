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
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..analyze import Analyzer
from ..config import IndexConfig
from ..kernels.params import ScoringParams
from ..scores import scores_to_run
from ..toolindex import ToolIndex
from ..train import TrainConfig
from .datasets import MftrDataset
from .folds import DEPTH as _DEPTH
from .folds import field_layout, fold_field_scores, train_select
from .inputs import catalog_for, examples_from, fold_examples, fulldoc_scores, mine_negatives, queries_for, rows_of
from .output import MethodOutput, MethodUnavailable

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
    cat = catalog_for(ds, "authors", None)
    index = ToolIndex.build(cat, config=IndexConfig.reference(retrievers=tuple(fields.items()), encoder=encoder))
    fs = index.field_scores(queries_for(ds, "rewritten"), query_ids=[q.id for q in ds.queries])
    run: dict = {}
    for k, params in enumerate(ds.learned_params(weights)):
        run.update(fs.run(params, rows_of(ds, ds.test_ids(k)), depth=_DEPTH))
    return MethodOutput(run, time.perf_counter() - t0, fs.base.shape[0] * fs.base.shape[1])



#: The trained methods (and ``toolsift train``) keep the MFTR description query (tool
#: description alone): their catalogues carry example intents from training queries, the
#: field a need's user intent is matched against. With the intent in the description as
#: well (the cold default, IndexConfig.intent_in_description) `mftr` N@10 moved by
#: -.021 / +.014 / +.015 / +.006 (APIBank / APIGen / Gorilla / ToolLink; docs/scoring.md):
#: mixed, so the setup the published trained numbers rest on stays. The same holds for the
#: query's original request (IndexConfig.request_in_description).
TRAINED_QUERY_TEXTS: dict[str, Any] = {"intent_in_description": False, "request_in_description": False}


def _mftr(ds: MftrDataset, *, docs: str = "auto", queries: str = "rewritten", penalty: bool = True,
          feedback: bool = True, train_config: TrainConfig | None = None, grid: Sequence[dict] = MFTR_GRID,
          retriever: str = "bm25", encoder: str | None = None, progress: bool = False, **_) -> MethodOutput:
    t0 = time.perf_counter()
    if docs == "auto":
        docs = "authors" if ds.standardized_tools is not None else "rules"
    tc = train_config or TrainConfig()
    if not penalty:
        tc = replace(tc, penalty=False)
    qs = queries_for(ds, queries)
    negatives = mine_negatives(ds)
    fields, _kind = _preset(retriever)
    grid = _grid(grid, retriever)
    configs = [IndexConfig(penalize_without_arguments=(queries != "raw"), retrievers=tuple(fields.items()),
                           query_encoder="transformer", **TRAINED_QUERY_TEXTS,
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
    shared = None if feedback else fold_field_scores(ds, np.arange(len(ds.queries)), np.zeros(0, np.int64),
                                                      docs, False, configs, qs)
    # The tool layout is the same on every fold: one index build for it, not one per fold.
    layout = field_layout(ds, docs, configs, qs) if feedback else None
    for k in folds:
        train_rows = rows_of(ds, ds.train_ids(k))
        test_rows = rows_of(ds, ds.test_ids(k))
        setups = shared or fold_field_scores(ds, train_rows, test_rows, docs, feedback, configs, qs, layout=layout)
        best, params = train_select(setups, train_rows, ds, negatives, tc)
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
    qs = queries_for(ds, "rewritten")
    mean = ScoringParams(weights=(0.25, 0.25, 0.25, 0.25), w_req=0.0, w_opt=0.0)
    run: dict = {}
    fs = None
    for k in range(len(ds.folds)):
        if fs is None or feedback:
            index = ToolIndex.build(catalog_for(ds, docs, fold_examples(ds, k) if feedback else None),
                                    config=IndexConfig(retrievers=tuple(_preset(retriever)[0].items()), encoder=encoder,
                                                       query_encoder="transformer",
                                                       **TRAINED_QUERY_TEXTS))
            fs = index.field_scores(qs, query_ids=[q.id for q in ds.queries])
        run.update(fs.run(mean, rows_of(ds, ds.test_ids(k)), depth=_DEPTH, penalty=False))
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


def _structured_feedback(ds: MftrDataset, method: str, structured: Sequence, *, encoder: str | None
                         ) -> MethodOutput:
    """A structured cold method with feedback: per fold, the raw tools plus example intents
    from the fold's *training* queries (their raw text, at most five per tool, cleaned as
    ``standardize_catalog`` does), the test queries searched; the runs pooled."""
    from ..schema import Catalog
    from ..standardize import _examples as clean_examples
    from .cold import run_cold

    pos = {q.id: i for i, q in enumerate(ds.queries)}
    run: dict[str, dict[str, float]] = {}
    seconds, pairs, notes = 0.0, 0, []
    for k in range(len(ds.folds)):
        ex = fold_examples(ds, k)
        tools = [replace(t, examples=t.examples + clean_examples(ex.get(t.id, ()), 5)) if ex.get(t.id) else t
                 for t in ds.raw_tools]
        test = ds.test_ids(k)
        out = run_cold(method, Catalog(tools, name=ds.raw_tools.name),
                       [(q, ds.queries[pos[q]].text) for q in test], encoder=encoder, dataset=ds.root.name,
                       structured=[structured[pos[q]] for q in test])
        run.update(out.run)
        seconds += out.seconds
        pairs += out.pairs
        notes += [{**n, "fold": k, "feedback": "example intents from the fold's training queries"}
                  for n in out.notes]
    return MethodOutput(run, seconds, pairs, notes)


def run_method(ds: MftrDataset, method: str, **options) -> MethodOutput:
    """Run one method over all five folds of ``ds``.

    Args:
        ds: The dataset.
        method: One of :data:`METHODS`, or a cold-start method of
            :data:`toolsift.evaluate.cold.COLD_METHODS` (raw tools, raw query text, no
            folds, labels or feedback; only ``encoder`` is read from ``options``; the
            structured ones send the LLM-rewritten queries with the user's request, or
            without it when ``request`` is false, and, with ``feedback``, add example
            intents from each fold's training queries).
        **options: ``retriever`` (reproduce), ``encoder`` (model directory for dense
            fields; default the bundled int8 MiniLM), ``docs`` ("auto", "authors", "rules"),
            ``feedback`` (examples from training queries), ``train_config``, ``request``
            (structured cold methods: send the user's request with the rewrite; default true).

    Raises:
        ValueError: Unknown method.
        MethodUnavailable: The dataset lacks what the method needs.
    """
    # Imported here: cold imports this module.
    from .cold import COLD_METHODS, STRUCTURED_METHODS, canonical_method, run_cold

    method = canonical_method(method)
    if method in COLD_METHODS:
        # Cold-start methods use no fold, label or feedback: one pass over all queries.
        # Structured ones send the authors' rewrite as an agent's LLM would: needs,
        # arguments and (find_tools' "request") the user's words; request=False drops them.
        keep = options.get("request", True)
        structured = ([None if q.rewritten is None else q.rewritten if keep else replace(q.rewritten, text="")
                       for q in ds.queries]
                      if method in STRUCTURED_METHODS else None)
        if structured is not None and options.get("feedback", False):
            return _structured_feedback(ds, method, structured, encoder=options.get("encoder"))
        return run_cold(method, ds.raw_tools, [(q.id, q.text) for q in ds.queries],
                        encoder=options.get("encoder"), dataset=ds.root.name, structured=structured)
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
    # A saved index scores on the one documented scale (docs/scoring.md).
    tc = train_config or TrainConfig(unit_scale=True)
    qs = queries_for(ds, queries)
    fields, _ = _preset(retriever)
    grid = _grid(grid, retriever)
    configs = [IndexConfig(penalize_without_arguments=(queries != "raw"), retrievers=tuple(fields.items()),
                           query_encoder="transformer", **TRAINED_QUERY_TEXTS,
                           encoder=encoder, **g)
               for g in grid]
    rows = np.arange(len(ds.queries))
    setups = fold_field_scores(ds, rows, np.zeros(0, np.int64), docs, feedback, configs, qs)
    best, params = train_select(setups, rows, ds, mine_negatives(ds), tc)
    examples = examples_from(ds, [q.id for q in ds.queries]) if feedback else None
    index = ToolIndex.build(catalog_for(ds, docs, examples), config=configs[best].with_params(params))
    g = grid[best]
    note = {"scale": g["scale"], "stemmer": g["analyzer"].stemmer, "docs": docs, "params": params.to_dict()}
    return index, note
