"""The text analyzer shared by indexing and querying, and the term vocabulary.

One analyzer instance turns both documents and queries into terms, so a mismatch between
index-time and query-time tokenization cannot happen. The defaults reproduce bm25s's
``tokenize``: lowercase, the regex ``(?u)\\b\\w\\w+\\b`` (words of two or more
characters), the 33-word English stop list of Lucene's English analyzer, no stemming.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np

from . import _core
from .checking import Strict, check_fields
from .errors import ConfigError

__all__ = ["AnalysisStream", "ENGLISH_STOPWORDS", "NLTK_STOPWORDS", "STOPLISTS", "Analyzer", "Vocabulary", "TermBatch",
           "fold_accents"]

#: Lucene's English stop set (also bm25s's "en"): articles, conjunctions, auxiliaries.
ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)

#: NLTK's English stop list (179 entries, shipped here so nothing is downloaded): the
#: Lucene set plus pronouns, question words (``how``, ``what``), auxiliaries, quantifiers
#: and contraction pieces. Measured better than the Lucene set on all five shared
#: benchmarks (docs/coldstart.md), so it is the default ``"en"`` list.
NLTK_STOPWORDS: frozenset[str] = frozenset("""
i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
yourselves he him his himself she she's her hers herself it it's its itself they them their
theirs themselves what which who whom this that that'll these those am is are was were be
been being have has had having do does did doing a an the and but if or because as until
while of at by for with about against between into through during before after above below
to from up down in out on off over under again further then once here there when where why
how all any both each few more most other some such no nor not only own same so than too
very s t can will just don don't should should've now d ll m o re ve y ain aren aren't
couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't
ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't
weren weren't won won't wouldn wouldn't
""".split())

#: Named stop lists accepted by :attr:`Analyzer.stopwords`.
#: ``"en"`` stays the Lucene set so saved indexes keep analysing as they were built.
STOPLISTS: dict[str, frozenset[str]] = {"en": ENGLISH_STOPWORDS, "english": ENGLISH_STOPWORDS,
                                         "lucene": ENGLISH_STOPWORDS, "nltk": NLTK_STOPWORDS}

TOKEN_PATTERN = r"(?u)\b\w\w+\b"

#: ASCII characters that are not word characters (``\w``), mapped to a space: on ASCII
#: text, ``translate`` then ``split`` finds the runs TOKEN_PATTERN matches (keeping those of
#: two or more characters), several times faster than the regex.
_ASCII_NON_WORD = str.maketrans({c: " " for c in range(128) if not (chr(c).isalnum() or chr(c) == "_")})
#: A stop word's entry in an analyzer's word memo.
_STOP = object()
#: Words an analyzer remembers the term of before it starts over (memory bound).
_WORD_MEMO_SIZE = 1 << 17


def fold_accents(text: str) -> str:
    """``"café"`` -> ``"cafe"``: NFKD, then drop combining marks."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


