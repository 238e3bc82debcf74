"""Run a test module again in a subprocess with ``NUMBA_DISABLE_JIT=1``, so the kernels'
bodies run as plain Python (and coverage sees them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def assert_module_passes_without_jit(test_file: str, package_file: str) -> None:
    """Re-run ``test_file`` (minus its own ``disable_jit`` test) with the JIT off.

    Args:
        test_file: The test module's ``__file__``.
        package_file: ``__file__`` of a toolsift module the parent imported; the child is
            pointed at the same toolsift, wherever it came from (PYTHONPATH=src, an install).
    """
    package_root = Path(package_file).resolve().parents[2]
    pythonpath = [str(package_root), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONPATH": os.pathsep.join(pythonpath)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "not disable_jit", test_file],
        env=env,
        check=False,
        cwd=Path(test_file).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=900,
    )
    tail = (proc.stdout + proc.stderr)[-4000:]
    assert proc.returncode == 0, tail
    assert " passed" in proc.stdout and "failed" not in proc.stdout, tail
