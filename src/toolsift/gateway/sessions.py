"""Per-index and per-session gateway state, and the discovery metadata of a tool.

:class:`IndexState` holds one index and what is derived from it (names, schema ETags,
argument validators); :class:`SessionCache` remembers, per client session, which schema
versions were already sent; :func:`risk_level` and :func:`when_not_to_use` read a tool's
discovery metadata.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..schema import Tool
from .formats import to_mcp

if TYPE_CHECKING:
    from ..toolindex import ToolIndex

__all__ = ["MAX_SESSIONS", "WHEN_NOT_TO_USE_KEY", "IndexState", "SessionCache", "risk_level", "schema_etag",
           "when_not_to_use"]

#: Sessions whose schema cache is kept; the least recently used one is dropped beyond.
MAX_SESSIONS = 10_000
#: ``_meta`` key of an MCP tool holding its "when not to use" text.
WHEN_NOT_TO_USE_KEY = "toolsift/when_not_to_use"

_WHEN_NOT_TAG = "when-not-to-use:"
_RISK_TAGS = {"risk:high": "high", "risk:medium": "medium", "risk:low": "low"}
_ETAG_HEX = 16  # 64 bits: ample to tell versions of one tool apart, cheap in tokens


def risk_level(tool: Tool, high_risk_tags: Sequence[str] = ("risk:high",)) -> str:
    """The tool's risk: ``"high"``, ``"medium"`` or ``"low"``.

    High when it carries ``risk:high``, any of ``high_risk_tags``, or ``destructive``
    (MCP ``destructiveHint: true``): the conservative reading wins over a lower label.
    Otherwise an explicit ``risk:medium``/``risk:low`` tag; otherwise ``low`` for
    ``read-only`` tools and ``medium`` for tools that may change state.
    """
    tags = set(tool.tags)
    if "risk:high" in tags or "destructive" in tags or tags.intersection(high_risk_tags):
        return "high"
    for tag in ("risk:medium", "risk:low"):
        if tag in tags:
            return _RISK_TAGS[tag]
    return "low" if "read-only" in tags else "medium"


def when_not_to_use(tool: Tool) -> str | None:
    """Text saying when *not* to pick the tool, or ``None``.

    Read from an MCP source's ``_meta["toolsift/when_not_to_use"]``, else from a tag
    ``when-not-to-use:<text>``.
    """
    src = tool.source
    meta = src.get("_meta") if isinstance(src, Mapping) else None
    if isinstance(meta, Mapping):
        text = meta.get(WHEN_NOT_TO_USE_KEY)
        if isinstance(text, str) and text.strip():
            return text.strip()
    for tag in tool.tags:
        if tag.startswith(_WHEN_NOT_TAG) and tag[len(_WHEN_NOT_TAG):].strip():
            return tag[len(_WHEN_NOT_TAG):].strip()
    return None


def schema_etag(tool: Tool) -> str:
    """The ETag of a tool's schema: a hash of its canonical MCP definition."""
    canonical = json.dumps(to_mcp(tool), sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:_ETAG_HEX]


class IndexState:
    """One index and what is derived from it; replaced as a whole when the index is
    swapped, so a request that started on the old index finishes on it consistently."""

    __slots__ = ("by_name", "entries", "etags", "index", "validators")

    def __init__(self, index: ToolIndex) -> None:
        self.index = index
        by_name: dict[str, Tool] = {}
        for tool in index.catalog:
            by_name.setdefault(tool.name, tool)
        self.by_name = by_name
        # Filled lazily; concurrent fills compute the same value, so no lock is needed.
        self.etags: dict[str, str] = {}
        self.validators: dict[str, Any] = {}
        # (format, tool id) -> the parts of a find_tools entry that depend only on the
        # tool: rendering a schema deep-copies it, which cost more than the search.
        self.entries: dict[tuple[str, str], dict[str, Any]] = {}

    def etag(self, tool: Tool) -> str:
        got = self.etags.get(tool.id)
        if got is None:
            got = self.etags[tool.id] = schema_etag(tool)
        return got


class SessionCache:
    """Per session, the ETag of every schema already sent, per format (LRU-bounded)."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._data: OrderedDict[str, dict[tuple[str, str], str]] = OrderedDict()
        self._lock = threading.Lock()

    def sent(self, session: str) -> dict[tuple[str, str], str]:
        """The session's record (created if new); the caller holds :attr:`lock`."""
        rec = self._data.get(session)
        if rec is None:
            rec = self._data[session] = {}
            while len(self._data) > self._capacity:
                self._data.popitem(last=False)
        else:
            self._data.move_to_end(session)
        return rec

    @property
    def lock(self) -> threading.Lock:
        return self._lock

    def forget(self, session: str) -> bool:
        with self._lock:
            return self._data.pop(session, None) is not None

    def __len__(self) -> int:
        return len(self._data)
