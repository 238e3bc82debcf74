"""Indexes searched through an earlier search path, for before/after rows timed in the
same run as the current path (the same hits: the tests hold each path to the other)."""

from __future__ import annotations

from toolsift import ToolIndex


def _hand_back(self, readings, k):
    return None


class PythonSteps:
    """An index whose multi-step raw requests take the Python path
    (:func:`toolsift.search.needs.run_steps`, or with ``first`` the first implementation,
    :func:`toolsift.search.needs_reference.run_steps_reference`) instead of the one engine
    call (``TextSearch.steps``, toolsift.search.hybrid_text). One-step requests are
    searched as usual."""

    def __init__(self, index: ToolIndex, *, first: bool = False) -> None:
        self.index = index
        self.first = first

    def search(self, q, k):
        import toolsift.search.needs as needs
        from toolsift.search.hybrid_text import TextSearch
        from toolsift.search.needs_reference import run_steps_reference

        steps, fast = TextSearch.steps, needs.run_steps
        TextSearch.steps = _hand_back  # type: ignore[method-assign]
        if self.first:  # search() imports run_steps from .needs on each call
            needs.run_steps = run_steps_reference
        try:
            return self.index.search(q, k=k)
        finally:
            TextSearch.steps, needs.run_steps = steps, fast  # type: ignore[method-assign]
