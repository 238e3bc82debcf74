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

from ..index.state import IndexState
from ..schema import FIELDS
from .plan import QueryPlan
from .retrievers import FieldRetriever, _ranges, merge_csr

__all__ = ["Candidates", "find_candidates", "pack"]

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
        return np.repeat(np.arange(self.ptr.size - 1, dtype=np.int64), np.diff(self.ptr))

    def __len__(self) -> int:
        return int(self.tool.size)


def find_candidates(st: IndexState, plan: QueryPlan, retrievers: dict[str, FieldRetriever], *,
                    n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per query, the union of every field's top-``n`` tools, at least ``min(k, tools)``
    of them: ``(ptr int64[nq + 1], tool int64[...])``."""
    parts = [retrievers[f].candidates(plan.fields[f], n) for f in FIELDS if plan.fields[f].texts]
    ptr, tool = merge_csr(parts)
    return _top_up(ptr, tool, min(k, len(st.catalog)))


def _top_up(ptr: np.ndarray, tool: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Add tools in catalogue order to every query with fewer than ``k`` candidates.

    Few queries need it (only those sharing a term with fewer than ``k`` tools), and the
    added tools score by the same model as the rest: the hit list is never cut short.
    """
    counts = np.diff(ptr)
    short = np.flatnonzero(counts < k)
    if not short.size:
        return ptr, tool
    rows = [tool[ptr[q]:ptr[q + 1]] for q in range(ptr.size - 1)]
    for q in short:
        have = rows[q]
        # The first k tools not yet present lie within the first k + len(have) positions.
        pool = np.arange(k + have.size, dtype=np.int64)
        extra = pool[~np.isin(pool, have)][: k - have.size]
        rows[q] = np.union1d(have, extra)
    new_ptr = np.zeros_like(ptr)
    np.cumsum([r.size for r in rows], out=new_ptr[1:])
    return new_ptr, np.concatenate(rows) if rows else tool


def pack(st: IndexState, plan: QueryPlan, retrievers: dict[str, FieldRetriever], ptr: np.ndarray,
         tool: np.ndarray) -> Candidates:
    """Score the candidates ``(ptr, tool)`` in every field and lay the result out as
    :class:`Candidates`."""
    nq = ptr.size - 1
    n_cand = np.diff(ptr)
    cq = np.repeat(np.arange(nq, dtype=np.int64), n_cand)
    local = np.arange(tool.size, dtype=np.int64) - ptr[cq]

    # Needs: field f's scores come text-major (text r of query q: one entry per
    # candidate of q); the kernel reads candidate-major blocks of n_needs rows.
    need_ptr = plan.need_ptr
    n_needs = np.diff(need_ptr)
    per_cand = n_needs[cq]
    need_off = _exclusive_cumsum(per_cand)
    entry_cand = np.repeat(np.arange(tool.size, dtype=np.int64), per_cand)
    r = np.arange(entry_cand.size, dtype=np.int64) - need_off[entry_cand]
    text = need_ptr[cq[entry_cand]] + r
    text_off = _exclusive_cumsum(n_cand[plan.fields["description"].owner])
    src = text_off[text] + local[entry_cand]
    need_sims = np.empty((entry_cand.size, 3), dtype=np.float32)
    for col, f in enumerate(NEED_FIELDS):
        need_sims[:, col] = retrievers[f].gather(plan.fields[f], ptr, tool, docs=False)[src]

    # Parameters: the field scores the candidates' parameter documents, text-major
    # again (argument a of query q: one entry per parameter of each candidate of q).
    param_ptr = st.param_ptr
    n_par = param_ptr[tool + 1] - param_ptr[tool]
    arg_ft = plan.fields["parameters"]
    n_args = np.diff(arg_ft.ptr)
    ap_len = n_args[cq] * n_par
    ap_off = _exclusive_cumsum(ap_len)
    if int(ap_len.sum()):
        doc_ids = _ranges(param_ptr[tool], n_par)
        doc_ptr = np.zeros(nq + 1, np.int64)
        np.cumsum(np.bincount(cq, weights=n_par, minlength=nq).astype(np.int64), out=doc_ptr[1:])
        arg_sims = retrievers["parameters"].gather(arg_ft, doc_ptr, doc_ids, docs=True)
        par_local = _exclusive_cumsum(n_par) - doc_ptr[cq]  # first parameter of i within q's block
        arg_off = _exclusive_cumsum(np.diff(doc_ptr)[arg_ft.owner])
        e_cand = np.repeat(np.arange(tool.size, dtype=np.int64), ap_len)
        e = np.arange(e_cand.size, dtype=np.int64) - ap_off[e_cand]
        a, p = np.divmod(e, n_par[e_cand])
        ap_sims = arg_sims[arg_off[arg_ft.ptr[cq[e_cand]] + a] + par_local[e_cand] + p]
    else:
        ap_sims = np.zeros(0, np.float32)
    return Candidates(ptr, tool, n_needs, n_args, plan.penalize, need_sims, need_off,
                      np.ascontiguousarray(ap_sims, dtype=np.float32), ap_off)


def _exclusive_cumsum(x: np.ndarray) -> np.ndarray:
    out = np.zeros(x.size, dtype=np.int64)
    if x.size > 1:
        np.cumsum(x[:-1], out=out[1:])
    return out