@dataclass(frozen=True)
class Analyzer:
    """Lowercase, split, drop stopwords, optionally stem.

    Args:
        stopwords: ``"en"`` (or ``"lucene"``) for :data:`ENGLISH_STOPWORDS`, ``"nltk"``
            for :data:`NLTK_STOPWORDS`, ``None`` for none, or an explicit list.
        stemmer: ``None`` or a Snowball language name such as ``"english"`` (needs the
            ``PyStemmer`` package: ``pip install toolsift[stem]``).
        lowercase: Fold case before splitting.
        fold_accents: Strip diacritics (``café`` -> ``cafe``) before splitting.
        exact_forms: With a stemmer, also keep each word's exact form beside its stem
            when the two differ (Lucene's keyword-repeat): ``"running"`` gives the terms
            ``run`` and ``running``. A stemmed match still counts, and an exact match
            counts twice, with the exact form's own (higher) IDF, so stemming can no
            longer merge near-duplicate tool names into one term. Needs a stemmer
            (without one every form is already exact): ``ConfigError`` otherwise.
    """

    stopwords: str | tuple[str, ...] | None = "en"
    stemmer: Annotated[str, Strict()] | None = None
    lowercase: Annotated[bool, Strict()] = True
    fold_accents: Annotated[bool, Strict()] = False
    exact_forms: Annotated[bool, Strict()] = False
    _stop: frozenset[str] = field(init=False, repr=False, compare=False)
    _stem: Any = field(init=False, repr=False, compare=False)
    _split: Any = field(init=False, repr=False, compare=False)
    _memo: Any = field(init=False, repr=False, compare=False)
    _words: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        sw = self.stopwords
        if isinstance(sw, str) and sw in STOPLISTS:
            stop = STOPLISTS[sw]
        elif sw is None:
            stop = frozenset()
        elif isinstance(sw, (list, tuple, frozenset, set)):
            stop = frozenset(str(w).lower() if self.lowercase else str(w) for w in sw)
            object.__setattr__(self, "stopwords", tuple(sorted(stop)))
        else:
            raise ConfigError(f"analyzer.stopwords: expected one of {sorted(STOPLISTS)}, None or a "
                              f"list, got {sw!r}")
        # The other fields' types, the one way every config is checked (toolsift.checking);
        # stopwords, which also takes a list, is normalised above.
        check_fields(self, "analyzer")
        object.__setattr__(self, "_stop", stop)
        stem = None
        if self.stemmer is not None:
            try:
                import Stemmer  # PyStemmer
            except ImportError:  # pragma: no cover - depends on the environment
                raise ConfigError(
                    "analyzer.stemmer needs the PyStemmer package: pip install 'toolsift[stem]'"
                ) from None
            try:
                stem = Stemmer.Stemmer(self.stemmer)
            except KeyError:
                raise ConfigError(f"analyzer.stemmer: unknown language {self.stemmer!r}") from None
        if self.exact_forms and stem is None:
            # Without a stemmer there is no stem to keep the exact form beside: the
            # option would silently change nothing.
            raise ConfigError("analyzer.exact_forms keeps each word's exact form beside its stem, so it needs a "
                              "stemmer: Analyzer(stemmer='english', exact_forms=True), or "
                              "dataclasses.replace(COLDSTART_ANALYZER, exact_forms=True)")
        object.__setattr__(self, "_stem", stem)
        object.__setattr__(self, "_split", re.compile(TOKEN_PATTERN).findall)
        # Catalogues repeat texts (parameter descriptions, and every rebuild of the same
        # catalogue in evaluation); stemming dominates analysis, so memoise per analyzer.
        object.__setattr__(self, "_memo", functools.lru_cache(maxsize=1 << 17)(self._tokenize))
        # Per word, its term (or _STOP): a new request re-uses the stems of words seen before.
        object.__setattr__(self, "_words", {})

    def __reduce__(self):
        # The stemmer (a C object) and the memo do not pickle; rebuild from the settings.
        return (Analyzer.from_dict, (self.to_dict(),))

    def tokenize(self, text: str) -> list[str]:
        """Split ``text`` into terms."""
        return list(self._memo(text))

    def analyse_many(self, texts: Sequence[str], vocab: Vocabulary, *,
                     chunk: int = 2048) -> tuple[np.ndarray, np.ndarray]:
        """Term ids and lengths of many texts, growing ``vocab``: the same result as
        ``vocab.add_all`` over ``tokenize(t)`` for every ``t`` in order.

        For index builds: each distinct word is stop-checked and stemmed once, however
        often it occurs (stemming token by token dominated analysis), and texts are
        handled ``chunk`` at a time, so no list of every token of a million tools is
        ever held. ASCII texts are split, lowercased and interned by the C++ core in
        one pass (the regex and a dict lookup per token dominated what was left);
        other texts take the Python path. Runs of each kind are handled in text order,
        so new terms get ids in first-seen order, as with :meth:`tokenize`: a stem's
        first occurrence is its first raw word's first occurrence.

        Returns:
            ``(terms int32[total], lengths int64[len(texts)])``.
        """
        return self.stream(vocab).analyse(texts, chunk=chunk)

    def stream(self, vocab: Vocabulary) -> AnalysisStream:
        """An :class:`AnalysisStream` growing ``vocab``: for texts that come in parts
        (a build streams each field's documents a slice of tools at a time); the
        parts together give what one :meth:`analyse_many` over all of them gives."""
        return AnalysisStream(self, vocab)

    def _prepare(self, text: str) -> str:
        if self.fold_accents:
            text = fold_accents(text)
        return text.lower() if self.lowercase else text

    def _split_words(self, text: str) -> list[str]:
        """The TOKEN_PATTERN runs of ``text`` after case and accent folding."""
        text = self._prepare(text)
        if text.isascii():
            return [w for w in text.translate(_ASCII_NON_WORD).split() if len(w) > 1]
        return self._split(text)

    def _tokenize(self, text: str) -> tuple[str, ...]:
        words = self._split_words(text)
        if self.exact_forms:
            stop = self._stop
            tokens = [t for t in words if t not in stop]
            return tuple(_with_exact(tokens, self._stem.stemWords(tokens))) if tokens else ()
        # Each word's term from the memo, stemmed (one Snowball call per word, as
        # stemWords does per word) only the first time it is seen.
        memo = self._words
        terms = list(map(memo.get, words))
        if None in terms:
            if len(memo) > _WORD_MEMO_SIZE:
                memo.clear()
            stop, stem = self._stop, self._stem
            for i, t in enumerate(terms):
                if t is None:
                    w = words[i]
                    t = terms[i] = memo[w] = _STOP if w in stop else stem.stemWord(w) if stem is not None else w
        return tuple(t for t in terms if t is not _STOP)

    def to_dict(self) -> dict[str, Any]:
        """JSON form for index manifests."""
        sw = self.stopwords
        out = {
            "stopwords": list(sw) if isinstance(sw, tuple) else sw,
            "stemmer": self.stemmer,
            "lowercase": self.lowercase,
            "fold_accents": self.fold_accents,
        }
        if self.exact_forms:  # absent when off: older manifests read back unchanged
            out["exact_forms"] = True
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Analyzer:
        """Inverse of :meth:`to_dict`."""
        sw = d.get("stopwords", "en")
        return cls(
            stopwords=tuple(sw) if isinstance(sw, list) else sw,
            stemmer=d.get("stemmer"),
            lowercase=bool(d.get("lowercase", True)),
            fold_accents=bool(d.get("fold_accents", False)),
            # A manifest written before exact_forms required a stemmer: it changed nothing.
            exact_forms=bool(d.get("exact_forms", False)) and d.get("stemmer") is not None,
        )


