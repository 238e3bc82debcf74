"""Analyzer.tokenize splits ASCII text without the regex and stems each word once (a
per-word memo): the terms must be exactly those of the regex-and-stemWords definition."""

from __future__ import annotations

import random
import re

import pytest

from toolsift.analyze import TOKEN_PATTERN, Analyzer, _with_exact, fold_accents


def _definition(an: Analyzer, text: str) -> tuple[str, ...]:
    text = fold_accents(text) if an.fold_accents else text
    text = text.lower() if an.lowercase else text
    tokens = [t for t in re.findall(TOKEN_PATTERN, text) if t not in an._stop]
    if an.stemmer is None or not tokens:
        return tuple(tokens)
    import Stemmer

    stems = Stemmer.Stemmer(an.stemmer).stemWords(tokens)
    return tuple(_with_exact(tokens, stems)) if an.exact_forms else tuple(stems)


def _texts() -> list[str]:
    rng = random.Random(5)
    alphabet = "abcXYZ019_ -.,;:!?'\"()[]{}/\\@#$%^&*+=<>|~`\t\n\r\x0b\x0c\x1c\x1f\x7féüßÆ中文١٢"
    words = ["running", "runs", "the", "a", "I", "send_email", "getUserID", "e-mail", "don't", "x", "42", "café",
             "Naïve", "STRASSE", "ﬁle", "über"]
    out = ["", "a", "ab", "I need to plan a trip to Paris next month, book a hotel near the Eiffel tower",
           "get_weather(city='Paris') -> temp_c; 3 days"]
    for _ in range(300):
        if rng.random() < 0.5:
            out.append("".join(rng.choice(alphabet) for _ in range(rng.randrange(60))))
        else:
            out.append(" ".join(rng.choice(words) + rng.choice(["", ",", ".", "!", "_x", "'s"])
                                for _ in range(rng.randrange(12))))
    return out


@pytest.mark.parametrize("an", [Analyzer(), Analyzer(stopwords="nltk", stemmer="english", fold_accents=True),
                                Analyzer(stopwords=None, lowercase=False),
                                Analyzer(stemmer="english", exact_forms=True)], ids=repr)
def test_tokenize_equals_regex_definition(an):
    for text in _texts():
        want = _definition(an, text)
        assert tuple(an.tokenize(text)) == want, repr(text)
        assert an._tokenize(text) == want  # again, from the word memo
