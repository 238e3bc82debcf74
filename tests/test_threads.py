"""One thread setting governs every pool; small work never starts a thread pool."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np

from toolsift.kernels import launch as launch_mod
from toolsift.kernels.int8 import quantize_rows, scan
from toolsift.kernels.launch import current_threads, serial_twin, using_threads
from toolsift.kernels.mftr import score_kernel


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_single_queries_never_start_a_thread_pool():
    # A parallel launch starts the pool's OS threads; count the process's threads
    # before and after, in a fresh process so nothing else has launched. Loading a
    # cached parallel=True Numba kernel starts Numba's pool once per process, whoever
    # calls it (Numba's rebuild does it): the kernels are loaded before counting, as an
    # index build did before Numba became lazy, so what is counted is what a search
    # starts (C++ engine or onnxruntime threads). Numba's parallel path is also watched
    # directly: launch() calls set_num_threads only when it runs a kernel in parallel.
    got = _run("""
        import os
        from importlib.resources import files
        import numba
        import toolsift.kernels.int8, toolsift.kernels.mftr  # noqa: F401  (Numba's pool, once)
        from toolsift import IndexConfig, ToolIndex, load_catalog
        parallel = []
        real = numba.set_num_threads
        numba.set_num_threads = lambda n: (parallel.append(n), real(n))[1]
        count = lambda: len(os.listdir("/proc/self/task"))
        cat = load_catalog(str(files("toolsift") / "data" / "demo_tools.json"))
        indexes = [ToolIndex.build(cat, config=IndexConfig(threads=t)) for t in (1, 0)]
        before = count()
        for index in indexes:
            for q in ("send an email", "weather in Paris tomorrow", "convert 10 usd to eur"):
                index.search(q, k=5, explain=True)
        print(count() - before, len(parallel))
    """)
    assert got == "0 0"


def test_large_batches_use_the_configured_threads():
    # The C++ scan starts its workers for the call and joins them, so they are counted
    # while it runs (it releases the GIL; a watcher thread samples the task list).
    got = _run("""
        import os, threading, time, numpy as np
        from toolsift.kernels.int8 import freeze, quantize_rows, scan
        from toolsift.kernels.launch import using_threads
        count = lambda: len(os.listdir("/proc/self/task"))
        x = np.random.default_rng(0).standard_normal((200_000, 64)).astype(np.float32)
        c, s = (freeze(a) for a in quantize_rows(x))
        q, qs = c[:64].copy(), s[:64].copy()
        peak, stop = [0], threading.Event()
        def watch():
            while not stop.is_set():
                peak[0] = max(peak[0], count())
        t = threading.Thread(target=watch)
        t.start()
        time.sleep(0.05)
        before = count()  # the watcher included
        with using_threads(2):
            for _ in range(3):
                scan(q, qs, c, s)
        stop.set()
        t.join()
        print(peak[0] - before)
    """)
    assert int(got) >= 1


def test_serial_twin_computes_the_same_as_the_parallel_kernel():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((300, 32)).astype(np.float32)
    c, s = quantize_rows(x)
    with using_threads(1):
        serial = scan(c[:5], s[:5], c, s)
    with using_threads(2):
        old = launch_mod.SERIAL_WORK
        launch_mod.SERIAL_WORK = 0  # force the parallel kernel on this small input
        try:
            parallel = scan(c[:5], s[:5], c, s)
        finally:
            launch_mod.SERIAL_WORK = old
    np.testing.assert_array_equal(serial, parallel)
    twin = serial_twin(score_kernel)
    assert twin is serial_twin(score_kernel)
    assert not twin.targetoptions.get("parallel")


def test_thread_setting_is_scoped_to_the_context():
    assert current_threads() == 1
    with using_threads(3):
        assert current_threads() == 3
        with using_threads(0):
            assert current_threads() >= 1
        assert current_threads() == 3
    assert current_threads() == 1
