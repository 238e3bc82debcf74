"""The splitter's fast scans (toolsift.textscan and its uses in decompose.steps and
search.needs) against plain ``re`` on seeded random text: the same matches, spans and
groups, case by case. tests/test_steps_golden.py checks the splitter's whole output."""

from __future__ import annotations

import random
import re

import pytest

from toolsift.decompose import lexicon, steps
from toolsift.search import needs
from toolsift.textscan import WHITESPACE, WORD_CHARS, finditer_at, near_words, whole_word

_TOKENS = ("and", "AND", "And", "then", "Then", "after", "After that", "afterwards", "afterward", "next",
           "next week", "next  Monday", "finally", "lastly", "subsequently", "additionally", "also", "as well",
           "as  well as", "well", "once", "when", "before", "as soon as", "soon", "done", "finished", "complete",
           "over", "ready", "through", "but", "plus", "i want", "I  also need", "i would", "I'd", "can you",
           "could  you", "would you", "please", "tell me", "let me", "let me know", "let's", "help me",
           "looking for", "I'm searching", "i am  trying", "hoping", "interested", "what", "how", "is", "do",
           "book", "send", "find", "get", "the", "x", "band", "thenx", "xand", "wellness", "for me", "thanks",
           "thank you", "for", "1)", "(2)", "3.", "01.", "2.", "\"quoted and then\"", "'it is'", "\u201cq and\u201d",
           "it's", "a'b", "?", "!", ".", "...", ";", ":", ",", ", ", ";  ", ". ", "? ", ".) ", "!\" ", "(", ")",
           "Dr.", "e.g.", "\u00e9", "\u212a", "\u0130", "\u017f", "\u3000", "\u00a0")
_SEPS = (" ", " ", " ", "  ", "     ", "      ", "\t", "\n", "\r\n", ",", ", ", ";", ":", "", "\x0b", "\x1c")


def _texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        parts = []
        for _ in range(rng.randint(0, 40 if i % 50 else 400)):  # every 50th: many words (the fallback)
            parts.append(rng.choice(_TOKENS))
            parts.append(rng.choice(_SEPS))
        text = "".join(parts)
        if i % 3 == 0:  # two thirds ASCII only (the fast paths), one third may hold anything
            text = text.encode("ascii", "ignore").decode()
        out.append(text)
    return out


TEXTS = _texts(7, 2500)


def _same(fast, slow, text):
    got = [(m.span(), m.groups()) for m in fast]
    want = [(m.span(), m.groups()) for m in slow]
    assert got == want, repr(text)


@pytest.mark.parametrize("name", ["_SEQ", "_THEN_CLAUSE", "_AND_REQUEST", "_AND_WORD"])
def test_clause_pattern_scans_match_re(name):
    pattern = getattr(steps, name)
    found = 0
    for text in TEXTS:
        _same(steps._matches(pattern, text, steps._lower(text)), pattern.finditer(text), text)
        found += pattern.search(text) is not None
    assert found > 100  # the texts exercise the pattern


def test_asks_matches_re():
    hits = 0
    for text in TEXTS:
        want = steps._REQUEST.search(text) is not None
        assert steps._asks(text) is want, repr(text)
        hits += want
    assert 300 < hits < len(TEXTS) - 300


def test_quoted_and_sentence_ends_match_re():
    for text in TEXTS:
        assert steps._quoted(text) == [m.span() for m in steps._QUOTE_SPAN.finditer(text)], repr(text)
        starts = [m.start() for m in steps._SENT_CHAR.finditer(text)]
        _same(finditer_at(steps._SENT_END, text, starts), steps._SENT_END.finditer(text), text)
        if steps._PUNCT_SPACE.search(text) is None:  # _sentences' shortcut
            assert steps._SENT_END.search(text) is None, repr(text)


def test_whole_word_matches_re():
    for text in TEXTS:
        if text.isascii():
            assert whole_word(text.lower(), steps._CLAUSE_WORDS) is bool(steps._CLAUSE_WORD.search(text)), \
                repr(text)


