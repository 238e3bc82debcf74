"""Launching parallel Numba kernels safely from many threads.

Numba's "workqueue" threading layer (the fallback when neither TBB nor OpenMP is
available) aborts the process when two threads launch parallel kernels at once, and
``nogil=True`` kernels invite exactly that. Launches are serialised until the layer in
use is known to be thread-safe; each launch already uses every core, so a queue costs
little. One lock for every kernel module, since the layer is process-wide.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numba

__all__ = ["launch"]

_THREADSAFE_LAYERS = frozenset({"tbb", "omp"})
_lock = threading.Lock()
_threadsafe = False


def launch(kernel: Callable[..., None], *args: Any) -> None:
    """Call a parallel kernel, serialised until the threading layer is known to be safe."""
    global _threadsafe
    if _threadsafe:
        kernel(*args)
        return
    with _lock:
        kernel(*args)
        try:
            _threadsafe = numba.threading_layer() in _THREADSAFE_LAYERS
        except ValueError:  # no parallel launch yet, e.g. under NUMBA_DISABLE_JIT
            pass
