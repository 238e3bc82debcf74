"""Multi-step raw requests: the dense halves search with one vector per step as well as
one for the whole request, and every step (need) gets its share of the ranking.

One query vector for a request that asks for three things drifts toward one of them
(docs/dense.md, "Multi-step requests"). When a raw request splits into two or more steps
(:func:`toolsift.decompose.split_steps`: lines and list items, inline enumerations,
sentences, sequencing, temporal and "and <verb>" clauses, comma series of clauses;
context sentences that ask for nothing stay with their step), the search runs like this:

1. BM25 (every BM25 field and the lexical half of every hybrid field) sees the whole
   request, exactly as for any raw query: a long query's terms add up, they do not drift.
2. The request has readings: the whole request (reading 0, the search as it was) and
   each step. The dense halves embed each reading; each reading's top
   ``dense_candidates`` tools by cosine join the candidates
   (:func:`~.candidates.find_candidates` ``dense_texts``).
3. Every candidate is scored once per reading: the whole request's BM25 with that
   reading's cosine, through the same MFTR kernel as any query. The BM25 scores are
   the same for every reading, so they are packed once per request; only the hybrid
   fields' cosines are gathered per reading (one call over all readings).
4. Every need gets its share of the list (:func:`combine_needs`): a candidate's place is
   its best rank in any reading's own ranking, so the list takes every reading's best,
   then every reading's second best, and so on (a per-need quota); within a round the
   per-need shifted score orders them (each reading's scores shifted so that its best
   candidate scores the best score of any reading), then the whole request's score, so
   the first hit is always the unsplit search's first hit. A hit's score is its best
   shifted score, capped so that scores strictly decrease down the list. No constant is
   involved.

A request that does not split takes none of this path: it scores bit for bit as before
(tested). ``IndexConfig.split_steps`` turns it off (indexes saved before it have it off).
On a hybrid index a raw request's steps are searched in one engine call
(:meth:`.hybrid_text.TextSearch.steps`), the same answer as :func:`run_steps`, which stays
the path for batches, explanations and what that call does not take.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .. import _core
from ..analyze import TermBatch
from ..config import IndexConfig
from ..csr import ranges, row_of
from ..index.dense_field import encode_texts
from ..index.query_table import query_encoder_for
from ..index.state import IndexState
from ..schema import FIELDS, Query
from ..textscan import has_line_break, whole_word
from .candidates import NEED_FIELDS, Candidates, find_candidates, pack
from .hits import Hit, rank
from .plan import FieldTexts, QueryPlan, plan_queries, read_only
from .query import is_raw
from .retrievers import Bm25Retriever, HybridRetriever
from .score import score

__all__ = ["MAX_STEPS", "combine_needs", "reading_vectors", "readings_of", "request_steps", "run_steps", "shares_bm25",
           "text_steps"]

#: At most this many steps per request (surplus clauses join the last step).
MAX_STEPS = 8
#: The whole request is one more need beside its steps.
WHOLE_AS_NEED = True

# A coarse pre-check that needs no import of the splitter: a request it rejects is one step
# for split_steps. Every trigger of decompose.steps.may_split (the rules' own, exact check) is
# in it: a line break, a sentence end, an enumeration number, a clause word, a temporal
# subordinator after , ; : -- and any comma before a word (may_split then looks for a verb
# or a question after it). Most short requests have none of them (~100 us saved a query).
# One regular expression each, not one alternation: re would try an alternation at every
# position, and skips ahead only to a pattern's literal or plain opening character. (A match
# of "[.!?;]+..." has one of "[.!?;]..." at its last mark: the same texts match.)
_PUNCT_SPACE = re.compile(r"[.!?;][\"')\]]{0,3}\s")
_NUMBER_MARK = re.compile(r"\d[).]")
_COMMA_LETTER = re.compile(r",\s{0,5}[A-Za-z]", re.IGNORECASE)
_SUBORD_AFTER = re.compile(r"[;:]\s{0,5}(?:once|when|after|before|as)\b", re.IGNORECASE)
_CLAUSE_WORDS = ("and", "but", "plus", "then", "after", "afterward", "afterwards", "next", "finally", "lastly",
                 "subsequently", "additionally", "also", "well")
_CLAUSE_WORD = re.compile(r"\b(?:" + "|".join(_CLAUSE_WORDS) + r")\b", re.IGNORECASE)


def _may_split(text: str) -> bool:
    """The coarse pre-check above: False only when ``text`` is one step."""
    if (has_line_break(text) or _PUNCT_SPACE.search(text) or _NUMBER_MARK.search(text) or _COMMA_LETTER.search(text)
            or _SUBORD_AFTER.search(text)):
        return True
    if text.isascii():
        return whole_word(text.lower(), _CLAUSE_WORDS)
    return _CLAUSE_WORD.search(text) is not None


_splitter = None  # decompose.steps.search_steps, imported with the first request that may split


def _steps_of(text: str) -> list[str] | None:
    """``text``'s steps when the splitter finds two or more, else ``None``."""
    global _splitter
    if _splitter is None:
        # The splitter (regular expressions compiled at import) loads with the first request
        # that may split: a one-step request, the usual search, never needs it.
        if not _may_split(text):
            return None
        from ..decompose.steps import search_steps

        _splitter = search_steps
    # Loaded, the splitter's own check (may_split) alone decides: every text it passes, the
    # coarse check passes too (each of its triggers is one of the coarse check's, or a comma
    # before a letter; tests/test_steps_golden.py checks it on every text there). On ASCII
    # text both run in C++, in one call (decompose.steps_native).
    return _splitter(text, MAX_STEPS)


