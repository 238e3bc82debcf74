"""A deterministic cheap encoder for index tests: a random unit vector per distinct text
plus a shared component per first word, so there is structure to cluster."""

from __future__ import annotations

import zlib

import numpy as np


class HashEncoder:
    """``encode(texts)`` -> unit ``float32[len(texts), 32]``; ``cache_worthy`` picks the
    build's embedding path (the embedding cache, or field by field)."""

    dim = 32

    def __init__(self, cache_worthy: bool = True) -> None:
        self.cache_worthy = cache_worthy

    def encode(self, texts):
        out = []
        for t in texts:
            a = np.random.default_rng(zlib.crc32(t.encode())).standard_normal(self.dim)
            b = np.random.default_rng(zlib.crc32(t.split()[0].encode())).standard_normal(self.dim)
            v = (a + 2 * b).astype(np.float32)
            out.append(v / np.linalg.norm(v))
        return np.array(out, np.float32).reshape(len(texts), self.dim)
