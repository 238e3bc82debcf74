"""Read, compute and write on separate threads, with bounded queues between them.

Parquet decoding and encoding release the GIL, so on a few cores reading batch ``i+1``
and writing batch ``i-1`` overlap with scoring batch ``i``. Each queue holds at most
``depth`` batches, so memory stays bounded by a few batches whatever the input size.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

__all__ = ["prefetch", "run_stages"]

T = TypeVar("T")
_DONE = object()


class _Failure:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def prefetch(items: Iterable[T], *, depth: int = 2) -> Iterator[T]:
    """Iterate ``items`` with a background thread producing up to ``depth`` ahead;
    an exception in the producer is raised here, at the item where it occurred."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        q.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put(_DONE)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            q.put(_Failure(exc))

    th = threading.Thread(target=produce, name="toolsift-prefetch", daemon=True)
    th.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, _Failure):
                raise item.exc
            yield item
    finally:
        stop.set()


def run_stages(items: Iterable[T], work: Callable[[T], object], sink: Callable[[object], None], *,
               depth: int = 2, read_ahead: int | None = None) -> None:
    """``sink(work(item))`` for every item, in order: items are produced on one
    background thread (up to ``read_ahead`` ahead, default ``depth``), ``work`` runs on
    the calling thread, ``sink`` on another (up to ``depth`` results queued)."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    failure: list[BaseException] = []

    def consume() -> None:
        while True:
            got = q.get()
            if got is _DONE:
                return
            if failure:
                continue  # drain after a failure so the producer never blocks
            try:
                sink(got)
            except BaseException as exc:  # noqa: BLE001 - re-raised on the calling thread
                failure.append(exc)

    th = threading.Thread(target=consume, name="toolsift-sink", daemon=True)
    th.start()
    try:
        for item in prefetch(items, depth=read_ahead or depth):
            if failure:
                break
            q.put(work(item))
    finally:
        q.put(_DONE)
        th.join()
    if failure:
        raise failure[0]
