"""Where toolsift keeps its disk caches, and whether it may: the user cache folder
(``TOOLSIFT_EMBED_CACHE_DIR`` overrides it, ``TOOLSIFT_EMBED_CACHE=0`` turns caching off).
Shared by the embedding cache (:mod:`.cache`) and the file digests
(:mod:`.fingerprint`), and imports neither."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import ConfigError

__all__ = ["ENV_DIR", "ENV_ENABLED", "default_cache_dir", "env_enabled"]

ENV_DIR = "TOOLSIFT_EMBED_CACHE_DIR"
ENV_ENABLED = "TOOLSIFT_EMBED_CACHE"


def default_cache_dir() -> Path:
    """``$TOOLSIFT_EMBED_CACHE_DIR``, else the platform's user cache folder +
    ``toolsift/embeddings`` (Linux ``$XDG_CACHE_HOME`` or ``~/.cache``; macOS
    ``~/Library/Caches``; Windows ``%LOCALAPPDATA%``), as platformdirs lays it out."""
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env).expanduser()
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "toolsift" / "embeddings"


def env_enabled() -> bool:
    """Whether ``TOOLSIFT_EMBED_CACHE`` leaves toolsift's disk caches on (default: yes).

    Raises:
        ConfigError: The variable is not a yes/no value.
    """
    value = os.environ.get(ENV_ENABLED, "1").strip().lower()
    if value in ("0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on", ""):
        return True
    raise ConfigError(f"{ENV_ENABLED} must be 0 or 1 (or true/false, yes/no, on/off), got {value!r}")
