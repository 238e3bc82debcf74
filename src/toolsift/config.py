"""Index and search configuration.

Everything that changes what an index contains or how it scores lives in
:class:`IndexConfig`, which is stored in the index manifest so a loaded index scores
exactly as the one that was saved. Per-field retriever choice is a mapping so dense and
hybrid retrievers slot in later without changing the shape of the config.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from .analyze import Analyzer
from .errors import ConfigError
from .kernels.params import (
    COLDSTART_INIT,
    DEFAULT_PARAMS,
    PAPER_PARAMS,
    ScoringParams,
    structured_twin,
)
from .schema import FIELDS

__all__ = ["validation_message", "UntrainedPenaltyWarning", "warn_untrained_penalty", "Bm25Config", "IndexConfig", "SCALES", "RETRIEVERS", "COLDSTART_ANALYZER", "COLDSTART_BM25"]

#: ``bounded``: ``1 - exp(-BM25 / ref)`` with ``ref`` the score of an average-length
#: document holding each query term once (``sum idf / (1 + k1)``): rank-preserving, in
#: [0, 1) on every catalogue, a typical full match near 0.63 (see docs/scoring.md).
#: ``linear``: ``BM25 / sum idf`` (the supremum), in [0, 1) and linear.
#: ``raw``: plain BM25, the scale the MFTR paper used.
SCALES = ("bounded", "linear", "raw")

#: Retrievers per field: BM25, dense (ONNX sentence encoder, int8 matrices), or a convex
#: combination of the two on the bounded scale.
RETRIEVERS = ("bm25", "dense", "hybrid")


# Validation: one mechanism for every config class (toolsift.checking): types and limits
# declared on the fields, checked by pydantic; rules across fields in __post_init__.
from .checking import _CHECKING, Strict, trusted, validation_message  # noqa: E402  (re-exported)
from .checking import check_fields as _check_fields  # noqa: E402

if TYPE_CHECKING:
    from pydantic import InstanceOf
else:  # resolved when a validator is built: no pydantic at import (toolsift.checking)
    from .checking import InstanceOf


class UntrainedPenaltyWarning(UserWarning):
    """A query mode that is known to hurt rankings without trained weights was used."""


_warned = threading.Event()


def _untrained_penalty(params: ScoringParams) -> bool:
    if params.w_req == 0.0 and params.w_opt == 0.0:
        return False
    key = (params.tau, params.w_req, params.w_opt)
    return key in {(p.tau, p.w_req, p.w_opt) for p in (DEFAULT_PARAMS, PAPER_PARAMS, COLDSTART_INIT)}


def _caller_stacklevel() -> int:
    # The first frame outside the toolsift package: the user's call site, however deep
    # the search path that reached us (search, search_batch, score_pairs, ...).
    import os
    import sys
    from types import FrameType

    pkg = os.path.dirname(os.path.abspath(__file__))
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(pkg):
        frame, level = frame.f_back, level + 1
    return level


def warn_untrained_penalty(params: ScoringParams) -> None:
    """Warn once per process that the missing-argument penalty runs on untrained values.

    Structured queries with extracted arguments (or ``penalize_without_arguments``) turn
    on the sigmoid missing-parameter penalty. The paper's untrained values (``tau .5``,
    ``w_req .1``, ``w_opt 0``) were never fitted, and with them rule-decomposed queries
    rank clearly worse on the shared benchmarks (ToolLink N@10 .366 vs .465 without the
    penalty, Gorilla .178 vs .241; docs/coldstart.md). The shipped default weights turn
    the penalty off for that reason; this fires when parameters carrying the untrained
    values are used. Train weights on labelled queries (``toolsift train``) or set
    ``w_req = w_opt = 0`` to silence it.
    """
    if _warned.is_set() or not _untrained_penalty(params):
        return
    _warned.set()
    warnings.warn(
        "toolsift: the missing-argument penalty is applied with untrained default parameters "
        f"(tau={params.tau}, w_req={params.w_req}, w_opt={params.w_opt}); queries with extracted "
        "arguments are known to rank worse this way than as plain text. Train weights on labelled "
        "queries, or use ScoringParams(w_req=0, w_opt=0). See docs/coldstart.md.",
        UntrainedPenaltyWarning, stacklevel=_caller_stacklevel())


@dataclass(frozen=True)
class Bm25Config:
    """BM25 parameters (bm25s's defaults; ``method="lucene"`` is its default variant)."""

    k1: Annotated[float, Strict(ge=0, allow_inf_nan=False)] = 1.5
    b: Annotated[float, Strict(ge=0, le=1)] = 0.75
    method: Literal["lucene", "atire"] = "lucene"

    def __post_init__(self) -> None:
        _check_fields(self, "bm25")


#: The default analyzer of a new index, chosen by the cold-start ablation
#: (docs/coldstart.md): NLTK's 179 English stop words, Snowball English stemming, accents
#: folded. ``Analyzer()`` itself keeps bm25s's tokenizer (the MFTR reproduction's).
#: Module constants are made under trusted() (no pydantic at import); the tests check them.
with trusted():
    COLDSTART_ANALYZER = Analyzer(stopwords="nltk", stemmer="english", fold_accents=True)

    #: The default BM25 parameters of a new index (docs/coldstart.md).
    COLDSTART_BM25 = Bm25Config(k1=1.2, b=0.4)


@dataclass(frozen=True)
class IndexConfig:
    """How an index is built and how it scores.

    Attributes:
        bm25: BM25 parameters shared by the four fields (default :data:`COLDSTART_BM25`).
        analyzer: The text analyzer used for documents and queries alike (default
            :data:`COLDSTART_ANALYZER`).
        scale: ``"bounded"`` (default), ``"linear"`` or ``"raw"``; see :data:`SCALES`.
        candidates: Top-N tools taken from each field's BM25 ranking; their union is
            scored with the full MFTR model.
        dense_candidates: Top-N tools (at least ``k``) taken from each hybrid field's
            cosine ranking, beside its BM25 top-``candidates``. Fewer than BM25's: every
            tool has a cosine, and past the first few it adds tools that do not reach
            the top-k, while each extra candidate is scored in every field. 10: at
            k = 10 the dense half nominates exactly what it alone would return (10 vs 30
            at k = 10 left N@10 unchanged on four shared sets, the pooled and the stress
            set, +.0017 on APIBank; docs/dense.md, "Dense candidates").
        dense_candidates_from: The fields whose dense halves (hybrid or dense
            retrievers) add their top ``dense_candidates`` tools to the candidates; every
            dense half still scores every candidate. Default: all fields. The ``hybrid``
            preset leaves out ``response``: its weight (.12-.20 in the shipped hybrid
            weights) cannot lift a tool only its cosine found into the top hits (N@10
            unchanged to four digits on all five shared sets), and its scan was a seventh
            of a hybrid query (docs/dense.md, "Dense candidates").
        name_in_description: Index the tool name, split into words
            (``send_email`` -> ``send email``), with its description.
        tool_card: 0 indexes the description field as the description (with the split
            name, see ``name_in_description``). n > 0 indexes a flat card instead: the tool
            name whole and split, repeated n times (a name boost by term frequency), the
            description, then every parameter's name (whole and split) and description.
            The parameters field is unchanged. 2 ranks best cold (docs/coldstart.md).
        split_identifiers: Split snake_case / camelCase parameter and argument names
            into words (``start_time`` -> ``start time``); the tokenizer keeps ``_``
            inside words, so otherwise ``start_time`` never matches ``start``.
        parameter_format: ``"text"`` indexes each parameter as ``"name (type):
            description"``; ``"json"`` as its JSON object (the MFTR reference's format).
        no_argument_params: What the parameter field sees when a query has no extracted
            arguments: ``"intent"`` uses each need's user intent (so a plain-text query
            still matches parameter documentation; the penalty stays off), ``"zero"``
            scores it 0 (as the MFTR reference implementation does).
        intent_in_description: A structured need's user intent also queries the
            description field, beside its tool description (a raw query's one text is
            not repeated). The intent is the request in the user's own words, which is
            what a raw query matches the description with; alone it would match only
            example intents, which raw tools lack. Off: the description field sees the
            tool description alone, as the MFTR reference does (docs/scoring.md).
        request_in_description: A structured query's original request (``Query.text``,
            the wire form's ``request``), when it has one, also queries the description
            field with every need. An LLM's rewrite paraphrases and can drop the very
            words a tool's description shares with the request; keeping the original
            beside the expansion is the usual remedy (docs/scoring.md). Off: only the
            needs' own texts.
        split_steps: A raw request that splits into several steps
            (:func:`toolsift.decompose.split_steps`) searches the dense halves of dense
            and hybrid fields with one vector per step and gives every step its share of
            the ranking (:mod:`toolsift.search.needs`, docs/dense.md "Multi-step
            requests"); BM25 still sees the whole request. No effect on BM25-only indexes,
            structured queries or requests of one step.
        penalize_without_arguments: Apply the missing-parameter penalty to structured
            queries that extracted no arguments (every parameter unmatched), as the MFTR
            reference implementation does. Off by default: no arguments, no penalty.
        retrievers: Retriever per field: ``"bm25"``, ``"dense"`` (cosine of sentence
            embeddings) or ``"hybrid"`` (``hybrid_weight``·BM25 + (1 − ``hybrid_weight``)·
            cosine, on the bounded or linear scale).
        encoder: The document encoder of dense fields: a directory holding ``model.onnx`` +
            ``tokenizer.json``; ``None`` uses the default all-MiniLM-L6-v2 from the
            installed model package; ``"static"`` the static token table (no transformer:
            for catalogues too large to encode, at a loss of quality; docs/dense.md).
        query_encoder: How queries of dense fields are embedded: ``"static"`` (default)
            with the token table fitted into the document encoder's vector space (tens of
            microseconds, no transformer pass; docs/dense.md), ``"transformer"`` with the
            document encoder itself (milliseconds per query, slightly better vectors).
        static_table: The static encoder's table (``.npz``); ``None`` is the shipped table
            fitted for the default all-MiniLM-L6-v2. A custom ``encoder`` with a static
            query encoder needs a table fitted for it (scripts/fit_static_encoder.py).
        hybrid_weight: Share of BM25 in a hybrid field, in [0, 1].
        ivf_min_docs: A dense or hybrid field with at least this many documents that
            adds candidates gets an IVF index at build time (:mod:`toolsift.index.ivf`):
            its candidates come from the ``ivf_nprobe`` nearest lists instead of a scan
            of every document. Smaller fields are scanned exactly. Candidates are
            rescored exactly either way. 1,000: below it the scan costs under ~10 µs a
            query; above it the probe changed no N@10 on the shared sets (docs/dense.md,
            "IVF from a thousand documents"). Raise it to keep exact dense candidates.
        ivf_nprobe: IVF lists probed per query text (more: higher recall, slower).
            ``None`` (the default): one list in eight, at most 64 (about sqrt(n)
            lists of sqrt(n) rows: an eighth of the rows up to ~260,000 listed rows,
            64 lists beyond; :meth:`IvfIndex.probes_for
            <toolsift.index.ivf.IvfIndex.probes_for>`).
        static_documents_from: A build of this many tools or more with the default
            transformer document encoder (``encoder=None``) embeds the documents with
            the static table instead (``encoder="static"`` in the built index's config,
            logged as a warning): a transformer pass costs ~23 CPU ms a tool, hours at
            1M tools. ``None``: never. Updates keep the encoder the index was built with.
        params: Field weights, bias, penalty and formula options; the default is the
            shipped cross-dataset weights (:data:`~toolsift.kernels.params.DEFAULT_PARAMS`).
            They score raw-text queries, and structured ones too unless
            ``structured_params`` (or a shipped twin) says otherwise.
        structured_params: Parameters for structured queries (tool needs and/or
            extracted arguments, anything not built from plain text). ``None``: the
            shipped structured weights that belong with ``params`` when ``params`` are
            shipped ones (:func:`~toolsift.kernels.params.structured_twin`, e.g.
            ``structured-default.json`` for the default), else ``params``. See
            :meth:`params_for`.
        threads: The one thread setting, for every pool: the C++ engine, the Numba
            kernels and onnxruntime (intra-op) (0 = all cores this process may use:
            its CPU affinity capped by its cgroup quota). Work too small to pay
            for threads (a single query's candidates) runs serially whatever the
            setting, so a search stays fast on a busy machine; raise it for large
            batches, builds and evaluation.
        embed_threads: Cores the transformer document encoder uses when a build, an
            update or a re-encoding load embeds tool texts (0, the default = all cores
            this process may use, as ``threads=0``; 1 = one thread). Queries are
            encoded on one thread whatever it is; ``threads`` governs everything else.
    """

    bm25: InstanceOf[Bm25Config] = field(default_factory=lambda: COLDSTART_BM25)
    analyzer: InstanceOf[Analyzer] = field(default_factory=lambda: COLDSTART_ANALYZER)
    scale: Literal["bounded", "linear", "raw"] = "bounded"
    candidates: Annotated[int, Strict(ge=1)] = 100
    dense_candidates: Annotated[int, Strict(ge=1)] = 10
    dense_candidates_from: tuple[Annotated[str, Strict()], ...] = FIELDS
    name_in_description: Annotated[bool, Strict()] = True
    tool_card: Annotated[int, Strict(ge=0, le=8)] = 2
    split_identifiers: Annotated[bool, Strict()] = True
    parameter_format: Literal["text", "json"] = "text"
    no_argument_params: Literal["intent", "zero"] = "intent"
    intent_in_description: Annotated[bool, Strict()] = True
    request_in_description: Annotated[bool, Strict()] = True
    split_steps: Annotated[bool, Strict()] = True
    penalize_without_arguments: Annotated[bool, Strict()] = False
    encoder: Annotated[str, Strict()] | None = None
    query_encoder: Literal["static", "transformer"] = "static"
    static_table: Annotated[str, Strict()] | None = None
    hybrid_weight: Annotated[float, Strict(ge=0, le=1)] = 0.5
    ivf_min_docs: Annotated[int, Strict(ge=1)] = 1_000
    ivf_nprobe: Annotated[int, Strict(ge=1)] | None = None
    static_documents_from: Annotated[int, Strict(ge=1)] | None = 20_000
    retrievers: tuple[tuple[Annotated[str, Strict()], Annotated[str, Strict()]], ...] = \
        tuple((f, "bm25") for f in FIELDS)
    params: InstanceOf[ScoringParams] = DEFAULT_PARAMS
    structured_params: InstanceOf[ScoringParams] | None = None
    threads: Annotated[int, Strict(ge=0)] = 1
    embed_threads: Annotated[int, Strict(ge=0)] = 0

    # pydantic's ConfigDict is a TypedDict: a plain dict is the same thing, without the import.
    __pydantic_config__: ClassVar[dict[str, Any]] = {"arbitrary_types_allowed": True}

    def __post_init__(self) -> None:
        if isinstance(self.retrievers, dict):
            object.__setattr__(self, "retrievers", tuple(self.retrievers.items()))
        if isinstance(self.dense_candidates_from, list):  # hashable: it keys the retriever cache
            object.__setattr__(self, "dense_candidates_from", tuple(self.dense_candidates_from))
        if _CHECKING.get():  # the copy pydantic builds while checking this one
            return
        _check_fields(self, "config")
        # Rules across fields and against the field names.
        r = dict(self.retrievers)
        for f, kind in r.items():
            if f not in FIELDS:
                raise ConfigError(f"config.retrievers: unknown field {f!r} (fields: {', '.join(FIELDS)})")
            if kind not in RETRIEVERS:
                raise ConfigError(
                    f"config.retrievers[{f!r}]: retriever {kind!r} is not available "
                    f"(available: {', '.join(RETRIEVERS)})"
                )
        if "hybrid" in r.values() and self.scale == "raw":
            raise ConfigError("config.retrievers: a hybrid field needs scale 'bounded' or 'linear' "
                              "(raw BM25 and cosine are on different scales)")
        for f in self.dense_candidates_from:
            if f not in FIELDS:
                raise ConfigError(f"config.dense_candidates_from: unknown field {f!r} (fields: {', '.join(FIELDS)})")
        if len(set(self.dense_candidates_from)) != len(self.dense_candidates_from):
            raise ConfigError("config.dense_candidates_from: a field is named twice")
        missing = [f for f in FIELDS if f not in r]
        if missing:
            raise ConfigError(f"config.retrievers: no retriever for field(s) {', '.join(missing)}")
        if (self.uses_dense and self.query_encoder == "static" and self.static_table is None
                and self.encoder not in (None, "static")):
            raise ConfigError("config.query_encoder: the shipped static table is fitted for the default "
                              "encoder; with encoder=DIR set query_encoder='transformer' or give "
                              "static_table= a table fitted for that model (scripts/fit_static_encoder.py)")

    @classmethod
    def reference(cls, **overrides: Any) -> IndexConfig:
        """The MFTR reference implementation's setup: bm25s's tokenizer and BM25 defaults,
        raw BM25 scale, description without the tool name, parameters as JSON, no
        identifier splitting, the description field queried by the tool description
        alone, parameter field 0 for queries without arguments, those
        queries still penalised, and the paper's formula (mean over parameters, fixed
        weights; queries of dense fields embedded by the document encoder). Used to
        reproduce the paper's numbers."""
        base: dict[str, Any] = dict(scale="raw", name_in_description=False, tool_card=0, split_identifiers=False,
                    parameter_format="json", no_argument_params="zero", intent_in_description=False,
                    request_in_description=False, penalize_without_arguments=True,
                    analyzer=Analyzer(), bm25=Bm25Config(), params=PAPER_PARAMS, query_encoder="transformer")
        base.update(overrides)
        return cls(**base)

    def retriever(self, field: str) -> str:
        """The retriever of ``field``."""
        return dict(self.retrievers)[field]

    @property
    def uses_dense(self) -> bool:
        """Whether any field needs the sentence encoder."""
        return any(r != "bm25" for _, r in self.retrievers)

    def with_params(self, params: ScoringParams, *,
                    structured: ScoringParams | None | Literal["keep"] = None) -> IndexConfig:
        """A copy with other scoring parameters (e.g. learned ones).

        Args:
            params: The new :attr:`params`.
            structured: ``None`` (default): resolved from ``params`` (see
                :attr:`structured_params`: parameters of your own then score every
                query); ``"keep"``: structured queries score as before (their resolved
                :attr:`structured_scoring` is pinned when ``params`` change; what usage
                learning does, whose weights are learned on raw intents); or the
                parameters for structured queries.
        """
        if isinstance(structured, str):
            if structured != "keep":
                raise ConfigError(f"with_params: structured must be 'keep', None or ScoringParams, got {structured!r}")
            structured = self.structured_params if params == self.params else self.structured_scoring
        return replace(self, params=params, structured_params=structured)

    @property
    def structured_scoring(self) -> ScoringParams:
        """The parameters structured queries are scored with (``structured_params``
        resolved)."""
        if self.structured_params is not None:
            return self.structured_params
        twin = structured_twin(self.params)
        return twin if twin is not None else self.params

    def params_for(self, structured: bool) -> ScoringParams:
        """The parameters of a query: :attr:`structured_scoring` for a structured one
        (``not toolsift.search.is_raw(query)``), :attr:`params` for raw text."""
        return self.structured_scoring if structured else self.params

    def to_dict(self) -> dict[str, Any]:
        """JSON form for the index manifest."""
        return {
            "bm25": {"k1": self.bm25.k1, "b": self.bm25.b, "method": self.bm25.method},
            "analyzer": self.analyzer.to_dict(),
            "scale": self.scale,
            "candidates": self.candidates,
            "dense_candidates": self.dense_candidates,
            "dense_candidates_from": list(self.dense_candidates_from),
            "name_in_description": self.name_in_description,
            "tool_card": self.tool_card,
            "split_identifiers": self.split_identifiers,
            "parameter_format": self.parameter_format,
            "no_argument_params": self.no_argument_params,
            "intent_in_description": self.intent_in_description,
            "request_in_description": self.request_in_description,
            "split_steps": self.split_steps,
            "penalize_without_arguments": self.penalize_without_arguments,
            "retrievers": dict(self.retrievers),
            "encoder": self.encoder,
            "query_encoder": self.query_encoder,
            "static_table": self.static_table,
            "hybrid_weight": self.hybrid_weight,
            "ivf_min_docs": self.ivf_min_docs,
            "ivf_nprobe": self.ivf_nprobe,
            "static_documents_from": self.static_documents_from,
            "params": self.params.to_dict(),
            "structured_params": None if self.structured_params is None else self.structured_params.to_dict(),
            "threads": self.threads,
            "embed_threads": self.embed_threads,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> IndexConfig:
        """Inverse of :meth:`to_dict`; raises :class:`ConfigError` on bad values. A missing
        ``tool_card`` means ``0``, a missing ``query_encoder`` ``"transformer"``, a missing
        ``dense_candidates`` the same depth as ``candidates``, a missing
        ``dense_candidates_from`` every field and a missing ``intent_in_description`` or
        ``request_in_description`` or ``split_steps`` ``False`` (manifests written before the options existed)."""
        if not isinstance(d, dict):
            raise ConfigError("config must be an object")
        known = {"bm25", "analyzer", "scale", "candidates", "dense_candidates", "dense_candidates_from",
                 "name_in_description", "tool_card", "split_identifiers",
                 "parameter_format", "no_argument_params", "intent_in_description", "request_in_description",
                 "split_steps", "penalize_without_arguments", "retrievers", "encoder",
                 "query_encoder", "static_table", "hybrid_weight", "ivf_min_docs", "ivf_nprobe", "params",
                 "structured_params", "threads", "embed_threads", "static_documents_from"}
        unknown = set(d) - known
        if unknown:
            raise ConfigError(f"config: unknown key(s) {', '.join(sorted(unknown))}")
        # Indexes saved before the tool card existed were built without it, and those saved
        # before the static query encoder embedded queries with the transformer.
        # Those saved before dense_candidates took the dense lists as deep as BM25's.
        # And before intent_in_description (request_in_description), the description field
        # saw the tool description alone.
        kw: dict[str, Any] = {"tool_card": 0, "query_encoder": "transformer", "intent_in_description": False,
                              "request_in_description": False, "split_steps": False,
                              "dense_candidates": d.get("candidates", 100)}
        if "bm25" in d:
            kw["bm25"] = Bm25Config(**d["bm25"])
        if "analyzer" in d:
            kw["analyzer"] = Analyzer.from_dict(d["analyzer"])
        if "params" in d:
            kw["params"] = ScoringParams.from_dict(d["params"])
        if d.get("structured_params") is not None:
            try:
                kw["structured_params"] = ScoringParams.from_dict(d["structured_params"])
            except ConfigError as exc:
                raise ConfigError(f"config.structured_params: {exc}") from None
        if "retrievers" in d:
            kw["retrievers"] = tuple(dict(d["retrievers"]).items())
        if "dense_candidates_from" in d:
            got = d["dense_candidates_from"]
            if not isinstance(got, list):
                raise ConfigError("config.dense_candidates_from: expected a list of field names")
            kw["dense_candidates_from"] = tuple(got)
        for key in ("scale", "candidates", "dense_candidates", "name_in_description", "tool_card", "split_identifiers",
                    "parameter_format", "no_argument_params", "intent_in_description", "request_in_description",
                    "split_steps", "penalize_without_arguments", "threads", "embed_threads",
                    "encoder", "query_encoder", "static_table", "hybrid_weight", "ivf_min_docs", "ivf_nprobe",
                    "static_documents_from"):
            if key in d:
                kw[key] = d[key]
        return cls(**kw)
