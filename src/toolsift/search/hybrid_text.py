"""One raw-text request on a hybrid index in one engine call.

:mod:`.fused_hybrid` already scores a one-step request in one engine call, but the
request's analysis, its static query vector, its int8 codes and each need field's dense
candidates were made in Python around it: on a small catalogue that glue was most of the
search (docs/results/hybrid-text-2026-11-28.md). ``_core.HybridText``
(cpp/include/toolsift/hybrid_text.h) does all of it in C++: the BM25 words (taught once
per word by this analyzer and vocabulary, as :mod:`.fused` teaches ``FusedText``), the
WordPiece ids (a C++ twin of :class:`~toolsift.encoders.wordpiece.FastWordPiece`), the
token table's rows summed and quantized (the same C++ functions the static encoder
calls), each need field's exact top-n scan (with its 4-bit prefilter) and
``FusedSearcher``'s hybrid search. The binding applies the null-floor rule to the hits'
evidence (:func:`.evidence.hit_evidence`'s rule) and makes the Hit objects
(python/hit_maker.h, as for BM25 fields); an explanation's reasons take the arrays.

The answer is :func:`.fused_hybrid.run_hybrid`'s for one raw query, bit for bit
(tests/test_hybrid_text.py: every query of the five benchmark sets). A request that splits
into steps is one call too (:meth:`TextSearch.steps`, ``HybridText.search_steps``,
cpp/src/hybrid_steps.cpp): every reading's vector, each need field's dense candidates for
all readings in one scan, BM25 once, each reading's MFTR scores and the combination over
readings, :func:`.needs.run_steps`' answer bit for bit (tests/test_needs_engine.py). A
text outside the engine's analysers (not ASCII, control characters, added tokens) is
analysed in Python (its BM25 term ids, tokenizers' WordPiece ids) and searched by the
same call (``HybridText.search_ids``). Dense fields probed through an IVF, a transformer
query encoder and anything :func:`.fused_hybrid.usable` turns away take the Python path.
"""

from __future__ import annotations

import numpy as np

from .. import _core
from ..config import IndexConfig
from ..encoders.static import StaticEncoder
from ..index.dense_field import COARSE_AFTER_SCANS, PREFILTER
from ..index.query_table import query_encoder_for
from ..index.state import IndexState
from ..cpus import available_cpus
from ..kernels.launch import SERIAL_WORK
from .evidence import hit_evidence
from .fused import _NEED_FIELDS, _params_tuple, hit_args, searcher, teach, term_ids
from .fused_hybrid import usable
from .hits import Hit, _plain_hit, reasons_of
from .retrievers import HybridRetriever, dense_half

__all__ = ["TextSearch", "text_searcher"]

_KEY = ("hybrid-text",)
#: Whether the loaded core has the one-call path (an older core takes the Python path).
_ENGINE = hasattr(_core, "HybridText")


def text_searcher(st: IndexState, config: IndexConfig, fr: dict) -> TextSearch | None:
    """``search(text, k) -> hits | None`` for one-step raw requests on ``st`` with
    ``config`` (``None`` from it: this text takes the Python path), or ``None`` when the
    index does not take this path at all. Made once per state and configuration."""
    got = st.retrievers.get(_KEY)
    if got is None or got[0] is not config:
        got = (config, _make(st, config, fr) if _ENGINE else None)
        st.retrievers[_KEY] = got  # same value if two first searches race
    return got[1]