def _with_exact(words: Sequence[str], stems: Sequence[str]) -> list[str]:
    """Each stem, followed by its word when the two differ (the one definition of the
    term order with exact forms)."""
    out: list[str] = []
    for w, st in zip(words, stems):
        out.append(st)
        if st != w:
            out.append(w)
    return out


class AnalysisStream:
    """Analysis of texts arriving in parts (see :meth:`Analyzer.stream`).

    Keeps raw word -> term id (-1 for a stop word) across parts, with one table per
    path: the C++ interner's ids for ASCII texts, a dict for the rest. A word new to one
    path may be known to the other; the vocabulary then returns its existing id, so
    both paths agree. Not thread-safe: one stream per build.
    """

    def __init__(self, analyzer: Analyzer, vocab: Vocabulary) -> None:
        self.analyzer, self.vocab = analyzer, vocab
        self.raw: dict[str, int] = {}
        self.table = np.zeros(1024, np.int32)
        self.interner = _core.Interner(analyzer.lowercase)
        self.ctable = np.zeros(1024, np.int32)
        # Exact-form ids per raw word (-1: none), beside table and ctable.
        self.exact = analyzer.exact_forms and analyzer._stem is not None
        self.xtable = np.full(1024, -1, np.int32)
        self.xctable = np.full(1024, -1, np.int32)

    def analyse(self, texts: Sequence[str], *, chunk: int = 2048) -> tuple[np.ndarray, np.ndarray]:
        """``(terms int32[total], lengths int64[len(texts)])`` of the next texts."""
        terms_out, lens_out = [], []
        for start in range(0, len(texts), chunk):
            part = texts[start:start + chunk]
            ascii_flags = list(map(str.isascii, part))
            i = 0
            while i < len(part):
                kind = ascii_flags[i]
                j = i + 1
                while j < len(part) and ascii_flags[j] == kind:
                    j += 1
                t, counts = (self.ascii if kind else self.python)(part[i:j])
                keep = t >= 0
                kept_before = np.zeros(t.size + 1, np.int64)
                np.cumsum(keep, out=kept_before[1:])
                ends = np.zeros(counts.size + 1, np.int64)
                np.cumsum(counts, out=ends[1:])
                lens_out.append(np.diff(kept_before[ends]))
                terms_out.append(t[keep])
                i = j
        if not terms_out:
            return np.zeros(0, np.int32), np.zeros(0, np.int64)
        return np.concatenate(terms_out), np.concatenate(lens_out)

    def _terms(self, new: list[str]) -> tuple[list[int], list[int]]:
        """Term ids of distinct new raw words, in order, -1 for stop words; and the ids
        of their exact forms (-1 where there is none: exact forms off, or equal to the
        stem). Ids are assigned in the order :meth:`Analyzer.tokenize` emits terms."""
        an = self.analyzer
        stop, stem = an._stop, an._stem
        kept = [w for w in new if w not in stop]
        stems = stem.stemWords(kept) if stem is not None and kept else kept
        if not (an.exact_forms and stem is not None):
            ids = iter(self.vocab.add_all(stems).tolist())
            return [-1 if w in stop else next(ids) for w in new], [-1] * len(new)
        flat = self.vocab.add_all(_with_exact(kept, stems)).tolist()
        s_ids, e_ids, j = [], [], 0
        for w, st in zip(kept, stems):
            s_ids.append(flat[j])
            e_ids.append(flat[j + 1] if st != w else -1)
            j += 2 if st != w else 1
        it_s, it_e = iter(s_ids), iter(e_ids)
        return ([-1 if w in stop else next(it_s) for w in new], [-1 if w in stop else next(it_e) for w in new])

    def _emit(self, stem_ids: np.ndarray, exact_ids: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per raw token its stem id, followed by its exact form's id when it has one
        (``-1`` slots are dropped by the caller, as stop words are)."""
        if not self.exact:
            return stem_ids, counts
        return np.stack([stem_ids, exact_ids], axis=1).reshape(-1), counts * 2

    def ascii(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        lens = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        offsets = np.zeros(len(texts) + 1, np.int64)
        np.cumsum(lens, out=offsets[1:])
        known = len(self.interner)
        ids, counts = self.interner.intern("".join(texts).encode("ascii"), offsets)
        new = self.interner.words(known)
        if new:
            if len(self.interner) > self.ctable.size:
                self.ctable = np.resize(self.ctable, 2 * len(self.interner))
                self.xctable = np.resize(self.xctable, 2 * len(self.interner))
            self.ctable[known:len(self.interner)], self.xctable[known:len(self.interner)] = self._terms(new)
        return self._emit(self.ctable[ids], self.xctable[ids], counts)

    def python(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        split, prepare, raw = self.analyzer._split, self.analyzer._prepare, self.raw
        toks = [split(prepare(t)) for t in texts]
        flat = [w for x in toks for w in x]
        new = [w for w in dict.fromkeys(flat) if w not in raw]
        if new:
            raw.update(zip(new, range(len(raw), len(raw) + len(new))))
            if len(raw) > self.table.size:
                self.table = np.resize(self.table, 2 * len(raw))
                self.xtable = np.resize(self.xtable, 2 * len(raw))
            self.table[len(raw) - len(new):len(raw)], self.xtable[len(raw) - len(new):len(raw)] = self._terms(new)
        at = np.fromiter(map(raw.__getitem__, flat), dtype=np.int64, count=len(flat))
        return self._emit(self.table[at], self.xtable[at], np.fromiter(map(len, toks), dtype=np.int64, count=len(toks)))


@dataclass
class TermBatch:
    """Analysed texts as CSR: text ``i`` has ``terms[offsets[i]:offsets[i+1]]``.

    Unknown terms (not in the vocabulary) are ``-1`` and are skipped by the core.
    """

    terms: np.ndarray  # int32
    offsets: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.offsets) - 1


class Vocabulary:
    """A term -> id map shared by the fields of one index.

    Args:
        terms: Initial terms, ids assigned in order.
    """

    def __init__(self, terms: Iterable[str] = ()) -> None:
        self._ids: dict[str, int] = {}
        self._terms: list[str] = []
        for t in terms:
            self.add(t)

    def __len__(self) -> int:
        return len(self._terms)

    def add(self, term: str) -> int:
        """Id of ``term``, assigning the next id if it is new (or was forgotten)."""
        i = self._ids.get(term)
        if i is None:
            i = len(self._terms)
            self._ids[term] = i
            self._terms.append(term)
        return i

    def add_all(self, terms: Sequence[str]) -> np.ndarray:
        """``int32`` ids of ``terms``, assigning ids to new ones in first-seen order
        (the same ids as :meth:`add` one by one, in bulk)."""
        ids = self._ids
        for t in dict.fromkeys(terms):
            if t not in ids:
                ids[t] = len(self._terms)
                self._terms.append(t)
        return np.fromiter(map(ids.__getitem__, terms), dtype=np.int32, count=len(terms))

    def get(self, term: str) -> int:
        """Id of ``term`` or ``-1``."""
        return self._ids.get(term, -1)

    def forget(self, term_id: int) -> None:
        """Make the term with ``term_id`` unknown; its id is never reused."""
        term = self._terms[term_id]
        if self._ids.get(term) == term_id:
            del self._ids[term]

    def to_list(self) -> list[str | None]:
        """Terms in id order, ``None`` for forgotten ids (the stored form)."""
        return [t if self._ids.get(t) == i else None for i, t in enumerate(self._terms)]

    @classmethod
    def from_list(cls, terms: Sequence[str | None]) -> Vocabulary:
        """Inverse of :meth:`to_list`."""
        out = cls()
        for i, t in enumerate(terms):
            out._terms.append(t if t is not None else "")
            if t is not None:
                out._ids[t] = i
        return out

    def copy(self) -> Vocabulary:
        """An independent copy (updates grow a copy, never a vocabulary in use)."""
        out = Vocabulary()
        out._ids = dict(self._ids)
        out._terms = list(self._terms)
        return out

    @property
    def terms(self) -> list[str]:
        """All terms in id order."""
        return self._terms

    @property
    def lookup(self) -> Callable[[str, int], int]:
        """``lookup(term, -1)``: a term's id or ``-1``, as a bound ``dict.get`` (for a hot
        loop over one query's words; it reads the vocabulary as it is when called)."""
        return self._ids.get

    def encode_batch(self, token_lists: Sequence[Sequence[str]], *, grow: bool) -> TermBatch:
        """Map token lists to a :class:`TermBatch`; with ``grow`` new terms get ids."""
        offsets = np.zeros(len(token_lists) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, token_lists), np.int64, count=len(token_lists)), out=offsets[1:])
        if grow:
            flat = [self.add(t) for toks in token_lists for t in toks]
        else:
            ids = self._ids  # every search looks its words up here: no method call per word
            flat = [ids.get(t, -1) for toks in token_lists for t in toks]
        return TermBatch(np.asarray(flat, dtype=np.int32), offsets)