# The pre-checks as they were (126fbc7): one alternation each.
# The old alternations, with every line break str.splitlines splits at (not only "\n": a
# deliberate fix since, tests/test_needs.py).
_BREAKS = "[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]"
_OLD_GATE = re.compile(_BREAKS + r"|[.!?;]+[\"')\]]{0,3}\s|\d[).]|\b(?:and|but|plus|then|after|afterwards?|next|"
                       r"finally|lastly|subsequently|additionally|also|well)\b|,\s{0,5}[A-Za-z]|"
                       r"[;:]\s{0,5}(?:once|when|after|before|as)\b", re.IGNORECASE)
_OLD_MAY = re.compile(_BREAKS + r"|[.!?;]+[\"')\]]{0,3}\s|\d[).]|\b(?:and|but|plus|then|after|afterwards?|next|"
                      r"finally|lastly|subsequently|additionally|also|well)\b|[,:;]\s{0,5}" + steps._SUBORD + r"\b",
                      re.IGNORECASE)


def _old_may_split(text: str) -> bool:
    if _OLD_MAY.search(text):
        return True
    return any(m.group(2).lower() in steps._VERBS or steps._CLAUSE_OPENER.match(text, m.start(2))
               for m in steps._COMMA_WORD.finditer(text))


def test_pre_checks_match_the_old_alternations():
    passed = 0
    for text in TEXTS:
        assert needs._may_split(text) is bool(_OLD_GATE.search(text)), repr(text)
        assert steps.may_split(text) is _old_may_split(text), repr(text)
        assert not steps.may_split(text) or needs._may_split(text), repr(text)  # request_steps relies on it
        passed += steps.may_split(text)
    assert 100 < passed < len(TEXTS)


def _old_strip_polite(clause: str) -> str:
    s = clause.strip()
    for _ in range(4):
        new = lexicon._POLITE.sub("", s, count=1).lstrip(" ,")
        if new == s:
            break
        s = new
    s = lexicon._SEARCHING.sub("Find ", s, count=1)
    return lexicon._TRAILING_POLITE.sub("", s).strip() or clause.strip()


def test_strip_polite_matches_the_plain_substitution():
    for text in TEXTS:
        assert lexicon._strip_polite(text) == _old_strip_polite(text), repr(text)


def test_near_words_finds_every_window():
    """Overlapping occurrences count ("tellet" holds "tell" and "let"), and the positions
    come out in order, once each."""
    low = "tellet, and soon well"
    words = ("tell", "let", "soon")
    got = near_words(low, words, 3, frozenset("tl,"))
    assert got == sorted(set(got))
    assert 3 in got  # "let" at 3, inside "tell"'s occurrence
    from toolsift.textscan import any_word

    assert near_words(low, any_word(words), 3, frozenset("tl,")) == got


def test_character_sets_are_re_s():
    assert WHITESPACE == {c for c in map(chr, range(128)) if re.fullmatch(r"\s", c)}
    assert "\x1c" in WHITESPACE and "_" in WORD_CHARS and "'" not in WORD_CHARS


def _unbounded(pattern: str) -> list[str]:
    try:
        from re import _parser as parser  # type: ignore[attr-defined]  # Python 3.11+
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse as parser  # type: ignore[no-redef]
    found: list[str] = []

    def walk(items) -> None:
        for op, av in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                if av[1] == parser.MAXREPEAT:
                    found.append(name)
                walk(av[2])
            elif name == "SUBPATTERN":
                walk(av[3])
            elif name == "BRANCH":
                for alt in av[1]:
                    walk(alt)
            elif name in ("ASSERT", "ASSERT_NOT"):
                walk(av[1])

    walk(parser.parse(pattern))
    return found


def test_splitter_patterns_have_bounded_repeats():
    """Linear time on hostile input: no pattern of the splitter or of the search's pre-check
    repeats without a bound (the old pre-check's "[.!?;]+" took seconds on 10,000 dots)."""
    from toolsift.decompose import step_patterns

    for module in (steps, step_patterns, needs):
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern):
                assert not _unbounded(value.pattern), f"{module.__name__}.{name}"
    assert _unbounded(_OLD_GATE.pattern)  # the check sees one
