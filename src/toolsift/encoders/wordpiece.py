"""A WordPiece tokenizer for one short text at a time, exact for BERT-uncased vocabularies.

The ``tokenizers`` package costs ~0.1 ms per ``encode`` call however short the text
(normaliser, pre-tokenizer and model are separate passes over Rust objects, plus the
Python boundary), a tenth of a hybrid query's whole budget. A query is a dozen words,
nearly all seen before: splitting printable ASCII into words and punctuation takes a
regular expression, and each word's pieces come from a dictionary filled on first use.

Only the common case takes this path; every other text goes to ``tokenizers`` itself,
so the ids are always the ones the reference tokenizer gives (tested on every query and
tool text of the shared sets and on random strings):

* the tokenizer is BERT-uncased: ``BertNormalizer`` (clean text, lower case),
  ``BertPreTokenizer``, a ``WordPiece`` model (anything else: no fast path at all);
* the text is ASCII (no accents to strip, no Chinese characters to split) with no
  control character other than tab, newline and carriage return (BERT treats those three
  as spaces and drops the others, joining their neighbours), and holds no added token
  (``[CLS]``, ``[MASK]``... are matched in the raw text before normalisation; a ``[``
  that starts none is plain punctuation).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

__all__ = ["FastWordPiece"]

# BERT's punctuation in ASCII: every non-alphanumeric printable character except space
# (33-47, 58-64, 91-96, 123-126). Each is a word of its own; runs of letters and digits
# are the other words.
_WORDS = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")
# ASCII control characters BERT's clean_text drops (tab, newline and CR are spaces).
_DROPPED = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Words kept in the piece cache; past this the cache starts over (a bound on memory for a
# long-running service fed arbitrary text, far above a catalogue's working vocabulary).
_CACHE_WORDS = 200_000


class FastWordPiece:
    """Token ids of one text, for a BERT-uncased ``tokenizer.json``.

    Build with :meth:`from_file`, which returns ``None`` when the tokenizer is not of the
    shape this class reproduces. :meth:`ids` returns ``None`` for a text it does not
    handle (the caller then asks ``tokenizers``).
    """

    def __init__(self, vocab: dict[str, int], *, unk_id: int, prefix: str, max_chars: int,
                 added: tuple[str, ...], vocab_size: int | None = None) -> None:
        self._vocab = vocab
        #: Tokens with their added tokens, as ``Tokenizer.get_vocab_size(with_added_tokens=True)``.
        self.vocab_size = len(vocab) if vocab_size is None else vocab_size
        self._unk = unk_id
        self._prefix = prefix
        self._max_chars = max_chars
        # Added tokens as they may appear: verbatim, and lower-cased for any the
        # tokenizer matches after normalisation (compared with the lower-cased text).
        self._added = added
        self._added_starts = frozenset(t[0] for t in added)
        self._cache: dict[str, tuple[int, ...]] = {}

    def engine_args(self) -> tuple[dict[str, int], int, str, int, tuple[str, ...]]:
        """``(vocab, unk id, continuing-subword prefix, max word chars, added tokens)``:
        what the C++ twin (``_core.HybridText``, toolsift/wordpiece.h) is built from."""
        return self._vocab, self._unk, self._prefix, self._max_chars, self._added

    @classmethod
    def from_file(cls, path: Path) -> FastWordPiece | None:
        """The fast path for ``path``, or ``None`` if it is not a BERT-uncased tokenizer."""
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        norm, pre, model = doc.get("normalizer") or {}, doc.get("pre_tokenizer") or {}, doc.get("model") or {}
        if not (norm.get("type") == "BertNormalizer" and norm.get("lowercase") is True
                and norm.get("clean_text") is True and pre.get("type") == "BertPreTokenizer"
                and model.get("type") == "WordPiece" and isinstance(model.get("vocab"), dict)):
            return None
        vocab = model["vocab"]
        unk = vocab.get(model.get("unk_token", "[UNK]"))
        if unk is None:
            return None
        added = []
        extra = 0  # added tokens outside the model's vocabulary count on top of it
        for t in doc.get("added_tokens") or []:
            content = t.get("content")
            if not content:
                continue
            extra += content not in vocab
            added.append(content)
            if t.get("normalized", True):
                added.append(content.lower())
        return cls(vocab, unk_id=int(unk), prefix=str(model.get("continuing_subword_prefix", "##")),
                   max_chars=int(model.get("max_input_chars_per_word", 100)), added=tuple(added),
                   vocab_size=len(vocab) + extra)

    def ids(self, text: str) -> list[int] | None:
        """The ids ``tokenizers`` gives ``text`` without special tokens, or ``None`` when
        the text is outside the fast path (not ASCII, a control character BERT drops,
        or an added token in it)."""
        if not text.isascii() or (not text.isprintable() and _DROPPED.search(text)):
            return None
        lower = text.lower()
        if not self._added_starts.isdisjoint(text) and any(a in text or a in lower for a in self._added):
            return None
        out: list[int] = []
        cache = self._cache
        for word in _WORDS.findall(lower):
            pieces = cache.get(word)
            if pieces is None:
                if len(cache) >= _CACHE_WORDS:
                    cache.clear()
                pieces = cache[word] = self._pieces(word)
            out.extend(pieces)
        return out

    def _pieces(self, word: str) -> tuple[int, ...]:
        """Greedy longest-match-first WordPiece, as BERT: one unknown piece makes the whole
        word ``[UNK]``."""
        if len(word) > self._max_chars:
            return (self._unk,)
        vocab, out, start = self._vocab, [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else self._prefix + word[start:end]
                got = vocab.get(piece)
                if got is not None:
                    out.append(got)
                    break
                end -= 1
            else:
                return (self._unk,)
            start = end
        return tuple(out)
