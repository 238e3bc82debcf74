"""The embedding cache as ``toolsift eval`` uses it: every encoder
:func:`toolsift.index.embed.get_encoder` hands out while :func:`eval_encoder_cache` is
active shares encodings within the run and, on disk, with earlier runs and index builds.

The cache itself (store, namespaces, wrapper) is :mod:`toolsift.encoders.cache`, one
definition for builds, updates and evaluation; its names are re-exported here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from ..encoders.cache import (
    ENV_DIR,
    ENV_ENABLED,
    ENV_MB,
    CachedEncoder,
    CacheStats,
    EmbeddingStore,
    EncoderCache,
    default_cache_dir,
    encoder_namespace,
    store_from_env,
)

__all__ = [
    "ENV_DIR",
    "ENV_ENABLED",
    "ENV_MB",
    "CacheStats",
    "CachedEncoder",
    "EmbeddingStore",
    "EncoderCache",
    "default_cache_dir",
    "encoder_namespace",
    "eval_encoder_cache",
    "store_from_env",
]

log = logging.getLogger(__name__)


@contextmanager
def eval_encoder_cache(*, disk: bool = True) -> Iterator[EncoderCache]:
    """While active, every encoder :func:`~toolsift.index.embed.get_encoder` returns shares
    encodings within the run and, with ``disk`` and unless ``TOOLSIFT_EMBED_CACHE=0``,
    with earlier runs through :func:`store_from_env`.

    Raises:
        ConfigError: A ``TOOLSIFT_EMBED_CACHE*`` variable is malformed.
    """
    from ..index.embed import encoder_wrapper

    cache = EncoderCache(store_from_env() if disk else None)
    with encoder_wrapper(cache):
        yield cache
    if cache.store is not None:
        s, d = cache.stats, cache.store.stats
        log.info("embeddings: %d encoded, %d from disk, %d shared in-run; %d damaged entries, %d evicted",
                 s.encoded, s.disk_hits, s.memo_hits, d.corrupt, d.evicted)
