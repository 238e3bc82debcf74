"""Progress bars for long work, shown only when asked for and when the work is long.

Every bar in toolsift goes through :func:`progress_bar`: it stays invisible until the
work has run for :data:`SHOW_AFTER_S` seconds (short work never flickers a bar), clears
when done, and shows an ETA whenever the total is known.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

__all__ = ["SHOW_AFTER_S", "close_progress_bars", "progress_bar"]

T = TypeVar("T")

#: Seconds of work before a bar appears.
SHOW_AFTER_S = 1.0


def progress_bar(it: Iterable[T], enabled: bool, desc: str, total: int | None = None) -> Iterator[T]:
    """Iterate ``it``, with a tqdm bar when ``enabled`` and the work outlasts
    :data:`SHOW_AFTER_S` (transient: it clears when done).

    Args:
        it: The work items.
        enabled: Whether a bar may be shown at all.
        desc: The bar's label.
        total: Number of items, when ``it`` has no ``len`` (needed for the ETA).
    """
    if not enabled:
        return iter(it)
    from tqdm.auto import tqdm

    if total is None:
        try:
            total = len(it)  # type: ignore[arg-type]
        except TypeError:
            total = None
    # The ETA ("<remaining") is in tqdm's default format whenever total is known.
    return iter(tqdm(it, desc=desc, total=total, leave=False, delay=SHOW_AFTER_S))


def close_progress_bars() -> None:
    """Clear every open bar (before an error message is printed, so the message is not
    preceded by a half-drawn bar that its failed loop never got to close)."""
    import sys

    if "tqdm" not in sys.modules:  # no bar was ever made: nothing to import
        return
    from tqdm import tqdm

    for bar in list(getattr(tqdm, "_instances", ())):
        bar.leave = False
        bar.close()
