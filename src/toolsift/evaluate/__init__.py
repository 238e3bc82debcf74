"""Evaluation: benchmark data sets and retrieval metrics.

Example:
    >>> from toolsift.evaluate import MftrDataset, evaluate
    >>> ds = MftrDataset.load("../shared/data/mftr-apibank")
    >>> result = evaluate(ds.qrels(), run)          # run = {qid: {tool_id: score}}
    >>> result.mean["ndcg@10"]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

# Names resolve on first use (PEP 562): the command line imports toolsift.evaluate.cli for
# every command, and the data set and metric modules pull in the compiled kernels (~2 s).
_EXPORTS = {
    "DatasetError": "datasets",
    "MftrDataset": "datasets",
    "UltraQuery": "datasets",
    "UltraToolDataset": "datasets",
    "ultratool_tool": "datasets",
    "METRICS": "metrics",
    "EvalResult": "metrics",
    "RunFormatError": "metrics",
    "evaluate": "metrics",
    "ranked": "metrics",
    "read_trec_run": "metrics",
    "write_trec_run": "metrics",
}

__all__ = list(_EXPORTS)

if TYPE_CHECKING:
    from .datasets import DatasetError, MftrDataset, UltraQuery, UltraToolDataset, ultratool_tool
    from .metrics import METRICS, EvalResult, RunFormatError, evaluate, ranked, read_trec_run, write_trec_run


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
