"""Candidate generation and packing: which tools each query scores, and their field
similarities laid out for the MFTR kernel.

:func:`find_candidates` takes, per query, the union over the four fields of each
field's top-N tools (the engine reads only the postings of the query's terms), topped
up in catalogue order so a query always gets ``k`` hits when the catalogue has ``k``
tools. :func:`pack` then asks each field for the scores of exactly those tools (and of
their parameters) and lays them out as one CSR :class:`Candidates` structure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _core
from ..csr import ranges, row_of
from ..index.state import IndexState
from ..schema import FIELDS
from .plan import FieldTexts, QueryPlan
from .evidence import dense_evidence
from .retrievers import Bm25Retriever, FieldRetriever, HybridRetriever, dense_half, merge_csr

__all__ = ["Candidates", "find_candidates", "lexical_parts", "member", "pack"]

#: Columns of :attr:`Candidates.need_sims`, in the kernel's order.
NEED_FIELDS = ("description", "response", "examples")


@dataclass(frozen=True)
class Candidates:
    """Candidate tools of a batch of queries and every similarity the kernel reads.

    CSR by query: query ``q``'s candidates are ``tool[ptr[q]:ptr[q+1]]`` (ascending
    catalogue positions). Candidate ``i`` of query ``q`` finds its per-need
    (description, response, examples) similarities in rows
    ``need_off[i] : need_off[i] + n_needs[q]`` of ``need_sims``, and its
    argument x parameter similarities in ``ap_sims[ap_off[i]:]``, arg-major
    (``[a * n_params(t) + p]``).

    Attributes:
        ptr: ``int64[nq + 1]``.
        tool: ``int64[nc]``.
        n_needs: ``int64[nq]``: tool needs per query.
        n_args: ``int64[nq]``: parameter-field texts per query.
        penalize: ``uint8[nq]``: whether the missing-parameter penalty applies.
        need_sims: ``float32[m, 3]``.
        need_off: ``int64[nc]``.
        ap_sims: ``float32[k]``.
        ap_off: ``int64[nc]``.
    """

    ptr: np.ndarray
    tool: np.ndarray
    n_needs: np.ndarray
    n_args: np.ndarray
    penalize: np.ndarray
    need_sims: np.ndarray
    need_off: np.ndarray
    ap_sims: np.ndarray
    ap_off: np.ndarray

    @property
    def query(self) -> np.ndarray:
        """``int64[nc]``: the query each candidate belongs to."""
        return row_of(self.ptr)

    def __len__(self) -> int:
        return int(self.tool.size)


def find_candidates(st: IndexState, plan: QueryPlan, retrievers: dict[str, FieldRetriever], *,
                    n: int, k: int, dense_texts: dict[str, FieldTexts] | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per query, the union of every field's top-``n`` tools, at least ``min(k, tools)``
    of them: ``(ptr int64[nq + 1], tool int64[...], matched bool[...])``, where
    ``matched`` is True for tools a BM25 half found and for tools a dense half found
    with a cosine above its field's null floor (.evidence), False for the others (the
    dense half's weak candidates and the tools added only to fill ``k``). ``dense_texts``: per field,
    the texts its dense half searches with instead of the plan's (a multi-step request's
    steps, :mod:`.needs`)."""
    fields = [f for f in FIELDS if plan.fields[f].texts]
    parts = lexical_parts(plan, retrievers, n)
    evidence = list(parts)  # a BM25 candidate shares a term with the query
    n_lexical = len(parts)
    for f in fields:
        ft = (dense_texts or plan.fields).get(f, plan.fields[f])
        dense = retrievers[f].dense_parts(ft, n, k=k)
        parts += dense
        # A dense candidate is evidence only above its field's null floor (.evidence).
        half = dense_half(retrievers[f])
        if half is not None:
            evidence += [dense_evidence(half, ft, p, t, half.null_floor) for p, t in dense]
    ptr, tool = merge_csr(parts)
    ptr, tool, found = _top_up(ptr, tool, min(k, len(st.catalog)))
    if len(parts) == n_lexical:  # no dense candidates: every one found is evidence
        return ptr, tool, found
    return ptr, tool, member(ptr, tool, *merge_csr(evidence))