def _make(st: IndexState, config: IndexConfig, fr: dict) -> TextSearch | None:
    if not st.dense or not usable(st, fr, False):
        return None
    enc = query_encoder_for(st, config)
    if type(enc) is not StaticEncoder or enc.wordpiece is None:
        return None
    need = []
    max_rows = 0
    for f in _NEED_FIELDS:
        spec = _need_spec(fr[f])
        need.append(spec)
        if isinstance(spec, tuple) and spec[6] is not None:
            max_rows = max(max_rows, spec[6].shape[0])
    codes, mult = enc.merged_rows()
    vocab, unk, prefix, max_chars, added = enc.wordpiece.engine_args()
    # A scan big enough to split over threads (kernels.launch's rule) gets the index's threads.
    threads = 1 if max_rows * codes.shape[1] // 1000 < SERIAL_WORK else (config.threads or available_cpus())
    engine = _core.HybridText(searcher(st), vocab, unk, prefix, max_chars, list(added), codes, mult,
                              enc.max_tokens, need, _params_tuple(config.params), config.candidates, config.scale,
                              config.no_argument_params == "intent", config.analyzer.lowercase, threads)
    engine.set_hits(*hit_args(st))
    # The need fields whose top-n (one row per tool) takes the 4-bit prefilter: an IVF field's
    # probe from the first search, as IvfIndex.probe_top does (without it a probe reads every
    # probed row in int8: at 1M tools 64 lists of ~1,000 rows, 24 MB a query); a scan once it
    # pays (DenseField._scan_coarse's rule, counted by TextSearch._count).
    prefiltered = [(i, fr[f].dense.dn) for i, (f, spec) in enumerate(zip(_NEED_FIELDS, need))
                   if PREFILTER and isinstance(spec, tuple) and spec[6] is not None and spec[10] is None and spec[5]]
    for i, dn in prefiltered:
        if dn.ivf is not None and (coarse := dn.ivf.coarse()) is not None:
            engine.set_coarse(i, coarse)
    scanned = [(i, dn) for i, dn in prefiltered if dn.ivf is None]
    return TextSearch(engine, st, config, [dense_half(fr[f]) for f in _NEED_FIELDS], scanned, enc.token_ids)


class TextSearch:
    """One index state's one-call search: ``search(text, k)`` gives the hits, or ``None``
    when the text takes the Python path. ``engine`` is the ``_core.HybridText``."""

    __slots__ = ("engine", "_catalog", "_params", "_tokenize", "_ids", "_token_ids", "_halves", "_scanned",
                 "_searches")

    def __init__(self, engine, st: IndexState, config: IndexConfig, halves: list, scanned: list,
                 token_ids) -> None:
        self.engine = engine
        self._catalog = st.catalog
        self._params = config.params  # the engine scores raw text with them
        self._tokenize, self._ids = config.analyzer.tokenize, st.vocab.lookup
        self._token_ids = token_ids  # the query encoder's StaticEncoder.token_ids
        self._halves = halves
        self._scanned = scanned
        self._searches = 0

    def __call__(self, text: str, k: int) -> list[Hit] | None:
        got = self._made(self.engine.search_hits, text, k)
        return got if got is not None else self._made(self._ids_hits, [text], k)

    def steps(self, readings: list[str], k: int) -> list[Hit] | None:
        """The hits of a raw request that splits into steps, given its readings (the whole
        request, then each step: :func:`.needs.readings_of`), as :func:`.needs.run_steps`
        gives them, bit for bit; ``None`` when the engine does not take them."""
        got = self._made(self.engine.steps_hits, readings, k)
        return got if got is not None else self._made(self._ids_hits, readings, k)

    def why(self, text: str, k: int) -> list[Hit] | None:
        """:meth:`__call__`'s hits with their reasons (``explain="why"``), from the MFTR
        terms the engine returns for its ``k`` hits (:func:`.hits.reasons_of`)."""
        got = self._hits(self._search_terms, text, k)
        return got if got is not None else self._hits(self._ids_terms, [text], k)

    def steps_why(self, readings: list[str], k: int) -> list[Hit] | None:
        """:meth:`steps`' hits with their reasons, each from the MFTR terms of the reading
        its combined score came from (as :func:`.needs.run_steps` explains them)."""
        got = self._hits(self._steps_terms, readings, k)
        return got if got is not None else self._hits(self._ids_terms, readings, k)

    def _search_terms(self, text: str, k: int):
        return self.engine.search_text(text, k, True)

    def _steps_terms(self, readings: list[str], k: int):
        return self.engine.search_steps(readings, k, True)

    # A request the engine's analysers do not take (not ASCII, or outside WordPiece's fast
    # path) is analysed here, as the Python path analyses it (the analyzer and vocabulary's
    # BM25 term ids of the whole request, tokenizers' WordPiece ids of each reading), and
    # searched by the same engine call.
    def _analysed(self, readings: list[str]) -> tuple[list[int], list[list[int]]]:
        return term_ids(readings[0], self._tokenize, self._ids), self._token_ids(readings)

    def _ids_hits(self, readings: list[str], k: int):
        return self.engine.ids_hits(*self._analysed(readings), k)

    def _ids_terms(self, readings: list[str], k: int):
        return self.engine.search_ids(*self._analysed(readings), k, True)

    def _made(self, call, arg, k: int) -> list[Hit] | None:
        """``call(arg, k)``'s hits, made by the engine (its ``search_hits`` and
        ``steps_hits``: the Hit objects and their ``matched`` by :func:`.evidence.hit_evidence`'s
        rule, in C++), or ``None`` when the text takes the Python path."""
        engine = self.engine
        got = call(arg, k)
        while type(got) is not list:
            if got is None:
                return None
            if type(got) is tuple:  # words the engine has not met
                teach(engine, got, self._tokenize, self._ids)
            else:  # a need field's null floor, made on first use as hit_evidence makes it
                engine.set_floor(got, float(self._halves[got].null_floor))
            got = call(arg, k)
        if self._scanned:
            self._count()
        return got

    def _hits(self, call, arg, k: int) -> list[Hit] | None:
        engine = self.engine
        got = call(arg, k)
        while type(got) is list:  # words the engine has not met
            teach(engine, got, self._tokenize, self._ids)
            got = call(arg, k)
        if got is None:
            return None
        if self._scanned:
            self._count()
        tool, score, found, lexical, cos, *terms = got
        found = hit_evidence(found, lexical, cos, self._halves)
        catalog = self._catalog
        if terms:
            return reasons_of(catalog, tool, score, found, terms[0], self._params)
        return [_plain_hit(catalog[t], s, r + 1, m, None)
                for r, (t, s, m) in enumerate(zip(tool.tolist(), score.tolist(), found))]

    def _count(self) -> None:
        # A field's prefilter costs a few ms to build and saves ~0.1 ms a scan: it is
        # built after COARSE_AFTER_SCANS searches, as the Python path's scans do.
        # Concurrent searches may miscount a few: harmless (same hits either way).
        self._searches += 1
        if self._searches == COARSE_AFTER_SCANS:
            for i, dn in self._scanned:
                coarse = dn.coarse()
                if coarse is not None:
                    self.engine.set_coarse(i, coarse)
            self._scanned = []


