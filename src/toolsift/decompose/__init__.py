"""LLM-free query understanding: rule-based decomposition and complex-task search.

* :func:`decompose` -- text to a :class:`~toolsift.schema.Query` (tool needs plus
  abstract argument roles), no LLM.
* :func:`search_task` -- retrieve tools for each sub-task of a complex task and merge.

The names load with their first use: a search that splits a request into steps imports
only :mod:`.steps`, not the decomposer's argument and need rules (dozens of regular
expressions compiled at import).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .rules import decompose, extract_arguments, split_steps
    from .tasks import StepResult, TaskResult, search_task

__all__ = ["decompose", "extract_arguments", "split_steps", "search_task", "StepResult", "TaskResult"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "decompose": "rules", "extract_arguments": "rules", "split_steps": "rules",
    "search_task": "tasks", "StepResult": "tasks", "TaskResult": "tasks",
}, globals())
