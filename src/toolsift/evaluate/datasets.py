"""Benchmark data sets for evaluation: MFTR's ToolRet subsets and UltraTool.

Two folder layouts are read, both kept exactly as their upstream repositories ship them:

* An MFTR subset (``mftr-apibank`` ...): ``dataset/from_toolret/<ds>/{tools,queries}.json``,
  optional ``dataset/augmented_tools/<ds>/gpt-4o-mini_tools.json``,
  ``dataset/train_and_test/<ds>/fold_k/test_queries.json`` (the LLM-rewritten queries of
  test fold ``k``), optional ``dataset/hard_negatives/bm25_origin/<ds>.json`` and
  ``weight/<ds>/<retriever>__<batch>/fold_k_learned_params.json``. See :class:`MftrDataset`.
* UltraTool's English test set: ``data/English-dataset/test.json`` (JSON Lines) plus the
  distractor tools of ``test_set/tool_creation.json``. See :class:`UltraToolDataset`.

Every missing folder or file raises :class:`DatasetError` naming the path.
"""

from __future__ import annotations

import copy
import logging
import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..adapters import BenchmarkQuery, load_catalog, load_queries
from ..kernels.params import ScoringParams
from ..schema import Catalog
from .data_files import DatasetError
from .data_files import existing as _existing
from .data_files import read_json as _read_json
# UltraTool lives in its own module; re-exported here, where it was first defined.
from .ultratool_data import UltraQuery, UltraToolDataset, ultratool_tool

__all__ = [
    "DatasetError",
    "MftrDataset",
    "UltraQuery",
    "UltraToolDataset",
    "ultratool_tool",
]

logger = logging.getLogger(__name__)

_FOLD_DIR = re.compile(r"^fold_(\d+)$")
_PARAMS_FILE = "fold_{k}_learned_params.json"
_STANDARDIZED_FILE = "gpt-4o-mini_tools.json"


# --------------------------------------------------------------------------- helpers


def _single_subfolder(parent: Path) -> str:
    """Name of the only folder inside ``parent``: the data set's short name."""
    names = sorted(p.name for p in _existing(parent, "ToolRet data", folder=True).iterdir()
                   if p.is_dir())
    if len(names) != 1:
        raise DatasetError(
            f"{parent}: expected exactly one data set folder, found {names or 'none'}"
        )
    return names[0]


# ------------------------------------------------------------------------------ MFTR


