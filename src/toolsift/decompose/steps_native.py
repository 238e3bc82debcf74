"""The C++ step splitter (``_core.StepSplitter``, cpp/src/step_*.cpp): the same answers as
:mod:`decompose.steps` on ASCII text, in a few microseconds instead of tens.

decompose.steps asks it first; for other text (or a core built before it) every function
here returns ``None`` and the Python rules, the reference implementation, answer. The
word lists are the Python modules' own, handed to the C++ object when it is made: with the
first request that needs it, so importing toolsift or loading an index costs nothing more.
tests/test_steps_native.py compares the two implementations on every golden input and on
seeded random text.
"""

from __future__ import annotations

from typing import Any

from ..schema import MAX_TEXT_CHARS

__all__ = ["native_may_split", "native_search_steps", "native_several_steps", "native_steps", "splitter"]

_MOST_STEPS = 1 << 30  # more steps than any text has clauses: the C++ bound on max_steps
_splitter: Any = None  # the C++ splitter, or False when the loaded core lacks it


def splitter() -> Any:
    """The C++ splitter made from decompose's word lists, or ``None`` when the loaded
    core has none."""
    global _splitter
    if _splitter is None:
        from .. import _core
        from .lexicon import _VERBS
        from .step_patterns import _ABBREV, _CLAUSE_WORDS, _SPLITTER_GROUPS

        make = getattr(_core, "StepSplitter", None)
        # The clause splitters' word groups let it skip a splitter, as _clause_splits does.
        needs = [[list(words) for words in groups] for groups in _SPLITTER_GROUPS]
        # Made twice if two first requests race: the same object either way.
        _splitter = make(sorted(_VERBS), sorted(_ABBREV), list(_CLAUSE_WORDS), needs, MAX_TEXT_CHARS) if make else False
    return _splitter or None


def _count(max_steps: object) -> int | None:
    """``max(1, int(max_steps))`` as the C++ splitter takes it, for an ``int`` (the Python
    path keeps every other type, and its errors)."""
    if type(max_steps) is not int:
        return None
    return min(max(max_steps, 1), _MOST_STEPS)


def native_steps(text: str, max_steps: int) -> list[tuple[str, str]] | None:
    """``steps._steps(text, max_steps)``, or ``None``: not taken (use the Python rules)."""
    sp, n = splitter(), _count(max_steps)
    return None if sp is None or n is None else sp.steps(text, n)


def native_several_steps(text: str, max_steps: int) -> list[str] | None:
    """``several_steps(text, max_steps)`` as a list (``[]``: one step), or ``None``: not taken."""
    sp, n = splitter(), _count(max_steps)
    return None if sp is None or n is None else sp.several_steps(text, n)


def native_may_split(text: str) -> bool | None:
    """``may_split(text)``, or ``None``: not taken."""
    sp = splitter()
    return None if sp is None else sp.may_split(text)


def native_search_steps(text: str, max_steps: int) -> list[str] | None:
    """``several_steps(text, max_steps) if may_split(text)`` as a list (``[]``: one step),
    or ``None``: not taken."""
    sp, n = splitter(), _count(max_steps)
    return None if sp is None or n is None else sp.search_steps(text, n)
