"""The C++ step splitter (decompose.steps_native, cpp/src/step_*.cpp) against the Python
rules it ports (decompose.steps' ``*_py`` reference functions), output for output: on the
golden inputs (tests/test_steps_golden.py: a subset in the fast tier, all of them in the
slow tier), on seeded random ASCII text heavy in the rules' punctuation, connectives and
whitespace, and on long hostile texts, whose cost must grow linearly."""

from __future__ import annotations

import random
import time

import pytest

from toolsift.decompose import steps
from toolsift.decompose.steps_native import splitter

from .test_steps_golden import _BULLETS, _POOLS, FAST_COUNT, _long_texts, data_inputs, edge_inputs
from .test_steps_scan import _SEPS, _TOKENS

SP = splitter()


def test_the_core_has_the_splitter():
    assert SP is not None  # a core built from this tree has it (an older one: Python path)


def _check(texts: list[str]) -> int:
    """Every answer of the C++ splitter equals the Python rules'; returns how many texts
    split into two steps or more (so a run can show it exercised the rules)."""
    several = 0
    for text in texts:
        if not text.isascii():
            assert SP.steps(text, 8) is None and SP.may_split(text) is None  # not taken
            continue
        want = steps._steps_py(text, 8)
        assert SP.steps(text, 8) == want, repr(text[:300])
        assert SP.steps(text, 3) == steps._steps_py(text, 3), repr(text[:300])
        may = steps._may_split_py(text)
        assert SP.may_split(text) is may, repr(text[:300])
        want_several = steps._several_steps_py(text, 8)
        assert (SP.several_steps(text, 8) or None) == want_several, repr(text[:300])
        assert (SP.search_steps(text, 8) or None) == (want_several if may else None), repr(text[:300])
        several += len(want) >= 2
    return several


def test_golden_inputs_fast_tier():
    """The golden test's fast-tier edge inputs (most are not ASCII: the Python path) and
    every tenth query text of the five sets and the stress set."""
    assert _check(edge_inputs()[:FAST_COUNT] + data_inputs()[::10]) > 100


@pytest.mark.slow
def test_all_golden_inputs():
    texts = edge_inputs() + data_inputs()
    assert sum(t.isascii() for t in texts) > 12_000
    assert _check(texts) > 1000


def _random_ascii(seed: int, n: int) -> list[str]:
    """Word soups of the golden and scan tests' ASCII tokens, with every ASCII character
    now and then (control characters, \\x1c-\\x1f, NUL) and runs of spaces."""
    tokens = [t for pool in (*_POOLS, _BULLETS, _TOKENS, _SEPS) for t in pool if t.isascii()]
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(0, 40)):
            r = rng.random()
            tok = rng.choice(tokens) if r < 0.8 else chr(rng.randrange(128))
            parts.append(tok.upper() if rng.random() < 0.05 else tok)
            parts.append(rng.choice((" ", " ", " ", "", "  ", "      ", "\t", "\n", "\r\n", ", ", "\x0b", "\x1f")))
        out.append("".join(parts))
    return out


def test_random_ascii_text():
    assert _check(_random_ascii(20261128, 3000)) > 300


@pytest.mark.slow
def test_random_ascii_text_more():
    assert _check(_random_ascii(7, 40_000)) > 4000


def test_long_hostile_texts():
    """The golden set's very long inputs (runs of one mark, of "and", of quotes; beyond
    MAX_TEXT_CHARS too): the same answers."""
    _check([t for t in _long_texts(random.Random(3)) if t.isascii()])


def _cpu(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.thread_time()
        SP.steps(text, 8)
        SP.may_split(text)
        best = min(best, time.thread_time() - t0)
    return best


@pytest.mark.parametrize("unit", [", and ", "and ", "If x, then ", "1) x 2) y ", "'a ", '"', ".", "e.g. ",
                                  "book a flight and send an email, ", "once done ", "after the meeting, "])
def test_linear_in_the_text_length(unit):
    """Eight times the text costs about eight times the work, not sixty-four: this thread's
    CPU time (not the process's, not wall time), best of three, with room for noise."""
    small, large = unit * (8_000 // len(unit)), unit * (64_000 // len(unit))
    assert _cpu(large) < 24 * max(_cpu(small), 1e-4)
