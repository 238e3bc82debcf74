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


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 (hex) of a file's bytes, computed once per process per path, size and mtime."""
    path = Path(path)
    st = os.stat(path)
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _LOCK:
        digest = _FILE_DIGESTS.get(key)
    if digest is None:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        digest = h.hexdigest()
        with _LOCK:
            _FILE_DIGESTS[key] = digest
    return digest


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