def request_steps(st: IndexState, config: IndexConfig, queries: list[Query]) -> list[list[str] | None]:
    """Per query its steps when it is a raw request that splits into two or more and the
    index has dense fields (with ``config.split_steps``), else ``None``."""
    if not (config.split_steps and st.dense):
        return [None] * len(queries)
    return [_steps_of(q.text) if is_raw(q) else None for q in queries]


def text_steps(st: IndexState, config: IndexConfig, text: str) -> list[str] | None:
    """:func:`request_steps` of one raw-text query ``text`` (no :class:`Query` made)."""
    return _steps_of(text) if config.split_steps and st.dense else None


def readings_of(text: str, steps: list[str]) -> list[str]:
    """A multi-step request's readings: the whole request (the unsplit search), then each step."""
    return [text, *steps] if WHOLE_AS_NEED else list(steps)


def run_steps(st: IndexState, config: IndexConfig, queries: list[Query], steps: list[list[str]], fr, *,
              k: int, explain: bool | str, params) -> list[list[Hit]]:
    """The hits of raw multi-step ``queries`` (``steps[i]``: query ``i``'s steps; see the
    module docstring). ``fr``: the index's field retrievers.

    Every reading scores the same candidates with the same BM25 (the whole request's
    terms): the four fields' BM25 scores are packed once per request and copied to each
    reading, and only the hybrid fields' cosines are gathered per reading, in one call
    over all readings. The same float32 operations as packing each reading as its own
    query (:func:`~.needs_reference.run_steps_reference`, which configurations with a
    purely dense field take instead; tests/test_needs.py compares the two). Requires
    :func:`shares_bm25` of ``fr``.
    """
    plan = plan_queries(st, config, queries)
    # The readings of each request: the whole request first (the unsplit search), then its steps.
    readings = [readings_of(q.text, s) for s, q in zip(steps, queries)]
    step_ptr = np.zeros(len(queries) + 1, np.int64)
    np.cumsum([len(s) for s in readings], out=step_ptr[1:])
    flat = [t for s in readings for t in s]
    vecs, codes = reading_vectors(st, config, plan, readings)
    of = read_only(row_of(step_ptr))  # reading -> request
    no_terms = TermBatch(np.zeros(0, np.int32), np.zeros(len(flat) + 1, np.int64))
    by_step = FieldTexts(flat, step_ptr, no_terms, vecs, codes, of)
    dense = {f: by_step for f in FIELDS if f in st.dense}
    ptr, tool, matched = find_candidates(st, plan, fr, n=config.candidates, k=k, dense_texts=dense)

    # One block per reading: all of its request's candidates. src: block entry -> candidate.
    sizes = np.diff(ptr)
    exp_ptr = np.zeros(of.size + 1, np.int64)
    np.cumsum(sizes[of], out=exp_ptr[1:])
    src = ranges(ptr[of], sizes[of])
    exp_tool = tool[src]
    # BM25 once per request (hybrid fields' lexical halves), then each reading's cosines.
    lexical: dict[str, Any] = {f: r.lexical if isinstance(r, HybridRetriever) else r for f, r in fr.items()}
    lex = pack(st, plan, lexical, ptr, tool)
    need_sims = lex.need_sims[lex.need_off[src]]  # a copy per reading: the mix writes in place
    per_reading = FieldTexts(flat, np.arange(of.size + 1, dtype=np.int64), no_terms, vecs, codes)
    for j, f in enumerate(NEED_FIELDS):
        r = fr[f]
        if isinstance(r, HybridRetriever):
            r.mix(need_sims[:, j], None if r.dense_empty else r.dense.gather(per_reading, exp_ptr, exp_tool,
                                                                             docs=False))
    ap_off = lex.ap_off[src]
    cands = Candidates(exp_ptr, exp_tool, np.ones(of.size, np.int64), lex.n_args[of], plan.penalize[of],
                       need_sims, np.arange(src.size, dtype=np.int64), lex.ap_sims, ap_off)
    scores, terms = score(st, cands, params, breakdown=bool(explain))

    final, chosen = combine_readings(scores, ptr, step_ptr, exp_ptr)
    view = Candidates(ptr, tool, np.ones(len(queries), np.int64), lex.n_args, plan.penalize,
                      need_sims, chosen, lex.ap_sims, ap_off[chosen])
    return rank(st, plan, view, final, None if terms is None else terms[chosen], matched, k, params,
                why_only=explain == "why")