@dataclass(frozen=True, eq=False)
class MftrDataset:
    """One ToolRet subset as prepared by the MFTR authors.

    The corpus ranked for every query is :attr:`raw_tools` (the subset's own
    ``tools.json``); :attr:`standardized_tools` holds the same ids in MFTR's four-field
    form where the authors published it (apibank only).

    Attributes:
        name: Short data set name, e.g. ``"apibank"`` or ``"gorilla-huggingface"``.
        root: The folder the data set was loaded from.
        raw_tools: ToolRet ``tools.json``, read with the ``"toolret"`` adapter.
        standardized_tools: LLM-standardized tools, or ``None`` when the file is absent.
        queries: Every query in ``queries.json`` order; ``rewritten`` comes from the
            test fold files (``None`` where the LLM rewrite had no usable tool need).
        folds: Query ids of each test fold, in fold-file order.
        hard_negatives: ``{query id: tool ids}`` of BM25 hard negatives in file order
            (best BM25 score first), or ``None`` when the file is absent.
        rewrite_repairs: Counts of repairs :func:`~toolsift.adapters.load_queries` made
            to the rewritten queries, summed over the fold files.
    """

    name: str
    root: Path
    raw_tools: Catalog
    standardized_tools: Catalog | None
    queries: tuple[BenchmarkQuery, ...]
    folds: tuple[tuple[str, ...], ...]
    hard_negatives: dict[str, tuple[str, ...]] | None = None
    rewrite_repairs: dict[str, int] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> MftrDataset:
        """Load a data set folder such as ``shared/data/mftr-apibank``.

        Args:
            path: The folder holding ``dataset/`` and ``weight/``. The data set name is
                the single folder under ``dataset/from_toolret/``.

        Returns:
            The loaded data set.

        Raises:
            DatasetError: A required folder or file is missing, a file is not valid
                JSON, or the fold files do not hold exactly the queries of
                ``queries.json`` (each once, with the same text and labels).
            SchemaError: A tool or query record is malformed (raised by the adapters,
                naming the file and record).
        """
        root = _existing(Path(path), "data set", folder=True)
        data = root / "dataset"
        name = _single_subfolder(data / "from_toolret")
        raw_dir = data / "from_toolret" / name
        raw_tools = load_catalog(_existing(raw_dir / "tools.json", "ToolRet tools"),
                                 format="toolret", name=f"{name}/tools.json")
        std_path = data / "augmented_tools" / name / _STANDARDIZED_FILE
        standardized = (
            load_catalog(std_path, format="mftr-augmented", name=f"{name}/{_STANDARDIZED_FILE}")
            if std_path.is_file() else None
        )
        originals = load_queries(_existing(raw_dir / "queries.json", "ToolRet queries"))
        repairs: Counter[str] = Counter()
        fold_queries = _load_folds(data / "train_and_test" / name, repairs)
        queries = _attach_rewrites(originals, fold_queries, data / "train_and_test" / name)
        hard = _load_hard_negatives(data / "hard_negatives" / "bm25_origin" / f"{name}.json")
        return cls(
            name=name,
            root=root,
            raw_tools=raw_tools,
            standardized_tools=standardized,
            queries=queries,
            folds=tuple(tuple(q.id for q in fold) for fold in fold_queries),
            hard_negatives=hard,
            rewrite_repairs={k: v for k, v in repairs.items() if v},
        )

    # ------------------------------------------------------------------ folds

    def _fold(self, k: int) -> tuple[str, ...]:
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < len(self.folds):
            raise IndexError(
                f"{self.name}: fold {k!r} out of range; folds are 0..{len(self.folds) - 1}"
            )
        return self.folds[k]

    def test_ids(self, k: int) -> tuple[str, ...]:
        """Query ids of test fold ``k``, in fold-file order.

        Raises:
            IndexError: If ``k`` is not a fold number.
        """
        return self._fold(k)

    def train_ids(self, k: int) -> tuple[str, ...]:
        """Query ids outside test fold ``k``, in :attr:`queries` order.

        MFTR trains fold ``k``'s weights on exactly these queries (its
        ``train_queries.json`` holds the same set, shuffled).

        Raises:
            IndexError: If ``k`` is not a fold number.
        """
        test = set(self._fold(k))
        return tuple(q.id for q in self.queries if q.id not in test)

    # ----------------------------------------------------------------- labels

    def qrels(self) -> dict[str, dict[str, int]]:
        """Relevance judgements ``{query id: {tool id: 1}}`` (all labels are binary).

        Returns:
            A fresh dictionary the caller may modify.
        """
        return {q.id: {tool_id: 1 for tool_id in q.labels} for q in self.queries}

    def raw_documentation(self, tool_id: str) -> dict[str, Any]:
        """The ToolRet ``documentation`` object of a tool, as in ``tools.json``.

        Args:
            tool_id: e.g. ``"apibank_tool_3"``.

        Returns:
            A deep copy, so callers cannot alter the loaded tool's source record.

        Raises:
            KeyError: If the id is not in :attr:`raw_tools`.
        """
        source = self.raw_tools.get(tool_id).source or {}
        return copy.deepcopy(dict(source["documentation"]))

    # ----------------------------------------------------------------- weights

    def retrievers(self) -> dict[str, Path]:
        """Retrievers with published learned weights: ``{name: folder}``.

        The name is the folder name before ``"__"`` (``"bm25__0"`` -> ``"bm25"``).
        """
        weights = self.root / "weight" / self.name
        if not weights.is_dir():
            return {}
        return {p.name.rpartition("__")[0] or p.name: p
                for p in sorted(weights.iterdir()) if p.is_dir()}

    def learned_params(self, retriever: str = "bm25") -> list[ScoringParams]:
        """The MFTR authors' learned scoring parameters, one per fold.

        Args:
            retriever: Retriever name as in the weight folder before ``"__"``
                (``"bm25"``, ``"all-MiniLM-L6-v2"``); the full folder name
                (``"bm25__0"``) is accepted too.

        Returns:
            ``params[k]`` was trained on :meth:`train_ids` ``(k)``.

        Raises:
            DatasetError: If no folder matches (the message lists the available
                retrievers) or a fold's file is missing.
            ConfigError: If a file holds malformed parameters.
        """
        available = self.retrievers()
        folder = available.get(retriever)
        if folder is None:
            folder = next((p for p in available.values() if p.name == retriever), None)
        if folder is None:
            listed = ", ".join(sorted(available)) or "none"
            raise DatasetError(
                f"{self.root / 'weight' / self.name}: no learned weights for retriever "
                f"{retriever!r}; available: {listed}"
            )
        return [
            ScoringParams.from_mftr_json(
                _existing(folder / _PARAMS_FILE.format(k=k), f"fold {k} learned params")
            )
            for k in range(len(self.folds))
        ]

    def __repr__(self) -> str:
        return (
            f"MftrDataset(name={self.name!r}, tools={len(self.raw_tools)}, "
            f"queries={len(self.queries)}, folds={[len(f) for f in self.folds]})"
        )


