"""Which candidates the query really matched, on fields with a dense half.

BM25 has a natural "no evidence": a tool that shares no term with the query scores 0.
A cosine has none: every tool gets one, even for a query of nonsense, so a candidate
that only a dense half found is not evidence by itself. It counts as matched only when
its cosine beats the field's **null floor**: the best cosine any of ``NULL_TEXTS``
random character strings (a fixed seed) reaches on the field's tools, through the same
query encoder and candidate path as a search. For a query drawn like those strings, the
chance that its best cosine beats all of theirs is 1 / (``NULL_TEXTS`` + 1) per field
(exchangeability), whatever the catalogue; nothing here is fitted to a benchmark. The
floor is computed once per retriever (so per index state and settings), on first use,
unless the index was loaded with floors its save recorded for the same settings
(:func:`floor_record`, :func:`saved_floors`): a fresh process's first weak hit then
costs nothing.

Ranking does not depend on it: the candidates are the same, only ``Hit.matched``
(and what reads it) changes. docs/dense.md "Gibberish" has the measurements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._version import __version__
from ..analyze import TermBatch
from ..csr import ranges, row_of
from ..schema import FIELDS
from .plan import FieldTexts

if TYPE_CHECKING:
    from ..config import IndexConfig
    from ..index.state import IndexState
    from .retrievers import DenseRetriever

__all__ = ["NULL_TEXTS", "dense_evidence", "floor_record", "floor_settings", "hit_evidence", "null_floor",
           "null_texts", "saved_floors"]

#: How many random strings set a field's null floor (false-match rate ~1/(n+1) per field).
NULL_TEXTS = 200


def null_texts(n: int = NULL_TEXTS, seed: int = 0) -> list[str]:
    """``n`` random strings of 8-30 lower-case letters and spaces (not blank)."""
    if n == NULL_TEXTS and seed == 0:  # the floors' strings: stored, no numpy.random import
        from .null_strings import DEFAULT_NULL_TEXTS

        return list(DEFAULT_NULL_TEXTS)
    return _generate(n, seed)


def _generate(n: int, seed: int) -> list[str]:
    """:func:`null_texts` made from the seed (what :mod:`.null_strings` stores)."""
    rng = np.random.default_rng(seed)
    alphabet = np.array(list("abcdefghijklmnopqrstuvwxyz "))
    out = []
    for length in rng.integers(8, 31, size=n):
        text = "".join(rng.choice(alphabet, size=int(length))).strip()
        out.append(text or "x")
    return out


def null_floor(retriever: DenseRetriever, st: IndexState, config: IndexConfig) -> float:
    """The best cosine the null strings reach on ``retriever``'s tools (a tool scores as
    its best document): the field's null floor. :func:`toolsift.search.retrievers` has
    each dense half compute it on first use (``DenseRetriever.null_floor``)."""
    from .plan import _embed  # the search's own query embedding

    texts = null_texts()
    field = next(iter(st.dense))
    vecs, codes = _embed(st, config, {f: texts if f == field else [] for f in FIELDS})
    n = len(texts)
    ptr = np.arange(n + 1, dtype=np.int64)
    ft = FieldTexts(texts, ptr, TermBatch(np.zeros(0, np.int32), np.zeros(n + 1, np.int64)),
                    vecs[field], codes[field])
    c_ptr, ids = retriever.candidates(ft, 1)
    sims = retriever.gather(ft, c_ptr, ids, docs=False) if ids.size else np.zeros(0, np.float32)
    return float(sims.max()) if sims.size else 0.0


def floor_settings(config: IndexConfig) -> dict[str, Any]:
    """What a field's null floor depends on besides the index's own vectors and query
    table: the query encoder, the IVF lists probed (:func:`null_floor` takes each null
    string's best candidate the way a search finds it) and the toolsift version (whose
    shipped static table embeds the strings). JSON values, as a saved index records them."""
    return {"toolsift": __version__, "query_encoder": config.query_encoder, "encoder": config.encoder,
            "static_table": config.static_table, "ivf_nprobe": config.ivf_nprobe}


def saved_floors(st: IndexState, config: IndexConfig) -> dict[str, float]:
    """The null floors (field -> floor) ``st``'s saved index recorded for ``config``'s
    :func:`floor_settings`; empty when it recorded none (an index saved before floors were
    saved, an updated or re-encoded state) or recorded them for other settings."""
    rec = getattr(st, "null_floors", None)
    return rec["fields"] if rec is not None and rec["settings"] == floor_settings(config) else {}


def floor_record(st: IndexState, config: IndexConfig) -> dict[str, Any] | None:
    """``{"settings": floor_settings(config), "fields": {field: floor}}`` for every dense
    field of ``st`` (each made now unless a search or the load already has it), what a
    save records; ``None`` for an index without dense fields."""
    if not st.dense:
        return None
    from . import retrievers  # the floors the searches use, made by the same retrievers
    from .retrievers import dense_half

    halves = {f: dense_half(r) for f, r in retrievers(st, config).items()}
    return {"settings": floor_settings(config),
            "fields": {f: float(h.null_floor) for f, h in halves.items() if h is not None}}


def dense_evidence(retriever: DenseRetriever, ft: FieldTexts, ptr: np.ndarray, ids: np.ndarray, floor: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The candidates ``(ptr, ids)`` (CSR by query) of a dense half whose cosine for some
    text of their query beats ``floor``, as CSR ``(ptr, ids)``."""
    nq = ptr.size - 1
    if not ids.size:
        return ptr, ids
    sims = retriever.gather(ft, ptr, ids, docs=False)
    counts = np.diff(ptr)[ft.owner]
    keep = np.zeros(ids.size, dtype=bool)
    # sims is text-major: text i holds one entry per candidate of its query.
    np.logical_or.at(keep, ranges(ptr[ft.owner], counts), sims > floor)
    new_ptr = np.zeros(nq + 1, np.int64)
    np.cumsum(np.bincount(row_of(ptr)[keep], minlength=nq), out=new_ptr[1:])
    return new_ptr, ids[keep]


def hit_evidence(found: np.ndarray, lexical: np.ndarray, cos: np.ndarray,
                 halves: list[DenseRetriever | None]) -> list[bool]:
    """``Hit.matched`` of hits scored in one engine call (:mod:`.fused_hybrid`), by the
    rule :func:`dense_evidence` applies to every candidate of the general path: a hit is
    matched when it was found (not added to fill ``k``) and a BM25 field had it as a
    candidate, or a dense half added it with a cosine above that field's null floor.

    ``found``, ``lexical``: ``bool[hits]``; ``cos``: ``float32[hits, len(halves)]``, each
    field's cosine of the hit where that field's dense half added it, else NaN;
    ``halves``: each field's dense retriever (``None`` for a BM25 field). A floor is only
    looked at (and made, on first use) when a hit found by a dense half alone needs it.
    Plain Python over the few hits of a search: NumPy's per-call cost is larger here."""
    out = found.tolist()
    lex = lexical.tolist()
    rows = None
    floors: list[float | None] = [None] * len(halves)
    for i, (f, x) in enumerate(zip(out, lex)):
        if not f or x:
            continue
        if rows is None:
            rows = cos.tolist()
        hit = False
        for j, c in enumerate(rows[i]):
            # NaN: not that field's candidate. A floor is a float32 value: float64 compares alike.
            if c != c or halves[j] is None:
                continue
            floor = floors[j]
            if floor is None:
                floor = floors[j] = halves[j].null_floor  # type: ignore[union-attr]
            if c > floor:
                hit = True
                break
        out[i] = hit
    return out
