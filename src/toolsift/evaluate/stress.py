"""The multi-step stress set: seeded requests that join 3-4 real queries into one.

A user who asks an agent for several things at once writes one long request; a single
query vector for it drifts toward one step (docs/dense.md, "Multi-step requests"). The
shared sets hold few such requests, so this module makes them from the queries of the
pooled catalogue (:mod:`toolsift.evaluate.pooled`): each request joins 3 or 4 queries of
one shared set whose labels are disjoint (different tools), the gold set is the union of
their labels, and the parts are joined by one of :data:`TEMPLATES` (varied connectives and
punctuation: clauses after semicolons, "First ..., and once done ...", separate sentences,
numbered and bulleted lists, plain "and", a comma series).

The connectives were chosen from the wording of issue 34, not from any splitter; the
report gives results per template so a splitter that only handles some is visible.
Generation is deterministic in ``seed`` (``random.Random``): the same seed gives the same
requests, byte for byte.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from .pooled_query import PooledQuery

__all__ = ["STRESS_SIZE", "TEMPLATES", "eligible", "join_parts", "stress_requests"]

#: Requests in ``toolsift eval stress``.
STRESS_SIZE = 600
#: Longest part, in words (longer queries are paragraphs of their own).
_MAX_WORDS = 45


def eligible(text: str) -> bool:
    """Whether a query can be a part: one line, 3 to 45 words."""
    return "\n" not in text.strip() and 3 <= len(text.split()) <= _MAX_WORDS


def _bare(text: str) -> str:
    """A part without its final period or exclamation mark (a question mark stays)."""
    return " ".join(text.split()).rstrip(" .!")


def _inner(text: str) -> str:
    """A part continuing a sentence: no end punctuation, first letter lower-cased unless
    the first word is "I" or an acronym."""
    t = _bare(text).rstrip("?")
    first = t.split(" ", 1)[0]
    if first != "I" and not first.startswith("I'") and not (len(first) > 1 and first[1].isupper()):
        t = t[:1].lower() + t[1:]
    return t


def _sentence(text: str) -> str:
    t = _bare(text)
    t = t[:1].upper() + t[1:]
    return t if t.endswith("?") else t + "."


def _semicolons(parts: list[str], rng: random.Random) -> str:
    out = _sentence(parts[0]).rstrip(".?")
    for p in parts[1:]:
        out += f"; {rng.choice(('after that', 'then', 'next', 'and then'))} {_inner(p)}"
    return out + "."


def _first_once_done(parts: list[str], rng: random.Random) -> str:
    out = f"First {_inner(parts[0])}"
    for p in parts[1:]:
        out += f", and {rng.choice(('once done', 'once that is done', 'when that is finished'))} {_inner(p)}"
    return out + "."


def _sentences(parts: list[str], rng: random.Random) -> str:
    return " ".join(_sentence(p) for p in parts)


def _numbered(parts: list[str], rng: random.Random) -> str:
    lead = rng.choice(("Please do the following:\n", "I need a few things:\n", ""))
    return lead + "\n".join(f"{i}. {_sentence(p)}" for i, p in enumerate(parts, 1))


def _bulleted(parts: list[str], rng: random.Random) -> str:
    mark = rng.choice(("-", "*", "•"))
    lead = rng.choice(("Can you help with these?\n", "To do:\n", ""))
    return lead + "\n".join(f"{mark} {_sentence(p)}" for p in parts)


def _and(parts: list[str], rng: random.Random) -> str:
    return _sentence(" and ".join(_inner(p) if i else _bare(p).rstrip("?") for i, p in enumerate(parts)))


def _commas(parts: list[str], rng: random.Random) -> str:
    head = ", ".join(_inner(p) if i else _bare(p).rstrip("?") for i, p in enumerate(parts[:-1]))
    return _sentence(f"{head}, and {_inner(parts[-1])}")


#: Joining templates by name; each takes the parts (raw query texts) and a generator.
TEMPLATES: dict[str, Callable[[list[str], random.Random], str]] = {
    "semicolons": _semicolons,
    "first-once-done": _first_once_done,
    "sentences": _sentences,
    "numbered": _numbered,
    "bulleted": _bulleted,
    "and": _and,
    "commas": _commas,
}


def join_parts(parts: list[str], template: str, rng: random.Random) -> str:
    """``parts`` joined into one request by ``template`` (a :data:`TEMPLATES` name)."""
    return TEMPLATES[template](parts, rng)


def stress_requests(queries: Sequence, *, n: int = STRESS_SIZE, seed: int = 0) -> list:
    """``n`` stress requests from ``queries`` (:class:`~toolsift.evaluate.pooled.PooledQuery`
    of the pooled sets): an equal share per source set, each joining 3 or 4 eligible
    queries of that set with pairwise disjoint labels, template chosen uniformly.

    Raises:
        ValueError: A set has too few eligible queries for 4 disjoint parts.
    """
    rng = random.Random(seed)
    by_set: dict[str, list] = {}
    for q in queries:
        if eligible(q.text) and q.labels:
            by_set.setdefault(q.source, []).append(q)
    sources = sorted(by_set)
    out: list[PooledQuery] = []
    names = sorted(TEMPLATES)
    for i in range(n):
        source = sources[i % len(sources)]
        pool = by_set[source]
        want = rng.choice((3, 4))
        parts: list = []
        seen: set[str] = set()
        for _ in range(200):  # draws; a pool with 4 disjoint queries fills in a few
            q = pool[rng.randrange(len(pool))]
            if seen.isdisjoint(q.labels) and all(q.text != p.text for p in parts):
                parts.append(q)
                seen.update(q.labels)
                if len(parts) == want:
                    break
        if len(parts) < want:
            raise ValueError(f"{source}: too few queries with disjoint labels for a {want}-part request")
        template = rng.choice(names)
        text = join_parts([p.text for p in parts], template, rng)
        labels = tuple(dict.fromkeys(t for p in parts for t in p.labels))
        out.append(PooledQuery(f"stress_q{i}", text, labels, source, tuple(p.id for p in parts), template))
    return out
