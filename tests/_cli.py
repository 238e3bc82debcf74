"""The toolsift command line, run from a test.

:func:`run` calls ``toolsift.cli.main`` in this process: the code the ``toolsift``
script and ``python -m toolsift`` run, without an interpreter start and an import of
toolsift per case (over a second of CPU each). ``real=True`` runs a real process instead
(the installed ``toolsift`` script where there is one): each test module keeps a few
such runs, for what only a process shows (its exit status, nothing else printed up to
its exit).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys

__all__ = ["run"]


def run(*args: str, real: bool = False, timeout: float = 300) -> subprocess.CompletedProcess:
    """``toolsift ARGS``: its exit status, stdout and stderr, as ``subprocess.run`` gives
    them (an argparse usage error is status 2, as in a process)."""
    if real:
        exe = shutil.which("toolsift")
        cmd = [exe, *args] if exe else [sys.executable, "-m", "toolsift", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ),
                              stdin=subprocess.DEVNULL)
    from toolsift.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(args))
        except SystemExit as exc:  # argparse: --help, usage errors
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return subprocess.CompletedProcess(["toolsift", *args], status, out.getvalue(), err.getvalue())
