"""The embedding cache: sentence embeddings stored by text content and encoder identity,
shared by index builds, index updates and ``toolsift eval``.

A build (:meth:`toolsift.ToolIndex.build`), an update (``add_tools`` /
``replace_tools``), a re-encoding load and every evaluation run look each text up here
before encoding it, so a rebuild or an update never re-encodes a text it has seen:

* on disk: one small file per (namespace, text) under :func:`default_cache_dir` (the
  user cache folder; ``TOOLSIFT_EMBED_CACHE_DIR`` or an explicit folder overrides it),
  capped at ``TOOLSIFT_EMBED_CACHE_MB`` (default 512) by evicting the least recently used
  entries; ``TOOLSIFT_EMBED_CACHE=0`` (or ``embed_cache=False``) turns it off;
* in-run (evaluation): each distinct text is encoded once per namespace, whatever
  method, setup or fold asks for it (:func:`toolsift.evaluate.embcache.eval_encoder_cache`).

A namespace is a hash of the encoder's ``fingerprint``
(:mod:`toolsift.encoders.fingerprint`: for the ONNX encoder, the model and tokenizer
files' SHA-256 and the truncation length) and its width. Batch size and thread count
are left out on purpose: the encoder's rows do not depend on them, nor on which other
texts share a batch (``tests/test_eval_embcache.py`` checks this, bit for bit, since
the cache is only sound because of it). Cached vectors are the stored float32 bytes of
an earlier ``encode``, so they are bit-identical to a fresh encoding.

Entries are written to a temp file and renamed into place (:mod:`toolsift.atomic`), so a
reader never sees half an entry and two processes writing the same key both leave a
complete one. Each entry carries a SHA-256 over its key and payload: a truncated,
corrupt or misplaced file is a miss (recomputed and rewritten), never a wrong vector.
"""

from __future__ import annotations

import hashlib
import logging
import os
import struct
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

import numpy as np

from ..atomic import write_atomic
from ..errors import ConfigError
from .cache_dir import ENV_DIR, ENV_ENABLED, default_cache_dir
from .cache_dir import env_enabled as _env_enabled
from .fingerprint import encoder_fingerprint

__all__ = [
    "ENV_DIR",
    "ENV_ENABLED",
    "ENV_MB",
    "CacheStats",
    "CachedEncoder",
    "EmbedCacheArg",
    "EmbeddingStore",
    "EncoderCache",
    "cached",
    "default_cache_dir",
    "encoder_namespace",
    "resolve_store",
    "store_from_env",
]

log = logging.getLogger(__name__)

ENV_MB = "TOOLSIFT_EMBED_CACHE_MB"
DEFAULT_MB = 512.0

# Bump when the entry layout or the meaning of a namespace changes: old entries then
# simply stop matching.
_FORMAT = 1
_MAGIC = b"TSEMB\x00\x00\x01"
_HEADER = struct.Struct("<8sII")  # magic, dim, reserved (0)
_DIGEST = 32
# Eviction goes below the cap by this margin, so a run that keeps adding entries does
# not rescan the folder on every write.
_EVICT_TO = 0.9
# A temp file this old was left by a killed writer.
_STALE_TMP_S = 3600.0


def _env_max_bytes() -> int:
    raw = os.environ.get(ENV_MB)
    if raw is None or not raw.strip():
        return int(DEFAULT_MB * 2**20)
    try:
        mb = float(raw)
    except ValueError:
        raise ConfigError(f"{ENV_MB} must be a number of megabytes, got {raw!r}") from None
    if not mb > 0 or mb == float("inf"):
        raise ConfigError(f"{ENV_MB} must be a positive, finite number of megabytes, got {raw!r}")
    return int(mb * 2**20)


def store_from_env() -> EmbeddingStore | None:
    """The disk store the environment asks for, or ``None`` when ``TOOLSIFT_EMBED_CACHE=0``.

    Raises:
        ConfigError: ``TOOLSIFT_EMBED_CACHE`` or ``TOOLSIFT_EMBED_CACHE_MB`` is malformed.
    """
    if not _env_enabled():
        return None
    return _shared_store(default_cache_dir(), _env_max_bytes())


