"""Complete a ranking into a tool set: add the producers of missing inputs.

Runs after ranking, on the top of one query's hits (``search(..., complete=True)``):

1. **Drop near-duplicates.** A hit whose capability a higher kept hit already offers
   (same operation on the same resource, same required input keys, same output keys;
   see :mod:`toolsift.index.graph_rules`) adds nothing to the set and is dropped; the
   next-ranked hit moves up.
2. **Add producers.** For each kept hit, best first, and each of its required
   parameters that the query does not supply and that no tool already in the set can
   produce (an edge of the tool graph, :mod:`toolsift.index.graph`), add the best
   producer: the highest-ranked one that the query itself matched, else the strongest
   edge. The added hit replaces the lowest-ranked original hit and says why
   (``hit.why == "provides user_id for send_message"``). A consumer is never pushed out
   by its own producers: additions stop when the next one would.
3. The caller fits the result to ``token_budget`` (in rank order, originals first).

What the query supplies: a structured query's argument roles, or for raw text the roles
:func:`toolsift.decompose.extract_arguments` finds (a quoted text, a file name, an email
address, ``order #123`` ...). A parameter counts as supplied when a role has the same
name key, or shares a word with it other than an identity word (``file_name`` supplies
``file_path``; ``user_id`` does not supply ``order_id``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from ..analyze import Analyzer
from ..decompose.arguments import extract_arguments
from ..index.graph import _IDENTITY, ToolGraph
from ..index.graph_rules import Field, Signature, name_key
from ..schema import Catalog, Query
from .hits import Hit

__all__ = ["complete_hits", "fetch_depth"]


def fetch_depth(k: int, n_tools: int) -> int:
    """How many ranked hits completion looks at: ``2 k`` (refills after dropped
    near-duplicates, and tells which producers the query matched)."""
    return min(n_tools, 2 * k)


def _capability(sig: Signature) -> tuple | None:
    if sig.operation is None or not sig.resource:
        return None  # no stated operation: two such tools are never known to be the same
    return (sig.operation, sig.resource, frozenset(f.key for f in sig.inputs),
            frozenset(f.key for f in sig.outputs))


def _supplied_keys(query: Query, analyzer: Analyzer) -> list[tuple[str, ...]]:
    roles = query.arguments if query.arguments else extract_arguments(query.text) if query.text else {}
    return [name_key(r, analyzer) for r in roles]


def _supplied(p: Field, roles: list[tuple[str, ...]]) -> bool:
    words = set(p.key) - _IDENTITY
    return any(r == p.key or words & set(r) for r in roles)


class _Signatures:
    """Signatures by catalogue position, from the graph's cache or derived per tool."""

    def __init__(self, graph: ToolGraph, catalog: Catalog, analyzer: Analyzer) -> None:
        self.graph, self.catalog, self.analyzer = graph, catalog, analyzer

    def __call__(self, pos: int) -> Signature:
        return self.graph.signature_at(pos, self.catalog, self.analyzer)


def complete_hits(hits: Sequence[Hit], *, query: Query, k: int, graph: ToolGraph, catalog: Catalog,
                  analyzer: Analyzer, score_of: Callable[[list[int]], list[float]], only_matched: bool = True) -> list[Hit]:
    """The completed top ``k`` of ``hits`` (ranked, best first; ideally
    :func:`fetch_depth` of them).

    Args:
        hits: One query's ranking.
        query: The query (its arguments, or its text, tell what it supplies).
        k: Most hits to return.
        graph: The index's tool graph.
        catalog: The index's catalogue (positions of ``graph``).
        analyzer: The index's analyzer (name keys).
        score_of: MFTR scores of the query for catalogue positions (for added tools the
            ranking did not reach).

    Returns:
        New hits, ``rank`` renumbered; added ones carry ``why``.
    """
    sig = _Signatures(graph, catalog, analyzer)
    pos_of = catalog.position
    kept: list[tuple[int, Hit]] = []
    seen_caps: set = set()
    for h in hits:
        p = pos_of(h.id)
        cap = _capability(sig(p))
        if cap is not None and cap in seen_caps:
            continue
        if cap is not None:
            seen_caps.add(cap)
        kept.append((p, h))
    rank_of = {p: i for i, (p, _) in enumerate(kept)}
    top = kept[:k]
    in_set = {p for p, _ in top}
    roles: list[tuple[str, ...]] | None = None
    adds: list[tuple[int, str]] = []  # (position, why)
    for i, (c, h) in enumerate(top):
        rows = graph.into(c)
        if not rows:
            continue
        if roles is None:
            roles = _supplied_keys(query, analyzer)
        inputs = {f.name: f for f in sig(c).inputs}
        by_param: dict[str, list[int]] = {}
        for r in rows:
            by_param.setdefault(graph.parameter[r], []).append(r)
        for pname, prow in by_param.items():
            f = inputs.get(pname)
            if f is None or _supplied(f, roles):
                continue
            producers = [int(graph.producer[r]) for r in prow]
            if any(p in in_set for p in producers):
                continue  # a tool already in the set provides it
            # Room: the consumer (position i) must stay inside k after one more addition.
            if i + 1 + len(adds) + 1 > k:
                break
            ranked = [p for p in producers if p in rank_of]
            if not ranked and only_matched:
                continue
            best = min(ranked, key=rank_of.__getitem__) if ranked else producers[0]  # rows: best edge first
            adds.append((best, f"provides {pname} for {h.name}"))
            in_set.add(best)
    if not adds:
        return [dataclasses.replace(h, rank=r) for r, (_, h) in enumerate(top, 1)]
    base = [h for _, h in top[:k - len(adds)]]
    missing = [p for p, _ in adds if p not in rank_of]
    scores = dict(zip(missing, score_of(missing))) if missing else {}
    extra = []
    for p, why in adds:
        if p in rank_of:
            extra.append(dataclasses.replace(kept[rank_of[p]][1], why=why))
        else:
            extra.append(Hit(tool=catalog[p], score=float(scores[p]), rank=0, matched=False, why=why))
    return [dataclasses.replace(h, rank=r) for r, h in enumerate(base + extra, 1)]
