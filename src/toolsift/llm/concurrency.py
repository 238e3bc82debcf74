"""Run a non-raising function over items on a few threads, results in input order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..progress import progress_bar


def run_concurrently(fn, items: Sequence[Any], *, workers: int, progress: bool = False,
                     desc: str = "LLM") -> list[Any]:
    """``[fn(x) for x in items]`` on ``workers`` threads, results in input order.

    ``fn`` must not raise (callers turn failures into fallbacks); the client's semaphore
    still bounds requests in flight, the pool only keeps that many threads busy.
    """
    from concurrent.futures import ThreadPoolExecutor, as_completed

    out: list[Any] = [None] * len(items)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {pool.submit(fn, x): i for i, x in enumerate(items)}
        done = progress_bar(as_completed(futures), progress and bool(items), desc, total=len(items))
        for fut in done:
            out[futures[fut]] = fut.result()
    return out
