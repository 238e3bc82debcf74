"""A stand-in document/query encoder for benchmarks at a million tools.

A transformer cannot encode 1M tool texts in minutes on this machine, so the scale
benchmark embeds with a *static* encoder. Until ``toolsift.encoders.static`` is on the
branch, this hashing encoder stands in for it: the same interface (``dim``,
``encode(list[str]) -> float32[n, 384]`` unit rows), and a similar cost model (a table
lookup and a mean per text), but no semantics beyond shared words: each lower-cased
word maps to a fixed random Gaussian vector (CRC32 of the word picks one of 65,536
rows); a text's vector is the normalised sum of its words' vectors. Its vectors are
clustered the way bag-of-words vectors are, not the way MiniLM's are, so IVF recall
measured with it says little about a semantic encoder (tests/test_ivf.py measures that
on real MiniLM vectors).
"""

from __future__ import annotations

import re
import zlib

import numpy as np

__all__ = ["HashingStandInEncoder"]

_WORD = re.compile(r"[a-z0-9]+")


class HashingStandInEncoder:
    """Stand-in static encoder (see the module docstring)."""

    dim = 384

    def __init__(self, *, buckets: int = 1 << 16, seed: int = 0) -> None:
        self.table = np.random.default_rng(seed).standard_normal((buckets, self.dim), dtype=np.float32)
        self._buckets = buckets
        self._ids: dict[str, int] = {}

    def _id(self, word: str) -> int:
        got = self._ids.get(word)
        if got is None:
            got = self._ids[word] = zlib.crc32(word.encode()) % self._buckets
        return got

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float32)
        for s in range(0, len(texts), 512):
            rows = [[self._id(w) for w in _WORD.findall(t.lower())] for t in texts[s:s + 512]]
            lens = np.fromiter((len(r) for r in rows), np.int64, count=len(rows))
            if not lens.sum():
                continue
            flat = np.fromiter((i for r in rows for i in r), np.int64, count=int(lens.sum()))
            has = lens > 0
            starts = np.concatenate([[0], np.cumsum(lens)[:-1]])[has]
            out[s:s + len(rows)][has] = np.add.reduceat(self.table[flat], starts, axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)