def _need_spec(r) -> tuple | None:
    """A need field as ``_core.HybridText`` takes it: ``None`` for a BM25 field, the
    13-tuple of python/bind_hybrid_text.cpp for a hybrid one."""
    if type(r) is not HybridRetriever:
        return None
    # HybridRetriever.mix's float32 weights, as fused_hybrid._dense_spec passes them.
    w_bm, w_cos = float(np.float32(r.weight)), float(np.float32(1.0 - r.weight))
    if r.dense_empty:
        return (None, None, None, w_bm, w_cos, False, None, None, None, None, None, 0, None)
    d = r.dense
    dn = d.dn
    ivf = None
    if dn.ivf is not None and d.adds_candidates:
        # Candidates from the probed lists, as DenseField.top_tools_ivf finds them.
        v = dn.ivf
        ivf = (v.cent_codes, v.cent_scales, v.list_ptr, v.list_ids, v.probes_for(d.nprobe))
    live, m = dn.live_rows()
    # No prefilter here: _make gives it (an IVF's at once, a scan's after COARSE_AFTER_SCANS).
    return (dn.matrix.codes, dn.matrix.scales, _frozen(d.tool_ptr), w_bm, w_cos, d.adds_candidates, m.codes,
            m.scales, live, None, _frozen(dn.groups), r.dense_depth, ivf)


def _frozen(a: np.ndarray | None) -> np.ndarray | None:
    """``a`` read-only (a read-only copy when it is writable: the engine keeps it)."""
    if a is None or not a.flags.writeable:
        return a
    out = a.copy()
    out.flags.writeable = False
    return out
