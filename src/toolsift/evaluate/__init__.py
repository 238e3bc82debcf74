"""Evaluation: benchmark data sets and retrieval metrics.

Example:
    >>> from toolsift.evaluate import MftrDataset, evaluate
    >>> ds = MftrDataset.load("../shared/data/mftr-apibank")
    >>> result = evaluate(ds.qrels(), run)          # run = {qid: {tool_id: score}}
    >>> result.mean["ndcg@10"]
"""

from __future__ import annotations

from .datasets import (
    DatasetError,
    MftrDataset,
    UltraQuery,
    UltraToolDataset,
    ultratool_tool,
)
from .metrics import (
    METRICS,
    EvalResult,
    RunFormatError,
    evaluate,
    ranked,
    read_trec_run,
    write_trec_run,
)

__all__ = [
    "DatasetError",
    "MftrDataset",
    "UltraQuery",
    "UltraToolDataset",
    "ultratool_tool",
    "METRICS",
    "EvalResult",
    "RunFormatError",
    "evaluate",
    "ranked",
    "read_trec_run",
    "write_trec_run",
]
