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
3. **Add family members the query asks for.** For each kept hit in a CRUD family
   (one resource, several operations: ``file_write`` / ``file_modify`` /
   ``file_delete``), add the member doing another operation when the query names that
   operation (one of its verbs, :data:`toolsift.index.graph_rules.OPERATIONS`: "then
   *delete* the file") and matched it: "create the file, then delete it" needs both.
4. The caller fits the result to ``token_budget`` (in rank order, originals first).

Added tools come only from the ranking itself (the query matched them, within
:func:`fetch_depth`): the graph decides which of the query's candidates complete the
set, never brings in a tool the query says nothing about.

What the query supplies: a structured query's argument roles, or for raw text the roles
:func:`toolsift.decompose.extract_arguments` finds (a quoted text, a file name, an email
address, ``order #123`` ...). A parameter counts as supplied when a role has the same
name key, or shares a word with it other than an identity word (``file_name`` supplies
``file_path``; ``user_id`` does not supply ``order_id``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

from ..analyze import Analyzer
from ..decompose.arguments import extract_arguments
from ..index.graph import IDENTITY_WORDS, OPERATION_CODES, ToolGraph
from ..index.graph_rules import OPERATIONS, Field, name_key
from ..schema import Catalog, Query
from .hits import Hit

__all__ = ["complete_hits", "fetch_depth"]


def fetch_depth(k: int, n_tools: int) -> int:
    """How many ranked hits completion looks at: ``2 k`` (refills after dropped
    near-duplicates, and tells which producers the query matched)."""
    return min(n_tools, 2 * k)


def _supplied_keys(query: Query, analyzer: Analyzer) -> list[tuple[str, ...]]:
    roles = query.arguments if query.arguments else extract_arguments(query.text) if query.text else {}
    return [name_key(r, analyzer) for r in roles]


def _supplied(p: Field, roles: list[tuple[str, ...]]) -> bool:
    words = set(p.key) - IDENTITY_WORDS
    return any(r == p.key or words & set(r) for r in roles)


@functools.lru_cache(maxsize=8)
def _verbs(analyzer: Analyzer) -> dict[str, int]:
    """Analysed CRUD verb -> operation code."""
    return {t: code for code, op in enumerate(OPERATION_CODES) for v in OPERATIONS[op] for t in analyzer.tokenize(v)}


def _asked_operations(query: Query, analyzer: Analyzer) -> set[int]:
    texts = [query.text] + [n.user_intent for n in query.needs]
    verbs = _verbs(analyzer)
    return {verbs[t] for text in dict.fromkeys(texts) if text for t in analyzer.tokenize(text) if t in verbs}


def complete_hits(hits: Sequence[Hit], *, query: Query, k: int, graph: ToolGraph, catalog: Catalog,
                  analyzer: Analyzer) -> list[Hit]:
    """The completed top ``k`` of ``hits`` (one query's ranking, best first; give it
    :func:`fetch_depth` of them).

    Args:
        hits: One query's ranking.
        query: The query (its arguments, or its text, tell what it supplies; its text
            and needs, which operations it asks for).
        k: Most hits to return.
        graph: The index's tool graph.
        catalog: The index's catalogue (positions of ``graph``).
        analyzer: The index's analyzer (name keys, verbs).

    Returns:
        The hits kept and added, ``rank`` renumbered; added ones carry ``why``.
    """
    pos_of = catalog.position
    kept: list[tuple[int, Hit]] = []
    seen_caps: set = set()
    dropped = False
    for h in hits:
        p = pos_of(h.id)
        cap = graph.capability_at(p, catalog, analyzer)
        if cap is not None:
            if cap in seen_caps:
                dropped = True
                continue
            seen_caps.add(cap)
        kept.append((p, h))
    rank_of = {p: i for i, (p, _) in enumerate(kept)}
    # Candidates to add: what the query matched (a search fills its tail with unmatched tools).
    matched = {p for p, h in kept if h.matched}
    top = kept[:k]
    in_set = {p for p, _ in top}
    adds: list[tuple[int, str]] = []  # (position, why)
    roles: list[tuple[str, ...]] | None = None
    for i, (c, h) in enumerate(top):
        if i + 2 + len(adds) > k:
            break  # one more addition would push this consumer out
        rows = graph.into(c)
        r, end = rows.start, rows.stop
        while r < end and i + 2 + len(adds) <= k:
            pname = graph.parameter[r]
            best, covered = -1, False
            while r < end and graph.parameter[r] == pname:  # one parameter's rows, best edge first
                p = graph.producers[r]
                covered = covered or p in in_set
                if p in matched and (best < 0 or rank_of[p] < rank_of[best]):
                    best = p
                r += 1
            if covered or best < 0:
                continue  # provided already, or no producer the query matched
            if roles is None:
                roles = _supplied_keys(query, analyzer)
            f = next((f for f in graph.signature_at(c, catalog, analyzer).inputs if f.name == pname), None)
            if f is None or _supplied(f, roles):
                continue
            adds.append((best, f"provides {pname} for {h.name}"))
            in_set.add(best)
    asked: set[int] | None = None
    for i, (c, h) in enumerate(top):
        if i + 2 + len(adds) > k:
            break
        members = graph.family_of(c)
        if not members:
            continue
        own = graph.operations[c]
        for member in sorted((m for m in members if m in matched and m not in in_set), key=rank_of.__getitem__):
            op = graph.operations[member]
            if op == own or i + 2 + len(adds) > k:
                continue
            if asked is None:
                asked = _asked_operations(query, analyzer)
            if op in asked:
                adds.append((member, f"{OPERATION_CODES[op]} step on the resource of {h.name}"))
                in_set.add(member)
    if not adds and not dropped:
        return [h for _, h in top]
    out = [h for _, h in top[:k - len(adds)]] + [dataclasses.replace(kept[rank_of[p]][1], why=why) for p, why in adds]
    return [h if h.rank == r else dataclasses.replace(h, rank=r) for r, h in enumerate(out, 1)]
