"""Exact shortcuts for the step splitter's regular expressions: the same matches as
``pattern.finditer(text)`` or ``pattern.search(text)``, tried only where one can start.
(Used by ``decompose.steps`` and by the search's pre-check in ``search.needs``, which must
not import the splitter: this module imports nothing but ``re``.)

Python's ``re`` skips ahead fast only when a pattern opens with a literal or a plain
character class. The splitter's patterns open with ``\\b``, a lookbehind, an alternation
or a repeat, so ``re`` tries every one at every position: ~0.1 us a character, most of
what a search paid for the splitter. Here a match is tried only at the positions where
one can start:

* :func:`finditer_at` takes the candidate starts. ``pattern.match(text, q)`` sees the
  whole text (lookbehinds, ``\\b`` and ``^`` behave as in a search), and a search returns
  the match at the leftmost position that has one, so trying the candidates in order
  gives ``finditer``'s matches exactly, provided every match starts at a candidate.
* :func:`whole_word`: whether ``\\b(?:w1|w2|...)\\b`` (case-insensitive) matches ASCII
  text, by ``str.find`` and a look at the two neighbours of each occurrence.
* :func:`exists`: the same for a yes-or-no search, window by window, stopping at the first
  match.
* :func:`near_words` makes the candidates of a pattern that every match of which holds
  one of a few words (case-insensitively) within ``reach`` characters of its start and
  opens with one of a few characters: the positions at or up to ``reach`` characters
  before each occurrence of a word in the lower-cased text. Only for ASCII text, where
  ``lower()`` keeps every position and agrees with ``re.IGNORECASE``; other text takes
  the plain scan.

The patterns given to these functions never match the empty string (so a match always
moves the scan on, as in ``finditer``). Every use states why its candidates are complete;
tests/test_steps_scan.py checks each against ``re`` on random text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

__all__ = ["LINE_BREAKS", "WHITESPACE", "WORD_CHARS", "any_word", "exists", "finditer_at", "has_line_break",
           "near_words", "scan", "whole_word"]

#: What ``str.splitlines`` breaks a text at (the splitter's line rule splits there).
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def has_line_break(text: str) -> bool:
    """Whether ``text.splitlines()`` gives more than one line's worth of breaks to look at."""
    return any(c in text for c in LINE_BREAKS)

#: The ASCII characters ``\s`` matches (``re``'s own answer, so it never drifts).
WHITESPACE = frozenset(c for c in map(chr, range(128)) if re.match(r"\s", c))
#: The ASCII characters ``\w`` matches.
WORD_CHARS = frozenset(c for c in map(chr, range(128)) if re.match(r"\w", c))
# Above this many word occurrences a long text takes the plain scan (still linear).
_MAX_HITS = 64


def finditer_at(pattern: re.Pattern[str], text: str, starts: Iterable[int]) -> Iterator[re.Match[str]]:
    """``pattern.finditer(text)`` when every match starts at one of ``starts`` (ascending)."""
    end = 0
    for q in starts:
        if q >= end:
            m = pattern.match(text, q)
            if m is not None:
                yield m
                end = m.end()


def whole_word(low: str, words: Iterable[str]) -> bool:
    """Whether one of ``words`` (lower-case letters) is a whole word of ``low``
    (``text.lower()`` of ASCII text): ``re.search(r"\\b(?:w1|w2|...)\\b", text,
    re.IGNORECASE) is not None``. On ASCII text ``\\w`` is WORD_CHARS and ``lower()``
    agrees with ``re.IGNORECASE``, so a match is an occurrence with no word character either
    side. (``str.find`` per word: twice as fast as one alternation here.)"""
    n = len(low)
    for w in words:
        k = low.find(w)
        while k >= 0:
            e = k + len(w)
            if (k == 0 or low[k - 1] not in WORD_CHARS) and (e == n or low[e] not in WORD_CHARS):
                return True
            k = low.find(w, k + 1)
    return False


def near_words(low: str, words: re.Pattern[str] | tuple[str, ...], reach: int,
               first: frozenset[str]) -> list[int] | None:
    """Ascending positions ``q`` with ``low[q]`` in ``first`` and an occurrence of one of
    the words in ``low`` (``text.lower()``, ASCII) starting within ``q .. q + reach``;
    ``None`` when there are too many occurrences to be worth it. ``words``: a few words, or
    :func:`any_word` of many (one scan instead of one ``str.find`` per word)."""
    hits: list[int] = []
    if isinstance(words, tuple):
        for w in words:
            k = low.find(w)
            while k >= 0:
                hits.append(k)
                k = low.find(w, k + 1)
    else:
        m = words.search(low)
        while m is not None and len(hits) <= _MAX_HITS:
            hits.append(m.start())
            m = words.search(low, m.start() + 1)  # from the next position: overlapping ones too
    if len(hits) > _MAX_HITS:
        return None
    if len(hits) == 1:  # the usual case: one window, already in order
        k = hits[0]
        return [q for q in range(max(0, k - reach), k + 1) if low[q] in first]
    return sorted({q for k in hits for q in range(max(0, k - reach), k + 1) if low[q] in first})


def exists(pattern: re.Pattern[str], text: str, low: str, words: re.Pattern[str], reach: int,
           first: frozenset[str]) -> bool:
    """``pattern.search(text) is not None`` for ASCII ``text`` (``low = text.lower()``),
    where every match but one at position 0 opens with a character whose lower case is in
    ``first`` and holds a word of ``words`` (:func:`any_word`) starting at most ``reach``
    characters after its start. The positions are tried window by window, in order, each
    once, and the first match ends the search (most requests ask early)."""
    if pattern.match(text, 0):
        return True
    tried = 1  # every position below has been tried
    m = words.search(low)
    for _ in range(_MAX_HITS):
        if m is None:
            return False
        k = m.start()
        for q in range(max(tried, k - reach), k + 1):
            if low[q] in first and pattern.match(text, q):
                return True
        tried = max(tried, k + 1)
        m = words.search(low, k + 1)
    return pattern.search(text, tried) is not None  # many occurrences: a plain scan of the rest


def any_word(words: Iterable[str]) -> re.Pattern[str]:
    """An alternation of the literal ``words``, case-sensitive: a search from each position
    finds the next position where one of them starts (re skips ahead to a first letter)."""
    return re.compile("|".join(map(re.escape, words)))


def scan(pattern: re.Pattern[str], text: str, low: str | None, words: re.Pattern[str] | tuple[str, ...], reach: int,
         first: frozenset[str]) -> Iterator[re.Match[str]]:
    """``pattern.finditer(text)``, where every match opens with a character whose lower
    case is in ``first`` and holds one of ``words`` (case-insensitively) starting at most ``reach`` characters
    after its start. ``low``: ``text.lower()`` for ASCII text, else ``None`` (plain scan)."""
    if low is None:
        return pattern.finditer(text)
    starts = near_words(low, words, reach, first)
    return pattern.finditer(text) if starts is None else finditer_at(pattern, text, starts)