#: What a caller may pass as ``embed_cache``: ``None`` (the environment's choice,
#: :func:`store_from_env`), ``False`` (no disk cache), a folder, or a store.
EmbedCacheArg = Union[None, bool, str, "os.PathLike[str]", "EmbeddingStore"]

# One store object per (folder, cap) in a process, so its size is scanned once, not on
# every build.
_STORES: dict[tuple[str, int], EmbeddingStore] = {}
_STORES_LOCK = threading.Lock()


def _shared_store(root: Path, max_bytes: int) -> EmbeddingStore:
    key = (str(Path(root).expanduser().absolute()), max_bytes)
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None:
            store = _STORES[key] = EmbeddingStore(key[0], max_bytes=max_bytes)
        return store


def resolve_store(embed_cache: EmbedCacheArg = None) -> EmbeddingStore | None:
    """The disk store an ``embed_cache`` argument names.

    Args:
        embed_cache: ``None`` or ``True``: :func:`store_from_env` (the user cache folder
            unless ``TOOLSIFT_EMBED_CACHE_DIR`` says otherwise, off when
            ``TOOLSIFT_EMBED_CACHE=0``); ``False``: no store; a folder: a store there
            (capped by ``TOOLSIFT_EMBED_CACHE_MB``); an :class:`EmbeddingStore`: itself.

    Raises:
        ConfigError: A malformed ``TOOLSIFT_EMBED_CACHE*`` variable or argument.
    """
    if embed_cache is None or embed_cache is True:
        return store_from_env()
    if embed_cache is False:
        return None
    if isinstance(embed_cache, EmbeddingStore):
        return embed_cache
    if isinstance(embed_cache, (str, os.PathLike)):
        return _shared_store(Path(embed_cache), _env_max_bytes())
    raise ConfigError(f"embed_cache must be None, a bool, a folder or an EmbeddingStore, "
                      f"got {type(embed_cache).__name__}")


@dataclass
class CacheStats:
    """Counts since the store or cache was made (texts, not calls)."""

    memo_hits: int = 0
    disk_hits: int = 0
    encoded: int = 0
    corrupt: int = 0
    evicted: int = 0
    write_errors: int = 0


def _disk_size(st: os.stat_result) -> int:
    # Allocated bytes: a 1.6 kB entry takes a whole 4 kB block, and the cap is about disk.
    blocks = getattr(st, "st_blocks", None)
    return blocks * 512 if blocks else st.st_size


