"""The pooled catalogue and its two query sets: ``toolsift eval pooled`` and ``toolsift eval stress``.

The pooled catalogue is the raw ``tools.json`` tools of the four ``mftr-*`` shared sets
(6,417 tools; ids carry their set's prefix, so they never collide). Two query sets rank
it:

* ``pooled``: every query of the four sets (2,098), each with its own labels;
* ``stress``: :func:`toolsift.evaluate.stress.stress_requests`, seeded multi-step requests
  that each join 3-4 queries of one set for different tools; gold = the union of labels.

Weights: every query and every request comes from one source set, and the trained methods
(``default``, ``default-bm25`` ...) score it with that set's leave-one-dataset-out
weights (``[hybrid-]lodo-<set>``, trained on the other shared sets only), so no weight
ever saw the query it ranks. The shipped ``default`` weights saw all five sets' queries
and are never used here. Methods without weights (``bm25s-fulldoc``, ``dense-fulldoc``)
run once over all queries.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..schema import Catalog
from .output import MethodOutput
from .pooled_query import PooledQuery

__all__ = ["POOLED_SETS", "PSEUDO_DATASETS", "PooledDataset", "PooledQuery", "data_root", "load_pseudo",
           "run_pooled"]

#: The shared sets whose tools and queries are pooled (the donor pool of benchmarks/synthetic.py).
POOLED_SETS: tuple[str, ...] = ("mftr-apibank", "mftr-apigen", "mftr-gorilla-huggingface", "mftr-toolink")
#: Names ``toolsift eval`` takes instead of a folder.
PSEUDO_DATASETS: tuple[str, ...] = ("pooled", "stress")


@dataclass(frozen=True, eq=False)
class PooledDataset:
    """The pooled catalogue with one of its query sets (see the module docstring)."""

    name: str
    tools: Catalog
    queries: tuple[PooledQuery, ...]

    def qrels(self) -> dict[str, dict[str, int]]:
        """``{query id: {tool id: 1}}``."""
        return {q.id: {t: 1 for t in q.labels} for q in self.queries}


def data_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding the shared sets: ``explicit``, else ``$TOOLSIFT_DATA``, else
    ``../shared/data`` (relative to the working directory, the layout of the docs' commands)."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("TOOLSIFT_DATA")
    return Path(env) if env else Path("..") / "shared" / "data"


def _load_sets(root: Path):
    from .datasets import MftrDataset

    return [MftrDataset.load(root / name) for name in POOLED_SETS]


def load_pseudo(name: str, root: str | os.PathLike[str] | None = None, *, seed: int = 0,
                n: int | None = None) -> PooledDataset:
    """``"pooled"`` or ``"stress"`` over the shared sets in ``root`` (:func:`data_root`).

    Raises:
        ValueError: Unknown name.
        DatasetError: A shared set is missing or malformed.
    """
    if name not in PSEUDO_DATASETS:
        raise ValueError(f"unknown pooled data set {name!r} (names: {', '.join(PSEUDO_DATASETS)})")
    sets = _load_sets(data_root(root))
    tools = Catalog([t for ds in sets for t in ds.raw_tools], name="pooled")
    pooled = tuple(PooledQuery(q.id, q.text, tuple(q.labels), f"mftr-{ds.name}") for ds in sets for q in ds.queries)
    if name == "pooled":
        return PooledDataset("pooled", tools, pooled)
    from .stress import STRESS_SIZE, stress_requests

    return PooledDataset("stress", tools, tuple(stress_requests(pooled, n=n or STRESS_SIZE, seed=seed)))


def run_pooled(ds: PooledDataset, method: str, *, encoder: str | None = None) -> MethodOutput:
    """Run a cold-start method over ``ds``: trained methods per source set with that set's
    LODO weights (one index build each), the others once over all queries."""
    from .cold import COLD_METHODS, TRAINED_METHODS, canonical_method, run_cold

    method = canonical_method(method)
    if method not in COLD_METHODS:
        raise ValueError(f"unknown method {method!r} for {ds.name} (methods: {', '.join(COLD_METHODS)})")
    if method not in TRAINED_METHODS:
        return run_cold(method, ds.tools, [(q.id, q.text) for q in ds.queries], encoder=encoder)
    t0 = time.perf_counter()
    run: dict = {}
    notes: list = []
    for source in dict.fromkeys(q.source for q in ds.queries):
        group: Sequence[PooledQuery] = [q for q in ds.queries if q.source == source]
        out = run_cold(method, ds.tools, [(q.id, q.text) for q in group], encoder=encoder, dataset=source)
        run.update(out.run)
        notes.extend(out.notes)
    return MethodOutput(run, time.perf_counter() - t0, len(ds.queries) * len(ds.tools), notes)
