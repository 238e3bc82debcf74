"""Index and search configuration.

Everything that changes what an index contains or how it scores lives in
:class:`IndexConfig`, which is stored in the index manifest so a loaded index scores
exactly as the one that was saved. Per-field retriever choice is a mapping so dense and
hybrid retrievers slot in later without changing the shape of the config.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .analyze import Analyzer
from .errors import ConfigError
from .kernels.params import DEFAULT_PARAMS, ScoringParams
from .schema import FIELDS

__all__ = ["Bm25Config", "IndexConfig", "SCALES", "RETRIEVERS"]

#: ``bounded``: ``1 - exp(-BM25 / ref)`` with ``ref`` the score of an average-length
#: document holding each query term once (``sum idf / (1 + k1)``): rank-preserving, in
#: [0, 1) on every catalogue, a typical full match near 0.63 (see docs/scoring.md).
#: ``linear``: ``BM25 / sum idf`` (the supremum), in [0, 1) and linear.
#: ``raw``: plain BM25, the scale the MFTR paper used.
SCALES = ("bounded", "linear", "raw")

#: Retrievers per field: BM25, dense (ONNX sentence encoder, int8 matrices), or a convex
#: combination of the two on the bounded scale.
RETRIEVERS = ("bm25", "dense", "hybrid")


@dataclass(frozen=True)
class Bm25Config:
    """BM25 parameters (bm25s's defaults; ``method="lucene"`` is its default variant)."""

    k1: float = 1.5
    b: float = 0.75
    method: Literal["lucene", "atire"] = "lucene"

    def __post_init__(self) -> None:
        if not isinstance(self.k1, (int, float)) or not math.isfinite(self.k1) or self.k1 < 0:
            raise ConfigError(f"bm25.k1 must be a finite number >= 0, got {self.k1!r}")
        if not isinstance(self.b, (int, float)) or not 0.0 <= self.b <= 1.0:
            raise ConfigError(f"bm25.b must be in [0, 1], got {self.b!r}")
        if self.method not in ("lucene", "atire"):
            raise ConfigError(f"bm25.method must be 'lucene' or 'atire', got {self.method!r}")


@dataclass(frozen=True)
class IndexConfig:
    """How an index is built and how it scores.

    Attributes:
        bm25: BM25 parameters shared by the four fields.
        analyzer: The text analyzer used for documents and queries alike.
        scale: ``"bounded"`` (default), ``"linear"`` or ``"raw"``; see :data:`SCALES`.
        candidates: Top-N tools taken from each field's BM25 ranking; their union is
            scored with the full MFTR model.
        name_in_description: Index the tool name, split into words
            (``send_email`` -> ``send email``), with its description.
        split_identifiers: Split snake_case / camelCase parameter and argument names
            into words (``start_time`` -> ``start time``); the tokenizer keeps ``_``
            inside words, so otherwise ``start_time`` never matches ``start``.
        parameter_format: ``"text"`` indexes each parameter as ``"name (type):
            description"``; ``"json"`` as its JSON object (the MFTR reference's format).
        no_argument_params: What the parameter field sees when a query has no extracted
            arguments: ``"intent"`` uses each need's user intent (so a plain-text query
            still matches parameter documentation; the penalty stays off), ``"zero"``
            scores it 0 (as the MFTR reference implementation does).
        penalize_without_arguments: Apply the missing-parameter penalty to structured
            queries that extracted no arguments (every parameter unmatched), as the MFTR
            reference implementation does. Off by default: no arguments, no penalty.
        retrievers: Retriever per field: ``"bm25"``, ``"dense"`` (cosine of sentence
            embeddings) or ``"hybrid"`` (``hybrid_weight``·BM25 + (1 − ``hybrid_weight``)·
            cosine, on the bounded or linear scale).
        encoder: Directory holding ``model.onnx`` + ``tokenizer.json`` for dense fields;
            ``None`` uses the default all-MiniLM-L6-v2 from the installed model package.
        hybrid_weight: Share of BM25 in a hybrid field, in [0, 1].
        params: Field weights, bias and penalty parameters.
        threads: The one thread setting, for every pool: the C++ engine, the Numba
            kernels and onnxruntime (intra-op) (0 = all cores). Work too small to pay
            for threads (a single query's candidates) runs serially whatever the
            setting, so a search stays fast on a busy machine; raise it for large
            batches, builds and evaluation.
    """

    bm25: Bm25Config = field(default_factory=Bm25Config)
    analyzer: Analyzer = field(default_factory=Analyzer)
    scale: Literal["bounded", "linear", "raw"] = "bounded"
    candidates: int = 100
    name_in_description: bool = True
    split_identifiers: bool = True
    parameter_format: Literal["text", "json"] = "text"
    no_argument_params: Literal["intent", "zero"] = "intent"
    penalize_without_arguments: bool = False
    encoder: str | None = None
    hybrid_weight: float = 0.5
    retrievers: tuple[tuple[str, str], ...] = tuple((f, "bm25") for f in FIELDS)
    params: ScoringParams = DEFAULT_PARAMS
    threads: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.retrievers, dict):
            object.__setattr__(self, "retrievers", tuple(self.retrievers.items()))
        if not isinstance(self.bm25, Bm25Config):
            raise ConfigError("config.bm25 must be a Bm25Config")
        if not isinstance(self.analyzer, Analyzer):
            raise ConfigError("config.analyzer must be an Analyzer")
        if self.scale not in SCALES:
            raise ConfigError(f"config.scale must be one of {SCALES}, got {self.scale!r}")
        if not isinstance(self.candidates, int) or isinstance(self.candidates, bool) or self.candidates < 1:
            raise ConfigError(f"config.candidates must be an integer >= 1, got {self.candidates!r}")
        for flag in ("name_in_description", "split_identifiers", "penalize_without_arguments"):
            if not isinstance(getattr(self, flag), bool):
                raise ConfigError(f"config.{flag} must be a bool, got {getattr(self, flag)!r}")
        if self.parameter_format not in ("text", "json"):
            raise ConfigError(f"config.parameter_format must be 'text' or 'json', got {self.parameter_format!r}")
        if self.no_argument_params not in ("intent", "zero"):
            raise ConfigError(
                f"config.no_argument_params must be 'intent' or 'zero', got {self.no_argument_params!r}"
            )
        if not isinstance(self.threads, int) or isinstance(self.threads, bool) or self.threads < 0:
            raise ConfigError(f"config.threads must be an integer >= 0, got {self.threads!r}")
        if not isinstance(self.params, ScoringParams):
            raise ConfigError("config.params must be a ScoringParams")
        r = dict(self.retrievers)
        for f, kind in r.items():
            if f not in FIELDS:
                raise ConfigError(f"config.retrievers: unknown field {f!r} (fields: {', '.join(FIELDS)})")
            if kind not in RETRIEVERS:
                raise ConfigError(
                    f"config.retrievers[{f!r}]: retriever {kind!r} is not available "
                    f"(available: {', '.join(RETRIEVERS)})"
                )
        if self.encoder is not None and not isinstance(self.encoder, str):
            raise ConfigError(f"config.encoder must be a path or None, got {self.encoder!r}")
        hw = self.hybrid_weight
        if isinstance(hw, bool) or not isinstance(hw, (int, float)) or not 0.0 <= hw <= 1.0:
            raise ConfigError(f"config.hybrid_weight must be a number in [0, 1], got {hw!r}")
        if "hybrid" in r.values() and self.scale == "raw":
            raise ConfigError("config.retrievers: a hybrid field needs scale 'bounded' or 'linear' "
                              "(raw BM25 and cosine are on different scales)")
        missing = [f for f in FIELDS if f not in r]
        if missing:
            raise ConfigError(f"config.retrievers: no retriever for field(s) {', '.join(missing)}")

    @classmethod
    def reference(cls, **overrides: Any) -> IndexConfig:
        """The MFTR reference implementation's setup: raw BM25 scale, description without
        the tool name, parameters as JSON, no identifier splitting, parameter field 0 for
        queries without arguments, and those queries still penalised. Used to reproduce the
        paper's numbers."""
        base = dict(scale="raw", name_in_description=False, split_identifiers=False,
                    parameter_format="json", no_argument_params="zero", penalize_without_arguments=True)
        base.update(overrides)
        return cls(**base)

    def retriever(self, field: str) -> str:
        """The retriever of ``field``."""
        return dict(self.retrievers)[field]

    @property
    def uses_dense(self) -> bool:
        """Whether any field needs the sentence encoder."""
        return any(r != "bm25" for _, r in self.retrievers)

    def with_params(self, params: ScoringParams) -> IndexConfig:
        """A copy with other scoring parameters (e.g. learned ones)."""
        return replace(self, params=params)

    def to_dict(self) -> dict[str, Any]:
        """JSON form for the index manifest."""
        return {
            "bm25": {"k1": self.bm25.k1, "b": self.bm25.b, "method": self.bm25.method},
            "analyzer": self.analyzer.to_dict(),
            "scale": self.scale,
            "candidates": self.candidates,
            "name_in_description": self.name_in_description,
            "split_identifiers": self.split_identifiers,
            "parameter_format": self.parameter_format,
            "no_argument_params": self.no_argument_params,
            "penalize_without_arguments": self.penalize_without_arguments,
            "retrievers": dict(self.retrievers),
            "encoder": self.encoder,
            "hybrid_weight": self.hybrid_weight,
            "params": self.params.to_dict(),
            "threads": self.threads,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> IndexConfig:
        """Inverse of :meth:`to_dict`; raises :class:`ConfigError` on bad values."""
        if not isinstance(d, dict):
            raise ConfigError("config must be an object")
        known = {"bm25", "analyzer", "scale", "candidates", "name_in_description", "split_identifiers",
                 "parameter_format", "no_argument_params", "penalize_without_arguments", "retrievers", "encoder", "hybrid_weight", "params", "threads"}
        unknown = set(d) - known
        if unknown:
            raise ConfigError(f"config: unknown key(s) {', '.join(sorted(unknown))}")
        kw: dict[str, Any] = {}
        if "bm25" in d:
            kw["bm25"] = Bm25Config(**d["bm25"])
        if "analyzer" in d:
            kw["analyzer"] = Analyzer.from_dict(d["analyzer"])
        if "params" in d:
            kw["params"] = ScoringParams.from_dict(d["params"])
        if "retrievers" in d:
            kw["retrievers"] = tuple(dict(d["retrievers"]).items())
        for key in ("scale", "candidates", "name_in_description", "split_identifiers",
                    "parameter_format", "no_argument_params", "penalize_without_arguments", "threads",
                    "encoder", "hybrid_weight"):
            if key in d:
                kw[key] = d[key]
        return cls(**kw)