def member(ptr: np.ndarray, tool: np.ndarray, e_ptr: np.ndarray, e_tool: np.ndarray) -> np.ndarray:
    """``bool[tool.size]``: whether each entry of CSR ``(ptr, tool)`` is in the same row of
    CSR ``(e_ptr, e_tool)`` (whose rows are sorted and distinct)."""
    if not e_tool.size:
        return np.zeros(tool.size, dtype=bool)
    span = int(max(tool.max(initial=0), e_tool.max())) + 1
    keys = row_of(ptr) * span + tool
    e_keys = row_of(e_ptr) * span + e_tool
    at = np.minimum(np.searchsorted(e_keys, keys), e_keys.size - 1)
    return e_keys[at] == keys


def lexical_parts(plan: QueryPlan, retrievers: dict[str, FieldRetriever], n: int
                  ) -> list[tuple[np.ndarray, np.ndarray]]:
    """The BM25 halves' candidates of every field: CSR ``(ptr, tool)`` parts (one, their
    union, when the engine can take every field in one call)."""
    lexical = [f for f in FIELDS if plan.fields[f].texts and retrievers[f].lexical is not None]
    settings = _lexical_settings(retrievers, lexical)
    if lexical and settings is not None:
        # Every field's BM25 candidates (a hybrid field's lexical half too) and their
        # union in one engine call.
        texts = [plan.fields[f] for f in lexical]
        return [_core.candidates_union(
            [retrievers[f].lexical.fi.core for f in lexical], [t.terms.terms for t in texts],  # type: ignore[union-attr]
            [t.terms.offsets for t in texts], [t.owner for t in texts], len(plan), n, settings[0], True, settings[1],
            "auto")]
    return [retrievers[f].lexical.candidates(plan.fields[f], n) for f in lexical]  # type: ignore[union-attr]


def _lexical_settings(retrievers: dict[str, FieldRetriever], fields: list[str]) -> tuple[str, int] | None:
    """``(scale, threads)`` when the BM25 halves of ``fields`` share their settings (the
    engine can then take them all in one call), else ``None``."""
    got = None
    for f in fields:
        r = retrievers[f].lexical
        if type(r) is not Bm25Retriever:  # none, or a subclass the engine does not know
            return None
        if got is None:
            got = (r.scale, r.threads)
        elif got != (r.scale, r.threads):
            return None
    return got


