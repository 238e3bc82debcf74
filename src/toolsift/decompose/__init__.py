"""LLM-free query understanding: rule-based decomposition and complex-task search.

* :func:`decompose` -- text to a :class:`~toolsift.schema.Query` (tool needs plus
  abstract argument roles), no LLM.
* :func:`search_task` -- retrieve tools for each sub-task of a complex task and merge.
"""

from __future__ import annotations

from .rules import decompose, extract_arguments, split_steps
from .tasks import StepResult, TaskResult, search_task

__all__ = ["decompose", "extract_arguments", "split_steps", "search_task", "StepResult", "TaskResult"]
