"""Pausing Python's cyclic garbage collector while an index creates many long-lived objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the body with the cyclic collector off (reference counting still frees memory).

    Building or loading a catalogue creates a few objects per tool, all kept: each
    collection the allocations trigger walks every one of them again without freeing
    anything (measured: 10% of a 50k-tool build's CPU, 15-25% of a 100k-tool load's).
    The collector is process-wide, so cycles other threads make meanwhile wait until the
    body ends; it is switched back on only if it was on before.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
