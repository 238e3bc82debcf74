"""On-disk cache of LLM outputs, keyed by a content hash.

Every LLM output toolsift uses is cached (DESIGN.md): a rerun of a standardization or a
rewrite costs nothing and gives the same result, even at temperature > 0.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["JsonCache", "cache_key"]


def cache_key(payload: Mapping[str, Any]) -> str:
    """sha256 hex digest of ``payload`` serialised canonically (sorted keys, no spaces)."""
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class JsonCache:
    """A folder of JSON files, one per key, sharded by the key's first two hex digits.

    Args:
        root: The cache folder; created on first write.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        """The stored value, or ``None`` when absent or unreadable."""
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))["value"]
        except (OSError, ValueError, KeyError, TypeError):
            # A truncated or foreign file is a miss, never an error: it is rewritten.
            return None

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key`` atomically (write a temp file, then rename)."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"key": key, "value": value}, fh, ensure_ascii=False)
            # os.replace is atomic on POSIX: concurrent readers see the old file or the
            # new one, never a half-written one.
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("??/*.json")) if self.root.is_dir() else 0
