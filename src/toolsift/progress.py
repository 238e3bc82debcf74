"""Progress bars for long work, shown only when asked for and when the work is long."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

__all__ = ["progress_bar"]

T = TypeVar("T")


def progress_bar(it: Iterable[T], enabled: bool, desc: str, total: int | None = None) -> Iterator[T]:
    """Iterate ``it``, with a tqdm bar when ``enabled`` (transient: it clears when done)."""
    if not enabled:
        return iter(it)
    from tqdm.auto import tqdm

    return iter(tqdm(it, desc=desc, total=total, leave=False))