def _load_folds(folder: Path, repairs: Counter[str]) -> list[list[BenchmarkQuery]]:
    """Test queries of ``fold_0`` .. ``fold_{n-1}``, each in file order."""
    _existing(folder, "train_and_test", folder=True)
    numbers = sorted(int(m.group(1)) for p in folder.iterdir()
                     if p.is_dir() and (m := _FOLD_DIR.match(p.name)))
    if not numbers:
        raise DatasetError(f"{folder}: no fold_k folders found")
    if numbers != list(range(len(numbers))):
        raise DatasetError(f"{folder}: fold folders are not numbered 0..n-1: {numbers}")
    folds = []
    for k in numbers:
        stats: dict[str, int] = {}
        path = _existing(folder / f"fold_{k}" / "test_queries.json", f"fold {k} test queries")
        folds.append(load_queries(path, stats=stats))
        repairs.update(stats)
    return folds


def _attach_rewrites(
    originals: list[BenchmarkQuery], folds: list[list[BenchmarkQuery]], folder: Path
) -> tuple[BenchmarkQuery, ...]:
    """``originals`` with ``rewritten`` taken from the fold files.

    The fold files must partition the original queries: a query missing from every
    fold, present twice, unknown, or with different text or labels means the files
    come from different versions of the data.
    """
    by_id: dict[str, BenchmarkQuery] = {}
    for k, fold in enumerate(folds):
        for q in fold:
            if q.id in by_id:
                raise DatasetError(f"{folder}: query {q.id!r} appears in more than one test "
                                   f"fold (again in fold_{k})")
            by_id[q.id] = q
    original_ids = {q.id for q in originals}
    missing = [q.id for q in originals if q.id not in by_id]
    unknown = [qid for qid in by_id if qid not in original_ids]
    if missing or unknown:
        raise DatasetError(
            f"{folder}: the test folds do not hold exactly the queries of queries.json: "
            f"{len(missing)} missing {missing[:5]}, {len(unknown)} unknown {unknown[:5]}"
        )
    out = []
    for q in originals:
        rewritten = by_id[q.id]
        if rewritten.text != q.text or set(rewritten.labels) != set(q.labels):
            raise DatasetError(
                f"{folder}: query {q.id!r} has different text or labels in the fold files "
                "than in queries.json"
            )
        out.append(replace(q, rewritten=rewritten.rewritten))
    return tuple(out)


def _load_hard_negatives(path: Path) -> dict[str, tuple[str, ...]] | None:
    if not path.is_file():
        return None
    payload = _read_json(path)
    if not isinstance(payload, Mapping):
        raise DatasetError(f"{path}: expected an object {{query id: [[tool id, score], ...]}}")
    out: dict[str, tuple[str, ...]] = {}
    for qid, pairs in payload.items():
        if not isinstance(pairs, list) or not all(
            isinstance(p, list) and p and isinstance(p[0], str) for p in pairs
        ):
            raise DatasetError(f"{path}: [{qid!r}]: expected a list of [tool id, score] pairs")
        out[qid] = tuple(p[0] for p in pairs)
    return out
