"""The multi-step path as first landed (:mod:`.needs`), kept as the reference the fast
path is tested against, and the path for configurations the fast one does not cover (a
purely dense need field, or a dense parameters field).

Each reading is a pseudo-query carrying the whole request's texts and terms and the
reading's vector; the whole batch of pseudo-queries is packed and scored as any search,
so BM25 is computed once per reading.
"""

from __future__ import annotations

import numpy as np

from ..analyze import TermBatch
from ..config import IndexConfig
from ..csr import ranges, row_of
from ..index.state import IndexState
from ..schema import FIELDS, Query
from .candidates import Candidates, find_candidates, pack
from .hits import Hit, rank
from .needs import WHOLE_AS_NEED, combine_readings, reading_vectors
from .plan import FieldTexts, QueryPlan, plan_queries, read_only
from .score import score

__all__ = ["run_steps_reference"]


def run_steps_reference(st: IndexState, config: IndexConfig, queries: list[Query], steps: list[list[str]], fr, *,
              k: int, explain: bool | str, params) -> list[list[Hit]]:
    """The hits of raw multi-step ``queries`` (``steps[i]``: query ``i``'s steps; see the
    :mod:`.needs`). ``fr``: the index's field retrievers."""
    plan = plan_queries(st, config, queries)
    # The readings of each request: the whole request first (the unsplit search), then its steps.
    readings = [[q.text, *s] if WHOLE_AS_NEED else list(s) for s, q in zip(steps, queries)]
    step_ptr = np.zeros(len(queries) + 1, np.int64)
    np.cumsum([len(s) for s in readings], out=step_ptr[1:])
    flat = [t for s in readings for t in s]
    vecs, codes = reading_vectors(st, config, plan, readings)
    step_owner = read_only(row_of(step_ptr))
    no_terms = TermBatch(np.zeros(0, np.int32), np.zeros(len(flat) + 1, np.int64))
    by_step = FieldTexts(flat, step_ptr, no_terms, vecs, codes, step_owner)
    dense = {f: by_step for f in FIELDS if f in st.dense}
    ptr, tool, matched = find_candidates(st, plan, fr, n=config.candidates, k=k, dense_texts=dense)

    # One pseudo-query per reading: the request's texts and terms, the reading's vector,
    # and all of the request's candidates.
    of = step_owner  # pseudo-query -> query
    sizes = np.diff(ptr)
    exp_ptr = np.zeros(of.size + 1, np.int64)
    np.cumsum(sizes[of], out=exp_ptr[1:])
    exp_tool = tool[ranges(ptr[of], sizes[of])]
    exp = _expand(plan, of, vecs, codes, set(dense))
    cands = pack(st, exp, fr, exp_ptr, exp_tool)
    scores, terms = score(st, cands, params, breakdown=bool(explain))

    final, chosen = combine_readings(scores, ptr, step_ptr, exp_ptr)
    first = step_ptr[:-1]  # every reading of a query has the same texts: take the first's counts
    view = Candidates(ptr, tool, np.ones(len(queries), np.int64), cands.n_args[first], plan.penalize,
                      cands.need_sims, cands.need_off[chosen], cands.ap_sims, cands.ap_off[chosen])
    return rank(st, plan, view, final, None if terms is None else terms[chosen], matched, k, params,
                why_only=explain == "why")


def _expand(plan: QueryPlan, of: np.ndarray, vecs: np.ndarray, codes: tuple[np.ndarray, np.ndarray],
            dense: set[str]) -> QueryPlan:
    """``plan`` with query ``of[j]`` repeated as pseudo-query ``j``; dense fields' texts of
    pseudo-query ``j`` carry step ``j``'s vector."""
    fields: dict[str, FieldTexts] = {}
    made: dict[int, FieldTexts] = {}
    for f in FIELDS:
        ft = plan.fields[f]
        key = id(ft) if f not in dense else -1 - id(ft)
        if key in made:  # a raw plan shares one FieldTexts between fields: expand it once
            fields[f] = made[key]
            continue
        counts = np.diff(ft.ptr)[of]
        idx = ranges(ft.ptr[of], counts)
        ptr = np.zeros(of.size + 1, np.int64)
        np.cumsum(counts, out=ptr[1:])
        off = ft.terms.offsets
        lens = np.diff(off)[idx]
        t_off = np.zeros(idx.size + 1, np.int64)
        np.cumsum(lens, out=t_off[1:])
        terms = TermBatch(read_only(ft.terms.terms[ranges(off[idx], lens)]), read_only(t_off))
        texts = [ft.texts[i] for i in idx.tolist()]
        if f in dense:
            step = np.repeat(np.arange(of.size), counts)
            got = FieldTexts(texts, ptr, terms, read_only(vecs[step]),
                             (read_only(codes[0][step]), read_only(codes[1][step])))
        else:
            got = FieldTexts(texts, ptr, terms)
        fields[f] = made[key] = got
    queries = [plan.queries[q] for q in of.tolist()]
    arg_names = [plan.arg_names[q] for q in of.tolist()]
    return QueryPlan(queries, fields, arg_names, read_only(plan.penalize[of]))
