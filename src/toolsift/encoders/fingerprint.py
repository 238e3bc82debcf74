"""Encoder identity: a hash of everything that decides an encoder's vectors.

An encoder's ``fingerprint`` (a hex string) keys the embedding cache
(:mod:`toolsift.encoders.cache`) and is recorded in a saved index's manifest, so vectors
made by one model are never scored against, or mixed with, another model's.
:class:`~toolsift.encoders.OnnxEncoder`'s is :func:`onnx_fingerprint` of its files; any
other encoder (e.g. a static token-table encoder) provides its own ``fingerprint`` str
that changes whenever its vectors would.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any

__all__ = ["encoder_fingerprint", "file_sha256", "onnx_fingerprint"]

# (resolved path, size, mtime_ns) -> sha256 hex: each file is hashed once per process
# unless it changes on disk.
_FILE_DIGESTS: dict[tuple[str, int, int], str] = {}
_LOCK = threading.Lock()
#: Files at least this large keep their digest on disk for the next process as well: the
#: MiniLM model (~90 MB) took ~60 ms of CPU to hash, a fifth of a `toolsift search` process
#: on a hybrid index (docs/results/startup-2026-11-28c.md).
DISK_DIGEST_MIN_BYTES = 1 << 20
_HEX = frozenset("0123456789abcdef")


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 (hex) of a file's bytes, computed once per process per path, size and mtime.

    A large file's digest is also kept in the user cache folder (``file-digests`` under
    :func:`~.cache_dir.default_cache_dir`, unless ``TOOLSIFT_EMBED_CACHE=0``), keyed by
    the file's path, device, inode, size and modification and change times: any write to
    the file changes its change time, which no user call can set back, so a stale digest
    is never used. Reading or writing that folder never fails the call."""
    path = Path(path)
    st = os.stat(path)
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _LOCK:
        digest = _FILE_DIGESTS.get(key)
    if digest is None:
        disk = _disk_entry(key[0], st) if st.st_size >= DISK_DIGEST_MIN_BYTES else None
        digest = _read_digest(disk) if disk is not None else None
        if digest is None:
            h = hashlib.sha256()
            with open(path, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            digest = h.hexdigest()
            if disk is not None:
                _write_digest(disk, digest)
        with _LOCK:
            _FILE_DIGESTS[key] = digest
    return digest


def _disk_entry(resolved: str, st: os.stat_result) -> Path | None:
    """Where a file's digest is kept on disk, or ``None`` when caching is off."""
    from ..errors import ConfigError
    from .cache_dir import default_cache_dir, env_enabled

    try:
        if not env_enabled():
            return None
    except ConfigError:  # a malformed switch: the embedding cache reports it; no digest kept
        return None
    ident = "\x00".join(map(str, (resolved, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)))
    return default_cache_dir() / "file-digests" / hashlib.sha256(ident.encode()).hexdigest()[:40]


def _read_digest(entry: Path) -> str | None:
    try:
        got = entry.read_text(encoding="ascii")
    except (OSError, ValueError):
        return None
    return got if len(got) == 64 and _HEX.issuperset(got) else None


def _write_digest(entry: Path, digest: str) -> None:
    from ..atomic import write_atomic

    try:
        write_atomic(entry, digest.encode("ascii"))
    except OSError:
        pass  # a read-only or full cache folder: the next process hashes again


def onnx_fingerprint(model: str | os.PathLike[str], tokenizer: str | os.PathLike[str], *,
                     max_length: int) -> str:
    """The fingerprint of an ONNX sentence encoder (mean pooling, L2 norm): SHA-256 over
    the model file's and the tokenizer file's SHA-256 and the truncation length (the
    three things that decide its vectors; batch size and threads do not)."""
    parts = ["onnx-mean-l2", file_sha256(model), file_sha256(tokenizer), f"max_length={max_length}"]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def encoder_fingerprint(encoder: Any) -> str | None:
    """``encoder.fingerprint`` when it is a non-empty str; else the legacy
    ``cache_namespace`` str; else ``None`` (an encoder of unknown identity: never cached on
    disk, and an index it built records no encoder)."""
    for attr in ("fingerprint", "cache_namespace"):
        own = getattr(encoder, attr, None)
        if isinstance(own, str) and own:
            return own
    return None