class EmbeddingStore:
    """A folder of embedding entries, one file per key, sharded by the key's first two
    hex digits; size-capped with least-recently-used eviction (a hit refreshes the
    entry's mtime).

    Args:
        root: The folder; created on the first write.
        max_bytes: Allocated size the folder is kept under.
    """

    def __init__(self, root: str | os.PathLike[str], *, max_bytes: int = int(DEFAULT_MB * 2**20)) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
            raise ConfigError(f"max_bytes must be a positive int, got {max_bytes!r}")
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.stats = CacheStats()
        self._lock = threading.Lock()
        self._size: int | None = None  # allocated bytes, scanned on the first write
        self._warned = False

    @staticmethod
    def key(namespace: str, text: str) -> bytes:
        """The 32-byte key of ``text`` under ``namespace``."""
        h = hashlib.sha256()
        h.update(namespace.encode("utf-8"))
        h.update(b"\x00")
        h.update(text.encode("utf-8", "surrogatepass"))
        return h.digest()

    def path(self, key: bytes) -> Path:
        hx = key.hex()
        return self.root / hx[:2] / hx[2:]

    @staticmethod
    def _checksum(key: bytes, header: bytes, payload: bytes) -> bytes:
        return hashlib.sha256(key + header + payload).digest()

    def get(self, key: bytes, dim: int) -> np.ndarray | None:
        """The stored ``float32[dim]`` vector, or ``None`` when absent or not intact."""
        path = self.path(key)
        try:
            with open(path, "rb") as fh:
                blob = fh.read()
        except OSError:
            return None
        header = _HEADER.pack(_MAGIC, dim, 0)
        want = len(header) + _DIGEST + 4 * dim
        if (len(blob) != want or blob[:len(header)] != header
                or blob[len(header):len(header) + _DIGEST] != self._checksum(key, header, blob[len(header) + _DIGEST:])):
            with self._lock:
                self.stats.corrupt += 1
            log.warning("embedding cache entry %s is damaged; recomputing it", path)
            return None
        try:
            os.utime(path)  # least recently used = oldest mtime
        except OSError:
            pass  # a read-only cache still serves hits
        return np.frombuffer(blob, dtype="<f4", offset=len(header) + _DIGEST).astype(np.float32, copy=True)

    def put_many(self, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        """Store vectors atomically, then evict down to the cap if it is exceeded. A folder
        that cannot be written is reported once and otherwise ignored: the cache is an
        optimisation, never a reason for an evaluation to fail."""
        written = 0
        for key, vec in items:
            vec = np.ascontiguousarray(vec, dtype="<f4")
            header = _HEADER.pack(_MAGIC, vec.shape[0], 0)
            payload = vec.tobytes()
            try:
                written += self._write(self.path(key), header + self._checksum(key, header, payload) + payload)
            except OSError as exc:
                with self._lock:
                    self.stats.write_errors += 1
                    if not self._warned:
                        self._warned = True
                        log.warning("embedding cache %s is not writable (%s); continuing without storing", self.root, exc)
                return
        if written:
            with self._lock:
                if self._size is None:
                    self._size = self._scan_size()
                else:
                    self._size += written
                over = self._size > self.max_bytes
            if over:
                self.evict()

    @staticmethod
    def _write(path: Path, data: bytes) -> int:
        # Two writers of one key write the same bytes; the last rename wins.
        write_atomic(path, data)
        try:
            return _disk_size(os.stat(path))
        except OSError:
            return len(data)  # already evicted by another process

    def _entries(self) -> Iterator[tuple[str, os.stat_result]]:
        if not self.root.is_dir():
            return
        now = time.time()
        for shard in os.scandir(self.root):
            if not shard.is_dir(follow_symlinks=False) or len(shard.name) != 2:
                continue
            try:
                listing = list(os.scandir(shard.path))
            except OSError:
                continue  # removed meanwhile
            for entry in listing:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue  # removed meanwhile
                if entry.name.startswith(".tmp-"):
                    if now - st.st_mtime > _STALE_TMP_S:
                        _unlink(entry.path)
                    continue
                yield entry.path, st

    def _scan_size(self) -> int:
        return sum(_disk_size(st) for _, st in self._entries())

    def size(self) -> int:
        """Allocated bytes of all entries now (a full scan)."""
        return self._scan_size()

    def evict(self) -> int:
        """Remove least recently used entries until the folder is under 90% of the cap;
        returns how many were removed. Safe beside other processes doing the same
        (an entry already gone is skipped)."""
        entries = sorted(self._entries(), key=lambda e: (e[1].st_mtime_ns, e[0]))
        total = sum(_disk_size(st) for _, st in entries)
        removed = 0
        if total > self.max_bytes:
            target = int(self.max_bytes * _EVICT_TO)
            for path, st in entries:
                if total <= target:
                    break
                if _unlink(path):
                    removed += 1
                total -= _disk_size(st)
        with self._lock:
            self._size = total
            self.stats.evicted += removed
        return removed


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False


# ---------------------------------------------------------------- namespaces
def encoder_namespace(encoder: Any) -> str | None:
    """The cache namespace of ``encoder``: a hash of its fingerprint
    (:func:`toolsift.encoders.fingerprint.encoder_fingerprint`) and width, or ``None`` when
    the encoder has no fingerprint (it is then only memoised within a run, never stored).
    """
    fp = encoder_fingerprint(encoder)
    if fp is None:
        return None
    parts = [f"v{_FORMAT}", fp, f"dim={encoder.dim}"]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


# ------------------------------------------------------------------ encoders
class CachedEncoder:
    """``encoder`` with its vectors looked up first in ``memo`` (shared by every encoder of
    the same namespace in this run), then in ``store``; only the rest is encoded, in one
    call. Other attributes are the wrapped encoder's."""

    def __init__(self, encoder: Any, namespace: str | None, memo: dict[str, np.ndarray],
                 store: EmbeddingStore | None, stats: CacheStats) -> None:
        self.inner = encoder
        self.namespace = namespace
        self._memo = memo
        self._store = store if namespace is not None else None
        self._stats = stats
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return self.inner.dim

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, (str, bytes)):
            return self.inner.encode(texts)  # its own typed error
        texts = list(texts)  # once: an iterator would be spent by the check below
        if not all(isinstance(t, str) for t in texts):
            return self.inner.encode(texts)
        dim = self.inner.dim
        out = np.empty((len(texts), dim), dtype=np.float32)
        todo: dict[str, list[int]] = {}
        hits = 0
        for i, t in enumerate(texts):
            v = self._memo.get(t)
            if v is None:
                todo.setdefault(t, []).append(i)
            else:
                out[i] = v
                hits += 1
        disk = 0
        if todo and self._store is not None and self.namespace is not None:
            for t in list(todo):
                v = self._store.get(self._store.key(self.namespace, t), dim)
                if v is not None:
                    self._memo[t] = v
                    out[todo.pop(t)] = v
                    disk += 1
        if todo:
            miss = list(todo)
            vecs = np.asarray(self.inner.encode(miss), dtype=np.float32)
            for t, v in zip(miss, vecs):
                v = v.copy()  # not a view that pins the whole batch
                self._memo[t] = v
                out[todo[t]] = v
            if self._store is not None and self.namespace is not None:
                self._store.put_many([(self._store.key(self.namespace, t), v) for t, v in zip(miss, vecs)])
        with self._lock:
            self._stats.memo_hits += hits
            self._stats.disk_hits += disk
            self._stats.encoded += len(todo)
        return out

    def __repr__(self) -> str:
        return f"CachedEncoder({self.inner!r}, disk={'on' if self._store is not None else 'off'})"