def combine_readings(scores: np.ndarray, ptr: np.ndarray, step_ptr: np.ndarray,
                     exp_ptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per request, :func:`combine_needs` over its readings' score rows: request ``q``
    has candidates ``ptr[q]:ptr[q+1]`` and readings ``step_ptr[q]:step_ptr[q+1]``, reading
    ``j``'s scores of them at ``scores[exp_ptr[j]:...]`` (the same candidates in order).
    Returns each candidate's combined score and the position of the reading row it took."""
    final = np.empty(int(ptr[-1]), np.float32)
    chosen = np.empty(int(ptr[-1]), np.int64)
    sizes = np.diff(ptr)
    for q in range(sizes.size):
        m, j0, n = int(sizes[q]), int(step_ptr[q]), int(step_ptr[q + 1] - step_ptr[q])
        lo = int(exp_ptr[j0])
        got, best = combine_needs(scores[lo:lo + n * m].reshape(n, m))
        final[ptr[q]:ptr[q + 1]] = got
        chosen[ptr[q]:ptr[q + 1]] = lo + best * m + np.arange(m)
    return final, chosen

def shares_bm25(fr) -> bool:
    """Whether every reading shares the BM25 packing (:func:`run_steps`' fast path): the
    need fields are BM25 or hybrid, and the parameters field (whose scores do not move
    with the reading there) is BM25."""
    return type(fr["parameters"]) is Bm25Retriever and all(
        type(fr[f]) in (Bm25Retriever, HybridRetriever) for f in NEED_FIELDS)


def reading_vectors(st: IndexState, config: IndexConfig, plan: QueryPlan, readings: list[list[str]]
                     ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Unit vectors and int8 codes of every reading, reading by reading. The whole
    request's (reading 0) are the plan's own, so that reading is exactly the unsplit
    search's; only the steps are embedded here."""
    from ..kernels.int8 import quantize_rows

    dense = plan.fields[next(f for f in FIELDS if f in st.dense)]
    whole = dense.ptr[:-1] if WHOLE_AS_NEED else np.zeros(0, np.int64)  # one text per raw query
    steps = [t for s in readings for t in (s[1:] if WHOLE_AS_NEED else s)]
    step_vecs = encode_texts(query_encoder_for(st, config), steps)
    step_codes = quantize_rows(step_vecs)
    # Row positions: each request's whole-request row, then its steps' rows.
    n = np.array([len(s) for s in readings], np.int64)
    first = np.zeros(n.size, np.int64)
    np.cumsum(n[:-1], out=first[1:])
    is_whole = np.zeros(int(n.sum()), bool)
    if WHOLE_AS_NEED:
        is_whole[first] = True
    vecs = np.empty((is_whole.size, step_vecs.shape[1]), np.float32)
    q_codes = np.empty((is_whole.size, step_vecs.shape[1]), np.int8)
    q_scales = np.empty(is_whole.size, np.float32)
    vecs[~is_whole], q_codes[~is_whole], q_scales[~is_whole] = step_vecs, step_codes[0], step_codes[1]
    if WHOLE_AS_NEED:
        assert dense.vectors is not None  # a dense field's texts are always embedded
        vecs[is_whole] = dense.vectors[whole]
        codes = dense.codes if dense.codes is not None else quantize_rows(dense.vectors)
        q_codes[is_whole], q_scales[is_whole] = codes[0][whole], codes[1][whole]
    return read_only(vecs), (read_only(q_codes), read_only(q_scales))


def combine_needs(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The combination over a request's readings (``_core.combine_needs``,
    cpp/src/combine_needs.cpp, the one definition; its NumPy twin is
    :func:`.needs_reference.combine_needs_reference`, and tests compare the two bit for bit).

    ``block``: ``float32[readings, candidates]`` MFTR scores, reading 0 the whole request.

    * Order: every reading gets its share of the list. A candidate's place is its best
      rank in any reading's own ranking, so the list takes every reading's best, then every
      reading's second best, and so on (a per-need quota, the interleave of the readings'
      lists). Within a round, by the per-need shifted score (each reading's scores moved,
      in float64, so that its best scores the best of any reading), then by reading 0's
      score, then by candidate (catalogue order): every reading's best is in the first
      round and the first hit is always reading 0's, the unsplit search's.
    * Score: a candidate's best shifted score (the MFTR scale), capped so that the scores
      strictly decrease down the list (float32; a capped score sits one float32 step below
      the one above it). So a hit's score never exceeds what its best reading gives it, and
      any sort by score keeps the order.

    Returns the scores (``float32``) and per candidate the reading its shifted score came
    from. One reading: its own scores (ties one float32 step apart).
    """
    return _core.combine_needs(block)
