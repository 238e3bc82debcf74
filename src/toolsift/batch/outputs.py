"""Where a batch job may write: checks made before any work, and the temp file it writes.

A job must never destroy what it reads. The output is refused when it *is* an input (the
same file by identity, ``st_dev`` + ``st_ino``, so ``dir/./in.parquet``, a symlink or a
hard link are caught as well as the plain spelling) or lies inside an input folder (a
Parquet dataset, an index directory). The output is written to a uniquely named temp file
in the target folder and renamed over the final name only when complete, so a failed run
leaves neither a partial output nor a damaged earlier one.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .columns import BatchInputError

__all__ = ["check_output", "temp_output"]


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (or cannot be stat'ed): not the same file
        return False


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` (need not exist) is ``folder`` or lies under it, by identity."""
    for parent in (path, *path.parents):
        if _same(parent, folder):
            return True
    return False


def check_output(out: str | os.PathLike, *, inputs: Iterable[str | os.PathLike | None] = ()) -> Path:
    """Check that ``out`` can be written without touching ``inputs``; returns it as a Path.

    Raises:
        BatchInputError: ``out`` is one of ``inputs`` (by file identity) or inside an input
            folder, is a directory, or its folder does not exist.
    """
    out = Path(out)
    if out.is_dir():
        raise BatchInputError(f"{out}: is a directory; name an output file")
    parent = out.parent
    if not parent.is_dir():
        raise BatchInputError(f"{out}: output folder {str(parent)!r} does not exist")
    for src in inputs:
        if src is None or not isinstance(src, (str, os.PathLike)):
            continue  # in-memory inputs cannot be overwritten
        src = Path(src)
        if _same(out, src):
            raise BatchInputError(f"{out}: the output is the input file {str(src)!r}; "
                                  "writing it would destroy the input, name another output")
        if src.is_dir() and _inside(parent, src):
            raise BatchInputError(f"{out}: the output lies inside the input folder {str(src)!r}; "
                                  "name an output outside it")
    return out


def temp_output(out: Path) -> Path:
    """A new, empty, uniquely named temp file beside ``out`` (same folder, so the final
    ``os.replace`` is an atomic rename on one file system).

    Raises:
        BatchInputError: The folder cannot be written.
    """
    try:
        fd, name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".part")
    except OSError as exc:
        raise BatchInputError(f"{out}: cannot write in {str(out.parent)!r}: {exc.strerror or exc}") from None
    os.close(fd)
    return Path(name)
