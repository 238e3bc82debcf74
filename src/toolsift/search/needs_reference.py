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

__all__ = ["combine_needs_reference", "per_need_shift", "run_steps_reference", "strictly_decreasing"]


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


def combine_needs_reference(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`.needs.combine_needs` in NumPy: the independent twin of its C++ definition
    (cpp/src/combine_needs.cpp), which the tests compare with it bit for bit.

    ``block``: ``float32[readings, candidates]`` MFTR scores, reading 0 the whole request.

    * Order: every reading gets its share of the list. A candidate's place is its best
      rank in any reading's own ranking, so the list takes every reading's best, then every
      reading's second best, and so on (a per-need quota, the interleave of the readings'
      lists). Within a round, by the per-need shifted score (:func:`per_need_shift`), then
      by reading 0's score, then by candidate (catalogue order): every reading's best is
      in the first round and the first hit is always reading 0's, the unsplit search's.
    * Score: a candidate's best shifted score (the MFTR scale: each reading's scores moved
      so that its best scores the best of any reading), capped so that the scores strictly
      decrease down the list (float32; a capped score sits one float32 step below the one
      above it). So a hit's score never exceeds what its best reading gives it, and any
      sort by score keeps the order.

    Returns the scores (``float32``) and per candidate the reading its shifted score came
    from. One reading: its own scores (ties one float32 step apart).
    """
    b = block.astype(np.float64)
    shifted = per_need_shift(b)
    best = shifted.max(axis=0)
    n, m = b.shape
    by_reading = np.argsort(-b, axis=1, kind="stable")
    rank = np.empty((n, m), np.int64)
    np.put_along_axis(rank, by_reading, np.broadcast_to(np.arange(m, dtype=np.int64), (n, m)), axis=1)
    order = np.lexsort((np.arange(m), -b[0], -best, rank.min(axis=0)))
    out = np.empty(m, np.float32)
    out[order] = strictly_decreasing(best[order].astype(np.float32))
    return out, shifted.argmax(axis=0)


def strictly_decreasing(s: np.ndarray) -> np.ndarray:
    """``s`` (float32) with each value capped one float32 step below the previous output
    (``out[i] = min(s[i], nextafter(out[i-1], -inf))``), in one vectorised pass over the
    floats as ordered integers."""
    bits = s.view(np.int32).astype(np.int64)
    key = np.where(bits >= 0, bits, -(bits & 0x7FFFFFFF))  # monotone in the float's value
    floor = -0x7F800000  # -inf: nothing is stepped below it (no NaN bit patterns)
    i = np.arange(key.size, dtype=np.int64)
    key = np.maximum(np.minimum.accumulate(key + i) - i, floor)
    bits = np.where(key >= 0, key, (-key) | 0x80000000)
    return bits.astype(np.uint32).view(np.float32)


def per_need_shift(block: np.ndarray) -> np.ndarray:
    """``[needs, candidates]`` scores, each need's row shifted so that its best candidate
    scores exactly the best score of any need (float64 in, float64 out: the shift of a
    row's best is exact)."""
    top = block.max(axis=1, keepdims=True)
    return block - top + top.max()
