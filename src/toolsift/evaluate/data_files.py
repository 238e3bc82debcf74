"""What every benchmark reader shares: :class:`DatasetError` and the checks that name a
missing path. Its own module so that each data set's reader (:mod:`.datasets` for MFTR's
ToolRet subsets, :mod:`.ultratool_data` for UltraTool) imports it, not one another."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ToolsiftError

__all__ = ["DatasetError", "existing", "read_json"]


class DatasetError(ToolsiftError):
    """A benchmark folder is missing a file, or its files disagree with each other."""


def existing(path: Path, what: str, *, folder: bool = False) -> Path:
    """``path`` if it is a file (``folder``: a folder), else :class:`DatasetError`."""
    ok = path.is_dir() if folder else path.is_file()
    if not ok:
        kind = "folder" if folder else "file"
        raise DatasetError(f"{path}: {what} {kind} not found")
    return path


def read_json(path: Path) -> Any:
    """The JSON document in ``path``; :class:`DatasetError` naming it when unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise DatasetError(f"{path}: invalid JSON: {exc}") from None
