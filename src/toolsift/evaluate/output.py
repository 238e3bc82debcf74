"""What an evaluation method returns, and the error for a method a dataset cannot run."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ToolsiftError

__all__ = ["MethodOutput", "MethodUnavailable"]


class MethodUnavailable(ToolsiftError):
    """The method needs data the dataset does not have (e.g. standardized docs)."""


@dataclass
class MethodOutput:
    """A method's pooled run over all test folds, and what it cost.

    Attributes:
        run: ``{query_id: {tool_id: score}}``, top 100 per query.
        seconds: Wall time of the whole method (index builds, scoring, training).
        pairs: Query-tool pairs scored.
        notes: Per-fold choices (selected setup, learned parameters).
    """

    run: dict[str, dict[str, float]]
    seconds: float
    pairs: int
    notes: list[dict] = field(default_factory=list)