class EncoderCache:
    """The wrapper :func:`toolsift.index.embed.encoder_wrapper` applies to each encoder:
    one :class:`CachedEncoder` per encoder object, one memo per namespace."""

    def __init__(self, store: EmbeddingStore | None) -> None:
        self.store = store
        self.stats = CacheStats()
        self._memos: dict[str | None, dict[str, np.ndarray]] = {}
        self._wrapped: dict[int, tuple[Any, CachedEncoder]] = {}
        self._lock = threading.Lock()

    def __call__(self, encoder: Any, config: Any = None) -> CachedEncoder:
        if isinstance(encoder, CachedEncoder):
            return encoder
        with self._lock:
            got = self._wrapped.get(id(encoder))
            if got is not None and got[0] is encoder:
                return got[1]
        ns = encoder_namespace(encoder)
        with self._lock:
            # An encoder without a namespace gets a memo of its own: texts only meet the
            # vectors of the very object that made them.
            memo = self._memos.setdefault(ns, {}) if ns is not None else {}
            wrapped = CachedEncoder(encoder, ns, memo, self.store, self.stats)
            self._wrapped[id(encoder)] = (encoder, wrapped)
            return wrapped


def cached(encoder: Any, store: EmbeddingStore | None) -> Any:
    """``encoder`` looking its texts up in ``store`` first (with a memo for this call's
    lifetime only, so a long-lived process does not grow); ``encoder`` itself when there
    is no store, when it has no fingerprint, when it is already cached (evaluation's
    wrapper then decides), or when it says caching does not pay (``cache_worthy =
    False``: the static encoder embeds a text in microseconds, less than one cache file's
    write; caching it made a 100k-tool static build spend 34 of its 56 encoding seconds
    writing and evicting cache files)."""
    if store is None or isinstance(encoder, CachedEncoder) or not getattr(encoder, "cache_worthy", True):
        return encoder
    ns = encoder_namespace(encoder)
    if ns is None:
        return encoder
    return CachedEncoder(encoder, ns, {}, store, CacheStats())
