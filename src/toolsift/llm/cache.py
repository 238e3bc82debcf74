"""On-disk cache of LLM outputs, keyed by a content hash.

Every LLM output toolsift uses is cached (DESIGN.md): a rerun of a standardization or a
rewrite costs nothing and gives the same result, even at temperature > 0.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..atomic import write_atomic

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
        data = json.dumps({"key": key, "value": value}, ensure_ascii=False).encode("utf-8")
        write_atomic(self._path(key), data)

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("??/*.json")) if self.root.is_dir() else 0
