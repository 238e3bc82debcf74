"""MFTR scoring kernels: field maxima, parameter matching, penalty and weights.

The compiled scorer is :func:`score_candidates`; :func:`score_candidates_reference` is its
slow plain-NumPy twin: the test oracle, and the breakdown of an explained search's ``k``
hits (:mod:`toolsift.search.explain`). Importing this package compiles the kernels
for their fixed signatures, or loads them from Numba's on-disk cache.

Example:
    >>> from toolsift.kernels import score_candidates, DEFAULT_PARAMS
    >>> scores = score_candidates(cand_query, cand_tool, cand_need_off, cand_param_off,
    ...                           n_needs, n_args, penalize, need_sims, ap_sims,
    ...                           param_ptr, param_required, DEFAULT_PARAMS)  # doctest: +SKIP
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from ..cpus import available_cpus
from ..errors import ConfigError
from ..lazy import lazy_exports
from .params import DEFAULT_PARAMS, PAPER_PARAMS, WEIGHT_FIELDS, ScoringParams

if TYPE_CHECKING:
    from .mftr import BREAKDOWN_COLUMNS, score_candidates
    from .reference import score_candidates_reference

# Numba (and the SciPy it imports) costs ~0.5-1 s of CPU to import: the package loads it
# with the first compiled kernel, not with the weights. Everything that only reads
# ScoringParams (the config, a BM25 search through the fused engine call) never pays it.
_LAZY = {
    "BREAKDOWN_COLUMNS": ".mftr",
    "score_candidates": ".mftr",
    "score_candidates_reference": ".reference",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

__all__ = [
    "BREAKDOWN_COLUMNS",
    "DEFAULT_PARAMS",
    "PAPER_PARAMS",
    "WEIGHT_FIELDS",
    "ScoringParams",
    "get_threads",
    "score_candidates",
    "score_candidates_reference",
    "set_threads",
    "warmup",
]


def set_threads(n: int) -> int:
    """Set how many threads the parallel kernels use.

    Maps to ``numba.set_num_threads``, whose setting belongs to the calling thread (and
    to threads it starts afterwards): call it from the thread that scores.

    Args:
        n: Number of threads; ``0`` means every CPU this process may use (its
            affinity capped by its cgroup quota), at most ``NUMBA_NUM_THREADS``.

    Returns:
        The number of threads now in effect.

    Raises:
        ConfigError: ``n`` is not an integer or is outside ``0..NUMBA_NUM_THREADS``.
    """
    if isinstance(n, bool):
        raise ConfigError(f"threads: expected an integer, got {n!r}")
    try:
        n = operator.index(n)
    except TypeError:
        raise ConfigError(f"threads: expected an integer, got {type(n).__name__}") from None
    import numba

    limit = int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]  # set at run time
    if not 0 <= n <= limit:
        raise ConfigError(f"threads={n} out of range 0..{limit} (0 = all cores)")
    # 0: the CPUs this process may use (affinity, cgroup quota), within Numba's pool.
    numba.set_num_threads(min(limit, available_cpus()) if n == 0 else n)
    return int(numba.get_num_threads())


def get_threads() -> int:
    """Return the number of threads the parallel kernels use on the calling thread."""
    import numba

    return int(numba.get_num_threads())


def warmup() -> None:
    """Run every kernel variant once on a tiny batch.

    Compilation already happens at import; this also starts Numba's thread pool and
    touches every code path, so a service's first real request does not pay for it.
    """
    import numpy as np

    from . import score_candidates  # through the package: loaded lazily, replaceable in tests

    need_sims = np.array([[0.5, 0.4, 0.3], [0.2, 0.6, 0.1]], dtype=np.float32)
    ap_sims = np.array([0.9, 0.2, 0.1, 0.7], dtype=np.float32)
    args = (
        np.array([0, 0]), np.array([0, 1]), np.array([0, 1]), np.array([0, 0]),
        np.array([1]), np.array([2]), np.array([1]), need_sims, ap_sims,
        np.array([0, 2, 2]), np.array([1, 0]),
    )  # fmt: skip
    score_candidates(*args)
    score_candidates(*args, breakdown=True)
