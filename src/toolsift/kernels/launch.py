"""Launching Numba kernels: serially when the work is small, in parallel when it pays.

Every parallel kernel in toolsift goes through :func:`launch`, which is where the one
``threads`` setting (``IndexConfig.threads``) reaches Numba:

* The thread count comes from :func:`using_threads` (a context variable, so concurrent
  searches with different settings do not interfere); outside any search it is 1.
* Work below ``SERIAL_WORK`` (or ``threads == 1``) runs a serial twin of the kernel —
  the same Python function compiled without ``parallel=True`` — on the calling thread.
  A single query's few hundred candidates never wake a thread pool: on a busy machine,
  waiting for pool threads to be scheduled cost 12-28 ms per query where the work
  itself takes microseconds.
* Numba's "workqueue" threading layer (the fallback when neither TBB nor OpenMP is
  available) aborts the process when two threads launch parallel kernels at once, and
  ``nogil=True`` kernels invite exactly that. Parallel launches are serialised until the
  layer in use is known to be thread-safe. Serial twins need no lock.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from toolsift.cpus import available_cpus

__all__ = ["SERIAL_WORK", "current_threads", "launch", "serial_twin", "using_threads"]

#: Units of work (candidates, or multiply-adds / 1000 for matrix kernels) below which a
#: kernel runs serially whatever the thread setting.
SERIAL_WORK = 16_384

_THREADSAFE_LAYERS = frozenset({"tbb", "omp"})
_lock = threading.Lock()
_threadsafe = False
_threads: ContextVar[int] = ContextVar("toolsift_threads", default=1)
_twins: dict[Any, Any] = {}
_twins_lock = threading.Lock()
_numba_module: Any = None


def _numba() -> Any:
    """Numba, imported on the first kernel launch: ``using_threads`` and the thread
    setting are on every search path, Numba (~0.5 s to import) only on some."""
    global _numba_module
    if _numba_module is None:
        import numba

        _numba_module = numba
    return _numba_module


def current_threads() -> int:
    """Threads the kernels may use in the current context (resolved: 0 means all cores)."""
    n = _threads.get()
    return n if n > 0 else available_cpus()


class using_threads:  # noqa: N801 - used as a function: ``with using_threads(n):``
    """Let kernels launched inside the block use ``n`` threads (0 = all cores).

    A class rather than a ``@contextmanager`` generator: every search enters one, and
    the generator protocol cost more than the small search's scoring kernel call.
    """

    __slots__ = ("_n", "_token")

    def __init__(self, n: int) -> None:
        self._n = n

    def __enter__(self) -> None:
        self._token = _threads.set(self._n)

    def __exit__(self, *exc: object) -> None:
        _threads.reset(self._token)


def serial_twin(kernel: Any) -> Any:
    """The serial version of a ``parallel=True`` kernel, compiled once for the same
    signatures (and cached on disk under its own name)."""
    if not hasattr(kernel, "py_func"):  # a plain Python function is serial already
        return kernel
    twin = _twins.get(kernel)
    if twin is None:
        with _twins_lock:
            twin = _twins.get(kernel)
            if twin is None:
                py = kernel.py_func
                # A distinct qualified name gives the twin its own on-disk cache entry:
                # Numba's cache key does not include the parallel flag.
                name = py.__name__ + "__serial"
                fn = types.FunctionType(py.__code__, py.__globals__, name, py.__defaults__, py.__closure__)
                fn.__qualname__ = py.__qualname__ + "__serial"
                fn.__module__ = py.__module__
                fn.__doc__ = py.__doc__
                opts = {k: v for k, v in kernel.targetoptions.items() if k not in ("parallel", "nopython")}
                opts["cache"] = True
                sigs = [s for s in kernel.signatures]
                numba = _numba()
                twin = numba.njit(sigs, **opts)(fn) if sigs else numba.njit(**opts)(fn)
                _twins[kernel] = twin
    return twin


def launch(kernel: Callable[..., None], *args: Any, work: int | None = None) -> None:
    """Run ``kernel(*args)``: its serial twin when ``work`` is below :data:`SERIAL_WORK`
    or one thread is allowed, else in parallel on :func:`current_threads` threads."""
    threads = current_threads()
    numba = _numba()
    no_jit = numba.config.DISABLE_JIT
    if threads <= 1 or (work is not None and work < SERIAL_WORK) or no_jit:
        (kernel if no_jit else serial_twin(kernel))(*args)
        return
    global _threadsafe
    numba.set_num_threads(min(threads, int(numba.config.NUMBA_NUM_THREADS)))
    if _threadsafe:
        kernel(*args)
        return
    with _lock:
        kernel(*args)
        try:
            _threadsafe = numba.threading_layer() in _THREADSAFE_LAYERS
        except ValueError:  # no parallel launch yet
            pass
