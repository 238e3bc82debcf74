"""A synthetic tool catalogue of any size, recombined from real tools.

Scale benchmarks need catalogues of 100k and 1M tools; no public set is that large, and
replicating the real tools under new names gives the index nothing new to learn (every
posting list just grows by a constant factor, and the vocabulary stays fixed). This module
instead recombines the parts of real tools (by default the 6,417 tools of the four
``mftr-*`` shared sets) into new, plausible tools:

``name``
    ``<service>_<verb>_<object>``. ``verb`` is the first word of a real tool's name,
    drawn from first words that start at least :data:`MIN_VERB_COUNT` real names (so
    ``get``, ``create``, ``calculate`` ... in their real proportions); ``object`` is the
    remaining words of another real tool's name (its single word for one-word names).
    ``service`` is one compound word made of two real name words (``weather`` +
    ``ledger`` -> ``weatherledger``), shared by :data:`TOOLS_PER_SERVICE` consecutive
    tools, the way MCP gateways prefix tools with their server name. Services are what
    make the vocabulary grow with the catalogue (Heaps' law) instead of staying at the
    real sets' size. A name that already occurred gets ``_2``, ``_3`` ... appended.
``description``
    The object donor's first sentence up to its first clause boundary (`` for ``,
    `` using ``, `` from `` ...), finished by a second real tool's first sentence from
    its boundary on ("Fetch the list of all stock splits" + " using the Seeking Alpha
    API."), then the object donor's remaining sentences (which describe its parameters,
    which the synthetic tool mostly keeps). Lengths and sentence counts thus follow the
    real distribution.
``parameters``
    The object donor's parameter list (so counts follow the real distribution), each
    parameter replaced with probability 1/2 by one drawn from all real parameters;
    duplicate names within a tool are dropped.
``response``, ``examples``
    Taken together from a third real tool.
``id``
    ``syn<seed>-<position>``, unique by construction; ``tags`` is ``("synthetic",)``.

Generation is deterministic: tool ``i`` depends only on the seed, the donor pool and
``i`` (random draws are made per block of :data:`BLOCK` tools from a generator seeded
with ``(seed, block)``), so the first 100k tools of the 1M catalogue are the 100k
catalogue. It streams (:func:`synthetic_tools` is a generator, :func:`synthetic_chunks`
yields lists) and makes about 50k tools per second on one core (1M in about 20 s).

Example::

    from benchmarks.synthetic import real_tools, synthetic_tools
    pool = real_tools()                              # the four mftr-* sets
    catalog = list(synthetic_tools(100_000, pool=pool, seed=0))
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolsift import Tool

__all__ = [
    "BLOCK",
    "MIN_VERB_COUNT",
    "MFTR_SETS",
    "TOOLS_PER_SERVICE",
    "DonorPool",
    "data_dir",
    "flat_document",
    "real_queries",
    "real_tools",
    "synthetic_chunks",
    "synthetic_tools",
]

#: Tools drawn per random block; a multiple of :data:`TOOLS_PER_SERVICE` so a service
#: never straddles two blocks.
BLOCK = 8192
#: Consecutive tools sharing one service prefix.
TOOLS_PER_SERVICE = 16
#: A first name word counts as a verb when at least this many real names start with it.
MIN_VERB_COUNT = 3
#: The shared sets whose ``tools.json`` form the default donor pool (6,417 tools).
MFTR_SETS = ("mftr-apibank", "mftr-apigen", "mftr-gorilla-huggingface", "mftr-toolink")

_TAGS = ("synthetic",)
_SWAPPABLE = 8  # parameters per tool that may be swapped (later ones are kept)
# Clause boundaries where two descriptions' first sentences are cut and spliced.
_CLAUSE = re.compile(r" (?:for|from|using|with|by|in|on|based on|given|of|to) ")
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`])")


def data_dir() -> Path:
    """The shared benchmark data folder: ``$TOOLSIFT_DATA`` if set, else ``../shared/data``
    beside the repository (the layout CI uses)."""
    env = os.environ.get("TOOLSIFT_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def real_tools(data: Path | None = None) -> list[Tool]:
    """The raw ``tools.json`` tools of the four ``mftr-*`` sets, in set order.

    Raises:
        FileNotFoundError: A set's ``tools.json`` is missing (the path is named).
    """
    from toolsift.adapters import load_catalog

    root = Path(data) if data is not None else data_dir()
    tools: list[Tool] = []
    for name in MFTR_SETS:
        files = sorted((root / name / "dataset" / "from_toolret").glob("*/tools.json"))
        if len(files) != 1:
            raise FileNotFoundError(f"{root / name}/dataset/from_toolret/*/tools.json: "
                                    f"expected one file, found {len(files)}")
        tools.extend(load_catalog(files[0]))
    return tools


def real_queries(data: Path | None = None) -> list:
    """The test-fold queries (raw text + MFTR rewrite) of the four ``mftr-*`` sets, as
    :class:`toolsift.adapters.BenchmarkQuery`, in set and fold order."""
    from toolsift.adapters.benchmark import load_queries

    root = Path(data) if data is not None else data_dir()
    out: list = []
    for name in MFTR_SETS:
        out.extend(q for f in sorted((root / name / "dataset" / "train_and_test").glob("*/fold_*/test_queries.json"))
                   for q in load_queries(f))
    if not out:
        raise FileNotFoundError(f"{root}: no mftr-*/dataset/train_and_test/*/fold_*/test_queries.json")
    return out


def _words(name: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(name)]


def _sentences(text: str) -> list[str]:
    return [s for s in (p.strip() for p in _SENTENCE_END.split(text.strip())) if s]


def _cut(sentence: str) -> int:
    """Start of the first clause boundary at least 15 characters in, or 0."""
    m = _CLAUSE.search(sentence, 15)
    return m.start() if m else 0


@dataclass(frozen=True, eq=False)
class DonorPool:
    """Real tools cut into the parts :func:`synthetic_tools` recombines.

    Build with :meth:`from_tools`. Attributes are parallel per donor tool unless noted.

    Attributes:
        verbs: Verb-like first name words, one entry per real name starting with one
            (so sampling uniformly follows their real frequency).
        objects: Each tool's name words after the first, joined with ``_``.
        heads: Each tool's first description sentence (``""`` if it has none).
        tails: Each tool's remaining description sentences, joined (``""`` if none).
        cuts: Where each first sentence's first clause boundary (`` for ``, `` using ``
            ...) after its opening words starts, or 0 if it has none.
        clauses: Each first sentence from that boundary on (``" for a given symbol."``),
            or ``""``.
        params: Each tool's parameter tuple.
        all_params: Every real parameter, flattened.
        responses: Each tool's response text.
        examples: Each tool's example intents.
        service_words: Distinct name words of 4+ letters, for service names.
    """

    verbs: tuple[str, ...]
    objects: tuple[str, ...]
    heads: tuple[str, ...]
    tails: tuple[str, ...]
    cuts: tuple[int, ...]
    clauses: tuple[str, ...]
    params: tuple[tuple, ...]
    all_params: tuple
    responses: tuple[str, ...]
    examples: tuple[tuple[str, ...], ...]
    service_words: tuple[str, ...]

    @classmethod
    def from_tools(cls, tools: Sequence[Tool]) -> DonorPool:
        """Cut ``tools`` into parts.

        Raises:
            ValueError: ``tools`` is empty, or no name yields a verb or a service word.
        """
        if len(tools) == 0:
            raise ValueError("donor pool: no tools given")
        words = [_words(t.name) or [t.name.lower()] for t in tools]
        # Model ids ("facebook/bart-large") start with an organisation, not a verb.
        named = [w for t, w in zip(tools, words) if len(w) > 1 and "/" not in t.name
                 and len(w[0]) > 1 and w[0].isalpha()]
        firsts = Counter(w[0] for w in named)
        verbs = tuple(w[0] for w in named if firsts[w[0]] >= MIN_VERB_COUNT)
        service_words = tuple(sorted({x for w in words for x in w if len(x) >= 4 and x.isalpha()}))
        if not verbs or not service_words:
            raise ValueError("donor pool: tool names yield no verb or no service word "
                             f"(verbs {len(verbs)}, service words {len(service_words)})")
        sentences = [_sentences(t.description) for t in tools]
        heads = [s[0] if s else "" for s in sentences]
        cuts = [_cut(h) for h in heads]
        return cls(
            verbs=verbs,
            objects=tuple("_".join(w[1:] if len(w) > 1 else w) for w in words),
            heads=tuple(heads),
            tails=tuple(" ".join(s[1:]) for s in sentences),
            cuts=tuple(cuts),
            clauses=tuple(h[c:] if c else "" for h, c in zip(heads, cuts)),
            params=tuple(t.parameters for t in tools),
            all_params=tuple(p for t in tools for p in t.parameters),
            responses=tuple(t.response for t in tools),
            examples=tuple(t.examples for t in tools),
            service_words=service_words,
        )


def _block(pool: DonorPool, seed: int, block: int, start: int, stop: int,
           seen: set[str]) -> list[Tool]:
    """Tools ``start``..``stop`` (exclusive) of block ``block``; ``seen`` holds every name
    generated before them and is updated."""
    rng = np.random.default_rng([seed, block])
    n_tools, n = len(pool.objects), BLOCK
    # Fixed-size draws per block keep tool i independent of how many tools are requested;
    # lists, because indexing NumPy arrays element by element is several times slower.
    verb = rng.integers(0, len(pool.verbs), n).tolist()
    obj = rng.integers(0, n_tools, n).tolist()    # object donor: name object, head, params
    other = rng.integers(0, n_tools, n).tolist()  # second description donor
    extra = rng.integers(0, n_tools, n).tolist()  # response and examples donor
    svc = rng.integers(0, len(pool.service_words), (n // TOOLS_PER_SERVICE, 2)).tolist()
    swap = (rng.random((n, _SWAPPABLE)) < 0.5).tolist()
    swap_with = rng.integers(0, max(1, len(pool.all_params)), (n, _SWAPPABLE)).tolist()
    words, verbs, objects = pool.service_words, pool.verbs, pool.objects
    out: list[Tool] = []
    base = block * BLOCK
    for j in range(start - base, stop - base):
        s = svc[j // TOOLS_PER_SERVICE]
        o, t = obj[j], other[j]
        name = f"{words[s[0]]}{words[s[1]]}_{verbs[verb[j]]}_{objects[o]}"
        if name in seen:
            k = 2
            while f"{name}_{k}" in seen:
                k += 1
            name = f"{name}_{k}"
        seen.add(name)
        params, names = [], set()
        for i, p in enumerate(pool.params[o]):
            if i < _SWAPPABLE and swap[j][i] and pool.all_params:
                p = pool.all_params[swap_with[j][i]]
            if p.name not in names:
                names.add(p.name)
                params.append(p)
        e = extra[j]
        out.append(Tool(id=f"syn{seed}-{base + j}", name=name,
                        description=_description(pool, o, t), parameters=tuple(params),
                        response=pool.responses[e], examples=pool.examples[e],
                        tags=_TAGS))
    return out


def _description(pool: DonorPool, o: int, t: int) -> str:
    """Donor ``o``'s first sentence cut at a clause boundary and finished with donor
    ``t``'s clause, then ``o``'s remaining sentences (their parameters are ``o``'s)."""
    head = pool.heads[o] or pool.heads[t]
    cut, rest = pool.cuts[o], pool.clauses[t]
    if cut and rest:
        head = head[:cut] + rest
    tail = pool.tails[o]
    return f"{head} {tail}" if tail else head


def synthetic_chunks(n: int, *, pool: DonorPool | Sequence[Tool] | None = None, seed: int = 0,
                     chunk: int = BLOCK) -> Iterator[list[Tool]]:
    """``n`` synthetic tools in lists of at most ``chunk`` (see the module docstring).

    Args:
        n: Number of tools.
        pool: A :class:`DonorPool`, the real tools to build one from, or ``None`` for
            :func:`real_tools`.
        seed: Random seed; the same seed and pool give the same tools.
        chunk: Largest list yielded.

    Raises:
        ValueError: ``n`` is negative or ``chunk`` is not positive.
    """
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"synthetic catalogue: n must be an integer >= 0, got {n!r}")
    if not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"synthetic catalogue: chunk must be an integer >= 1, got {chunk!r}")
    if not isinstance(pool, DonorPool):
        pool = DonorPool.from_tools(real_tools() if pool is None else pool)
    seen: set[str] = set()
    pos = 0
    while pos < n:
        stop = min(n, pos + chunk)
        out: list[Tool] = []
        while pos < stop:
            block = pos // BLOCK
            end = min(stop, (block + 1) * BLOCK)
            out.extend(_block(pool, seed, block, pos, end, seen))
            pos = end
        yield out


def synthetic_tools(n: int, *, pool: DonorPool | Sequence[Tool] | None = None,
                    seed: int = 0) -> Iterator[Tool]:
    """``n`` synthetic tools, one at a time (see :func:`synthetic_chunks`)."""
    for chunk in synthetic_chunks(n, pool=pool, seed=seed):
        yield from chunk


def flat_document(tool: Tool) -> str:
    """One tool as a single text (name, description, parameters, response, examples): the
    Full-Doc form a single-field BM25 baseline such as bm25s indexes."""
    parts = [tool.name.replace("_", " "), tool.description]
    parts.extend(f"{p.name} {p.description}" for p in tool.parameters)
    parts.append(tool.response)
    parts.extend(tool.examples)
    return " ".join(p for p in parts if p)