def _top_up(ptr: np.ndarray, tool: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Add tools in catalogue order to every query with fewer than ``k`` candidates, and
    mark which candidates were found rather than added.

    Few queries need it (only those sharing a term with fewer than ``k`` tools), and the
    added tools score by the same model as the rest: the hit list is never cut short.
    """
    if ptr.size == 2 and tool.size >= k:  # one query (ptr[0] is 0) with enough candidates
        return ptr, tool, np.ones(tool.size, dtype=bool)
    short = np.flatnonzero(ptr[1:] - ptr[:-1] < k)
    if not short.size:
        return ptr, tool, np.ones(tool.size, dtype=bool)
    rows = [tool[ptr[q]:ptr[q + 1]] for q in range(ptr.size - 1)]
    found = [np.ones(r.size, dtype=bool) for r in rows]
    for q in short:
        rows[q], found[q] = _fill(rows[q], k)
    new_ptr = np.zeros_like(ptr)
    np.cumsum([r.size for r in rows], out=new_ptr[1:])
    return new_ptr, np.concatenate(rows), np.concatenate(found)


def _fill(have: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``have`` (sorted, distinct) and the first tools not in it, ``k`` in all, sorted;
    and which of them came from ``have``. A mask and two sorts of ``k`` entries: set
    operations (``isin``, ``union1d``) cost ~60 µs per short query."""
    # The first k tools not yet present lie within the first k + len(have) positions.
    free = np.ones(k + have.size, dtype=bool)
    free[have[have < free.size]] = False
    extra = np.flatnonzero(free)[: k - have.size].astype(np.int64, copy=False)
    merged = np.sort(np.concatenate([have, extra]))
    found = np.ones(merged.size, dtype=bool)
    found[np.searchsorted(merged, extra)] = False
    return merged, found


def pack(st: IndexState, plan: QueryPlan, retrievers: dict[str, FieldRetriever], ptr: np.ndarray,
         tool: np.ndarray) -> Candidates:
    """Score the candidates ``(ptr, tool)`` in every field and lay the result out as
    :class:`Candidates`."""
    need_ptr = plan.need_ptr
    arg_ptr = plan.arg_ptr
    param_ptr = st.param_ptr
    need_r = [retrievers[f] for f in NEED_FIELDS]
    settings = _lexical_settings(retrievers, [*NEED_FIELDS, "parameters"])
    if settings is not None and type(retrievers["parameters"]) is Bm25Retriever:
        # The four fields' BM25 scores (a hybrid field's lexical half too) and both
        # transposes in one engine call, the same values as the general path below.
        need = [plan.fields[f] for f in NEED_FIELDS]
        par_t = plan.fields["parameters"]
        need_sims, need_off, ap_sims, ap_off = _core.pack_fields(
            [r.lexical.fi.core for r in need_r], [t.terms.terms for t in need],  # type: ignore[union-attr]
            [t.terms.offsets for t in need], [t.owner for t in need],
            retrievers["parameters"].fi.core, par_t.terms.terms, par_t.terms.offsets, par_t.owner,  # type: ignore[attr-defined]
            ptr, tool, need_ptr, arg_ptr, param_ptr, settings[0], settings[1])
        hybrid = [(j, r) for j, r in enumerate(need_r) if isinstance(r, HybridRetriever)]
        if hybrid:
            _mix_dense(plan, hybrid, ptr, tool, need_ptr, need_sims)
        return Candidates(ptr, tool, need_ptr[1:] - need_ptr[:-1], arg_ptr[1:] - arg_ptr[:-1], plan.penalize,
                          need_sims, need_off, ap_sims, ap_off)
    from ..kernels.pack import pack_needs, pack_params  # Numba: off the fused BM25 path

    sims = [retrievers[f].gather(plan.fields[f], ptr, tool, docs=False) for f in NEED_FIELDS]
    need_sims, need_off = pack_needs(ptr, tool, need_ptr, *sims)

    # The parameters field scores the candidates' parameter documents: query q asks
    # for the parameters of each of its candidates, in candidate order.
    if arg_ptr[-1]:
        n_par = param_ptr[tool + 1] - param_ptr[tool]
        doc_ids = ranges(param_ptr[tool], n_par)
        cum = np.zeros(tool.size + 1, np.int64)
        np.cumsum(n_par, out=cum[1:])
        doc_ptr = cum[ptr]
        par = retrievers["parameters"].gather(plan.fields["parameters"], doc_ptr, doc_ids, docs=True)
        ap_sims, ap_off = pack_params(ptr, tool, arg_ptr, param_ptr, par)
    else:
        ap_sims, ap_off = np.zeros(0, np.float32), np.zeros(tool.size, np.int64)
    return Candidates(ptr, tool, need_ptr[1:] - need_ptr[:-1], arg_ptr[1:] - arg_ptr[:-1], plan.penalize,
                      need_sims, need_off, ap_sims, ap_off)


def _mix_dense(plan: QueryPlan, hybrid: list[tuple[int, HybridRetriever]], ptr: np.ndarray, tool: np.ndarray,
               need_ptr: np.ndarray, need_sims: np.ndarray) -> None:
    """Turn the BM25 columns of ``need_sims`` of hybrid fields into hybrid scores, in
    place: the dense halves' cosines, laid out by the same packing, mixed in by
    :meth:`HybridRetriever.mix` (the float32 operations of the per-field path)."""
    cos: list[np.ndarray | None] = [None, None, None]
    for j, r in hybrid:
        if not r.dense_empty:
            cos[j] = r.dense.gather(plan.fields[NEED_FIELDS[j]], ptr, tool, docs=False)
    if need_ptr[-1] == len(plan):
        # One need per query (raw queries): row i of need_sims is candidate i, the
        # order the gathers already have; no packing.
        for j, r in hybrid:
            r.mix(need_sims[:, j], cos[j])  # a column view: mix writes through it
        return
    from ..kernels.pack import pack_needs  # Numba: off the fused BM25 path

    packed = None
    if any(c is not None for c in cos):
        size = next(c.size for c in cos if c is not None)
        packed, _ = pack_needs(ptr, tool, need_ptr, *(c if c is not None else np.zeros(size, np.float32) for c in cos))
    for j, r in hybrid:
        r.mix(need_sims[:, j], None if cos[j] is None or packed is None else np.ascontiguousarray(packed[:, j]))
