"""Hits: ranked tools with, on request, the per-field breakdown and a one-line reason."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..index.fields import name_words
from ..kernels.params import ScoringParams
from ..schema import FIELDS, Tool
from .candidates import Candidates
from .plan import QueryPlan

__all__ = ["Hit", "rank"]


@dataclass(frozen=True)
class Hit:
    """One ranked tool.

    Attributes:
        tool: The tool.
        score: Its MFTR score.
        rank: 1-based position in the result list.
        fields: Per-field similarity ``{description, parameters, response, examples}``
            (only with ``explain=True``).
        penalty: Missing-parameter penalty subtracted from the score (``explain=True``).
        parameters: Per tool parameter, the best-matching argument and its similarity,
            ``{param: (argument or None, similarity)}`` (``explain=True``).
        why: A one-line explanation (``explain=True``); for a tool that
            ``search(..., complete=True)`` added, what it completes (``"provides
            user_id for send_message"``), with or without ``explain``.
        matched: Whether some field matched the query: a BM25 half shares a term with
            it, or a dense half's cosine beats that field's null floor
            (:mod:`toolsift.search.evidence`). ``search`` always returns
            ``min(k, len(index))`` hits; tools without such evidence fill the tail and
            have ``matched=False`` (callers that want evidence only filter on it).
        tokens: Tokens of the tool's schema in the requested format, set only by a
            search with ``token_budget`` (see :mod:`toolsift.search.budget`).

    The ``to_*`` methods write the tool's schema for a host API, so the hits of a search
    become a ``tools=`` list directly: ``tools=[h.to_openai() for h in hits]``.
    """

    tool: Tool
    score: float
    rank: int
    matched: bool = True
    fields: dict[str, float] | None = None
    penalty: float | None = None
    parameters: dict[str, tuple[str | None, float]] | None = field(default=None, repr=False)
    why: str | None = None
    tokens: int | None = None

    @property
    def id(self) -> str:
        """The tool id."""
        return self.tool.id

    @property
    def name(self) -> str:
        """The tool name."""
        return self.tool.name

    def to_openai(self, *, api: str = "chat") -> dict[str, Any]:
        """The tool as an OpenAI function tool, ``api="chat"`` (Chat Completions) or
        ``"responses"`` (flat Responses API form); see :meth:`Tool.to_openai`."""
        return self.tool.to_openai(api=api)

    def to_anthropic(self) -> dict[str, Any]:
        """The tool as an Anthropic Messages API tool; see :meth:`Tool.to_anthropic`."""
        return self.tool.to_anthropic()

    def to_mcp(self, *, examples: bool = False) -> dict[str, Any]:
        """The tool as an MCP ``tools/list`` entry; see :meth:`Tool.to_mcp`."""
        return self.tool.to_mcp(examples=examples)

    def to_format(self, format: str) -> dict[str, Any]:
        """The tool in host ``format`` (``"openai"``, ``"openai-responses"``,
        ``"anthropic"``, ``"mcp"``); see :meth:`Tool.to_format`."""
        return self.tool.to_format(format)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (tool id and name, score, rank and the explanation if present)."""
        out: dict[str, Any] = {"rank": self.rank, "id": self.id, "name": self.name, "score": self.score}
        if self.fields is not None:
            out["fields"] = self.fields
            out["penalty"] = self.penalty
            out["parameters"] = {
                p: {"argument": a, "similarity": s} for p, (a, s) in (self.parameters or {}).items()
            }
            out["why"] = self.why
        elif self.why is not None:
            out["why"] = self.why
        if self.tokens is not None:
            out["tokens"] = self.tokens
        return out


def rank(st, plan: QueryPlan, cands: Candidates, scores: np.ndarray, terms: np.ndarray | None,
         matched: np.ndarray, k: int, params: ScoringParams, *, why_only: bool = False) -> list[list[Hit]]:
    """The top ``k`` hits of every query: score descending, then catalogue order.

    With ``terms`` (the kernel's breakdown) each hit is explained; ``why_only`` fills
    just its ``why`` (the same text), without the per-field and per-parameter dicts.
    """
    results: list[list[Hit]] = []
    for q in range(len(plan)):
        lo, hi = int(cands.ptr[q]), int(cands.ptr[q + 1])
        tools, s = cands.tool[lo:hi], scores[lo:hi]
        pos = np.lexsort((tools, -s))[:k] + lo  # the top k, as positions among all candidates
        # Python values of the k hits in one conversion each, not one per hit and attribute.
        top = zip(cands.tool[pos].tolist(), scores[pos].tolist(), matched[pos].tolist())
        if terms is None:
            results.append([_plain_hit(st.catalog[t], x, r, m, None) for r, (t, x, m) in enumerate(top, 1)])
        elif why_only:
            results.append(_reasons(st, plan, cands, q, pos, top, terms, params))
        else:
            results.append(_explain(st, plan, cands, q, pos, top, terms, params))
    return results


def _why(values: list[float], weights: tuple[float, ...], matched: bool) -> str:
    """The one-line reason from a hit's field similarities (in ``FIELDS`` order): the
    (at most) two fields with the largest positive contributions ``weight * value``,
    largest first (ties: the later field name first, as a reverse sort of
    ``(contribution, field)`` orders them)."""
    # The best two in one pass: a sort of four and a join cost a third more per hit.
    best = second = None
    for w, f, v in zip(weights, FIELDS, values):
        c = w * v
        if c > 0:
            item = (c, f, v)
            if best is None or item > best:
                best, second = item, best
            elif second is None or item > second:
                second = item
    if best is None:
        return "weak lexical match" if matched else "no field matches"
    if second is None:
        return f"matches {best[1]} {best[2]:.2f}"
    return f"matches {best[1]} {best[2]:.2f} and {second[1]} {second[2]:.2f}"


def _notes_missing(plan: QueryPlan, q: int, params: ScoringParams) -> bool:
    """Whether query ``q``'s reasons name unmatched required parameters: only when the
    missing-parameter penalty applies to it and weighs them (``w_req > 0``). With a zero
    weight a missing argument moves no score, so the explanation does not mention it."""
    return bool(plan.penalize[q]) and params.w_req > 0


def _given(names: list[str | None]) -> set[str]:
    """The extracted arguments' names as :func:`_missing` compares them (once per query)."""
    return {_name_key(n) for n in names if n}


def _missing(tool: Tool, matches: dict[str, tuple[str | None, float]], tau: float, given: set[str]) -> str:
    """The reason's note on required parameters no extracted argument covers: none
    matches it at similarity ``tau`` or more, and none carries its name (``given``, see
    :func:`_given`: ``title`` for ``title``, ``startTime`` for ``start_time``). The name
    rule is the explanation's only: an argument the caller named after the parameter is
    not "missing" even when its description shares few words with the parameter's."""
    missing = [p.name for p in tool.parameters
               if p.required and matches[p.name][1] < tau and _name_key(p.name) not in given]
    return "; no argument for required " + ", ".join(missing) if missing else ""


def _name_key(name: str) -> str:
    """An identifier compared by its words: ``startTime``, ``start_time``, ``Start time``."""
    return " ".join(name_words(name).casefold().split())


def _explain(st, plan: QueryPlan, cands: Candidates, q: int, pos: np.ndarray,
             top: Iterable[tuple[int, float, bool]], terms: np.ndarray,
             params: ScoringParams) -> list[Hit]:
    """The hits at candidate positions ``pos`` of query ``q``, with their breakdown."""
    tool_ids = cands.tool[pos]
    rows = terms[pos].tolist()
    p_lo, p_hi = st.param_ptr[tool_ids].tolist(), st.param_ptr[tool_ids + 1].tolist()
    ap_off = cands.ap_off[pos].tolist()
    na, names = int(cands.n_args[q]), plan.arg_names[q]
    penalize = _notes_missing(plan, q, params)
    given = _given(names) if penalize else set()
    weights = params.weights
    hits = []
    for r, ((t, score, matched), values, p0, p1, a0) in enumerate(zip(top, rows, p_lo, p_hi, ap_off), 1):
        tool = st.catalog[t]
        fields = dict(zip(FIELDS, values))
        matches = _parameter_matches(tool, cands.ap_sims[a0:a0 + na * (p1 - p0)], na, p1 - p0, names)
        why = _why(values, weights, matched)
        if penalize:
            why += _missing(tool, matches, params.tau, given)
        hits.append(Hit(tool=tool, score=score, rank=r, fields=fields, penalty=values[4],
                        parameters=matches, why=why, matched=matched))
    return hits


def _reasons(st, plan: QueryPlan, cands: Candidates, q: int, pos: np.ndarray,
             top: Iterable[tuple[int, float, bool]], terms: np.ndarray,
             params: ScoringParams) -> list[Hit]:
    """:func:`_explain`'s hits with only ``why`` filled: parameter matches are worked out
    only where the reason names a missing argument (a query with the penalty on)."""
    rows = terms[pos].tolist()
    weights = params.weights
    penalize = _notes_missing(plan, q, params)
    if penalize:
        tool_ids = cands.tool[pos]
        p_lo, p_hi = st.param_ptr[tool_ids].tolist(), st.param_ptr[tool_ids + 1].tolist()
        ap_off = cands.ap_off[pos].tolist()
        na, names = int(cands.n_args[q]), plan.arg_names[q]
        given = _given(names)
    hits = []
    for r, ((t, score, matched), values) in enumerate(zip(top, rows), 1):
        tool = st.catalog[t]
        why = _why(values, weights, matched)
        if penalize:
            p0, p1, a0 = p_lo[r - 1], p_hi[r - 1], ap_off[r - 1]
            matches = _parameter_matches(tool, cands.ap_sims[a0:a0 + na * (p1 - p0)], na, p1 - p0, names)
            why += _missing(tool, matches, params.tau, given)
        hits.append(_plain_hit(tool, score, r, matched, why))
    return hits


def reasons_of(catalog, tool: np.ndarray, score: np.ndarray, matched: list[bool], terms: np.ndarray,
               params: ScoringParams) -> list[Hit]:
    """The hits of a raw-text query an engine call ranked, each with its reason from the
    MFTR terms the engine returned for it (``terms``: ``float64[hits, 5]``, the formula's
    breakdown before rounding, as :func:`~toolsift.kernels.reference.score_candidates_reference`
    gives it): what :func:`_reasons` makes for a query without the missing-parameter
    penalty (a raw query never has it), without packing the hits again."""
    weights = params.weights
    return [_plain_hit(catalog[t], s, r, m, _why(values, weights, m))
            for r, (t, s, m, values) in enumerate(zip(tool.tolist(), score.tolist(), matched, terms.tolist()), 1)]


def _plain_hit(tool: Tool, score: float, rank: int, matched: bool, why: str | None) -> Hit:
    """``Hit(tool=..., score=..., rank=..., matched=..., why=...)`` without the frozen
    dataclass ``__init__``, which sets each of the nine fields through
    ``object.__setattr__`` (a fifth of a small search's explanation time)."""
    hit = object.__new__(Hit)
    hit.__dict__.update(tool=tool, score=score, rank=rank, matched=matched, fields=None, penalty=None,
                        parameters=None, why=why, tokens=None)
    return hit


def _parameter_matches(tool: Tool, sims: np.ndarray, na: int, n_par: int,
                       names: list[str | None]) -> dict[str, tuple[str | None, float]]:
    """Per parameter of ``tool``, its best argument (the first on ties; ``None`` when
    no argument scores above 0) and that similarity; ``sims`` is arg-major
    ``[a * n_par + p]``."""
    if not (na and n_par):
        return {p.name: (None, 0.0) for p in tool.parameters[:n_par]}
    if na == 1:
        # One argument text (a raw query's intent): it is every parameter's best.
        best, values = [0] * n_par, sims.tolist()
    else:
        block = sims.reshape(na, n_par)
        # One argmax over all parameters (the first best argument on ties, as per column).
        idx = block.argmax(axis=0)
        best, values = idx.tolist(), block[idx, np.arange(n_par)].tolist()
    return {tool.parameters[p].name: (names[b] if sim > 0 else None, sim)
            for p, (b, sim) in enumerate(zip(best, values))}
