"""Every query against every tool: the field scores evaluation and training start from.

Search scores only candidates; research work (reproducing a paper, training weights,
ablations) needs each tool's field scores once, then scores them under many parameter
settings with :class:`~toolsift.scores.FieldScores`. Here a full ``[texts, tools]``
matrix per field is the point, so the engine's dense scoring is the right call.
"""

from __future__ import annotations

import numpy as np

from ..config import IndexConfig
from ..index.state import IndexState
from ..kernels.launch import using_threads
from ..progress import progress_bar
from ..schema import Query
from ..scores import FieldScores
from .plan import FieldTexts, plan_queries

__all__ = ["all_field_scores"]

# Queries per step, so the per-field [texts, tools] matrices of a large batch stay within
# a few tens of megabytes.
_CHUNK = 256


def all_field_scores(st: IndexState, config: IndexConfig, queries: list[Query], ids: list[str], *,
                     progress: bool = False) -> FieldScores:
    """Field scores of every query against every tool (see :class:`FieldScores`)."""
    nt = len(st.catalog)
    n_params = int(st.param_ptr[-1])
    groups = st.param_groups()
    counts = np.maximum(np.diff(st.param_ptr), 1)
    base = np.zeros((len(queries), nt, 4), dtype=np.float32)
    psims = np.zeros((len(queries), n_params), dtype=np.float32)
    penalized = np.zeros(len(queries), dtype=bool)
    chunks = range(0, len(queries), _CHUNK)
    with using_threads(config.threads):
        _fill(st, config, queries, chunks, progress, base, psims, penalized, groups, counts)
    return FieldScores(ids, st.catalog.ids, base, psims, penalized,
                       groups.astype(np.int64), st.param_required.astype(bool), st.present)


def _fill(st, config, queries, chunks, progress, base, psims, penalized, groups, counts) -> None:
    nt = len(st.catalog)
    n_params = int(st.param_ptr[-1])
    for start in progress_bar(chunks, progress, "field scores", total=len(chunks)):
        plan = plan_queries(st, config, queries[start:start + _CHUNK])
        full = {f: _matrix(st, config, plan.fields[f], f, docs=False) for f in ("description", "response", "examples")}
        par = _matrix(st, config, plan.fields["parameters"], "parameters", docs=True)
        for i in range(len(plan)):
            r0, r1 = plan.need_ptr[i], plan.need_ptr[i + 1]
            a0, a1 = plan.arg_ptr[i], plan.arg_ptr[i + 1]
            row = start + i
            base[row, :, 0] = full["description"][r0:r1].max(axis=0)
            base[row, :, 2] = full["response"][r0:r1].max(axis=0)
            base[row, :, 3] = full["examples"][r0:r1].max(axis=0)
            if a1 > a0 and n_params:
                sp = par[a0:a1].max(axis=0)
                psims[row] = sp
                base[row, :, 1] = np.bincount(groups, weights=sp, minlength=nt) / counts
            penalized[row] = bool(plan.penalize[i])


def _matrix(st: IndexState, config: IndexConfig, ft: FieldTexts, field: str, *, docs: bool) -> np.ndarray:
    """``float32[texts, tools]`` (or ``[texts, documents]`` with ``docs``) on the field's retriever."""
    kind = config.retriever(field)
    fi = st.fields[field]
    if kind != "dense":
        bm = (fi.score_docs if docs else fi.score_tools)(ft.terms, scale=config.scale, threads=config.threads)
        if kind == "bm25":
            return bm
    dn = st.dense[field]
    assert ft.vectors is not None  # planned for a dense field
    cos = dn.score_docs(ft.vectors) if docs else dn.score_tools(ft.vectors)
    if kind == "dense":
        # Parameter similarities are floored at 0 (see DenseRetriever).
        return np.maximum(cos, 0.0, out=cos) if docs else cos
    w = config.hybrid_weight
    return (w * bm + (1.0 - w) * np.maximum(cos, 0.0)).astype(np.float32)
