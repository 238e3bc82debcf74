"""The step splitter, bit for bit: every output against digests of the implementation
before it was made fast (commit 126fbc7's decompose/steps.py and search/needs.py), with one
deliberate change since: the pre-checks see every line break ``str.splitlines`` splits at,
not only "\n" (36 edge inputs' ``may_split`` went from False to True; nothing else moved).

Per input the digest covers ``_steps(text, 8)`` (each step's full text and its request
clause, which :func:`split_steps` and ``decompose`` return), ``split_steps(text,
max_steps=3)`` (the merge of surplus steps), :func:`may_split` and ``request_steps``'
decision for the text as a raw query. Two golden files in ``tests/data``:

* ``steps_golden_edge.txt``: seeded generated inputs (quotes, bullets, numbering, unicode,
  line separators, punctuation and whitespace runs, very long texts): the first
  ``FAST_COUNT`` in the fast tier, all of them in the slow tier.
* ``steps_golden_data.txt``: every query text of the five shared sets (the four MFTR sets'
  queries, UltraTool's questions and plan steps) and the stress set's requests: slow tier.

Each line is ``<input digest> <output digest>`` (16 hex characters of sha256), in input
order, so a failure names the first input whose output changed (or whose input changed:
the generator or the data moved, not the splitter). Regenerate ONLY from an
implementation known to be right: ``PYTHONPATH=src python -m tests.test_steps_golden``.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from toolsift.decompose.steps import _steps, may_split, split_steps
from toolsift.errors import QueryError
from toolsift.query_types import Query
from toolsift.search import needs
from toolsift.search.needs import request_steps

GOLDEN = Path(__file__).parent / "data"
EDGE_FILE = GOLDEN / "steps_golden_edge.txt"
DATA_FILE = GOLDEN / "steps_golden_data.txt"
EDGE_SEED = 20261128
EDGE_COUNT = 6000
FAST_COUNT = 1200  # the fast tier's share of the edge inputs (fixed ones first)

_ST = SimpleNamespace(dense={"description": None})  # request_steps only asks whether there are dense fields
_CFG = SimpleNamespace(split_steps=True)


def _hex(data: str) -> str:
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _decision(text: str) -> list[str] | None | str:
    try:
        q = Query.from_text(text)
    except QueryError as exc:  # blank, too long or a lone surrogate: no raw query to split
        return f"rejected: {type(exc).__name__}"
    return request_steps(_ST, _CFG, [q])[0]  # type: ignore[arg-type]


def output(text: str) -> str:
    """Everything the splitter says about ``text``, as JSON (ASCII: lone surrogates too)."""
    return json.dumps({"steps": _steps(text, 8), "three": split_steps(text, max_steps=3),
                       "may": may_split(text), "request": _decision(text)}, ensure_ascii=True)


def line(text: str) -> str:
    return f"{_hex(text)} {_hex(output(text))}"


# ------------------------------------------------------------------------- inputs

_WORDS = ("book a flight to Rome", "send an email", "find the weather", "check", "create", "delete", "list",
          "get the stock price of AAPL", "order pizza", "play music", "set a reminder", "translate",
          "remind me", "calculate", "search and replace text", "salt and pepper", "fish and chips", "Paris",
          "the", "report", "it", "my boss", "tomorrow", "x", "I", "we", "you", "Dr.", "e.g.", "U.S.", "a.m.",
          "approx.", "St.", "No.", "etc.", "Mr. Smith", "D.C.", "3.5", "10", "42.", "v2.0")
_TRIGGERS = ("and", "and then", "then", "but", "plus", "also", "as well", "as well as", "after that",
             "afterwards", "afterward", "next", "next week", "next Monday", "finally", "lastly",
             "subsequently", "additionally", "once done", "when that is finished", "after you've completed it",
             "once it's done with it", "before", "as soon as", "after the meeting,", "when", "if", "if it rains,",
             "I want to", "I also need", "I'd like", "I would like", "can you", "could you", "please",
             "tell me", "let me know", "let's", "what", "how", "which", "who", "why", "is", "do", "should",
             "I'm looking for", "I am trying", "help me", "looking for", "First,", "firstly", "to begin with",
             "and also please", "and please", "unless", "because", "while", "whether")
_PUNCT = (",", ", ", ";", ": ", ".", ". ", "?", "? ", "!", "...", "?!", ";;", ".)", '." ', "'. ", "]. ",
          ",,", " , ", ":", "--", "&", "/", "(", ")")
_SPACE = (" ", " ", " ", " ", "  ", "\t", "\n", "\n\n", "\r\n", "\n   ", "\u00a0", "\u3000", "\u2028",
          "\u0085", "\x0b", "\x0c", "\x1c", "", " \n ")
_QUOTES = ('"', "'", "\u201c", "\u201d", "\u2018", "\u2019", '"and then what?"', "'hi there. and bye'",
           "\u201cbook it, then send it\u201d", "it's", "'s", "can't", "'")
_BULLETS = ("- ", "* ", "\u2022 ", "\u00b7 ", "\u2013 ", "\u2014 ", "1. ", "2. ", "3. ", "1) ", "2) ", "3) ",
            "(1) ", "(2) ", "a) ", "b) ", "(c) ", "  - ", "    ", "12) ", "999. ")
_INLINE = ("1)", "2)", "3)", "(1)", "(2)", "(3)", "1.", "2.", "3.", "4)", "0)", "10)")
_UNICODE = ("caf\u00e9", "na\u00efve", "\u0130stanbul", "\u212aelvin", "stra\u00dfe", "\ufb01le", "\u00c9crire",
            "\u03a3\u03bf\u03c6\u03af\u03b1", "\u6771\u4eac", "\U0001f600", "\u0391ND", "\u0410nd", "AND",
            "ThEn", "PLEASE", "\u00bfqu\u00e9?", "\u2026", "\u061f", "\u3002", "\uff1f", "\ud800", "e\u0301")
_POOLS = (_WORDS, _WORDS, _WORDS, _TRIGGERS, _TRIGGERS, _PUNCT, _SPACE, _QUOTES, _UNICODE, _INLINE)


def _random_text(rng: random.Random) -> str:
    out: list[str] = []
    for _ in range(rng.randint(1, 45)):
        if out and out[-1].endswith("\n") and rng.random() < 0.5:
            out.append(rng.choice(_BULLETS))
        pool = rng.choice(_POOLS)
        tok = rng.choice(pool)
        if pool is _WORDS and rng.random() < 0.2:
            tok = tok.capitalize() if rng.random() < 0.7 else tok.upper()
        out.append(tok)
        out.append(" " if rng.random() < 0.75 else rng.choice(_SPACE))
    return "".join(out)


def _long_texts(rng: random.Random) -> list[str]:
    """Very long inputs and runs (some beyond MAX_TEXT_CHARS, which the splitter truncates)."""
    out = ["." * 5000, "?" * 300 + " x", ";" * 2000, ", and " * 3000, "and " * 6000, '"' * 1001, "'" * 999,
           "1) " * 500, "1) x 2) y " * 300, "- x\n" * 1200, "\n" * 5000, " " * 5000, "a" * 120_000,
           ", book " * 4000, "book a flight and send an email, " * 700, "If x, then " * 2000,
           "Send it. " * 3000, "once done " * 2000, "after the meeting, " * 3000, "\u201c" + "x and y " * 2000,
           "1. a\n" + "   indented\n" * 2000 + "2. b\n", "e.g. " * 5000, "A. " * 5000]
    for n in (500, 2000, 10_000, 40_000, 110_000):
        parts: list[str] = []
        size = 0
        while size < n:
            parts.append(_random_text(rng))
            size += len(parts[-1])
        out.append("".join(parts))
    return out


def edge_inputs() -> list[str]:
    """The seeded generated inputs (deterministic: ``random.Random`` with an int seed)."""
    rng = random.Random(EDGE_SEED)
    fixed = ["", " ", "\n", "x", "and", "then", "Then.", "1)", "- a\n- b", "a) x\nb) y", "(1) x (2) y",
             "Steps: 1. create a folder. 2. upload the photo.", "Please 1) create 2) upload 3) share",
             "Do this:\n1. Download report.pdf\n2. Summarize it\n3. Send it to John", "I need salt and pepper.",
             'Can you translate "Hello. How are you? And then what?" to French?',
             "First create a reminder for 9am, and once done order a pizza. Also look up AAPL."]
    return fixed + [_random_text(rng) for _ in range(EDGE_COUNT)] + _long_texts(rng)


def data_inputs() -> list[str]:
    """Every query text of the five shared sets, then the stress set's requests."""
    from toolsift.evaluate.datasets import MftrDataset
    from toolsift.evaluate.pooled import POOLED_SETS, PooledQuery
    from toolsift.evaluate.stress import STRESS_SIZE, stress_requests
    from toolsift.evaluate.ultratool_data import UltraToolDataset

    from .conftest import dataset

    sets = [MftrDataset.load(dataset(name)) for name in POOLED_SETS]
    texts = [q.text for ds in sets for q in ds.queries]
    ultra = UltraToolDataset.load(dataset("ultratool"))
    texts += [q.question for q in ultra.queries] + [s for q in ultra.queries for s in q.steps]
    # toolsift.evaluate.pooled.load_pseudo("stress"), without loading the four sets again.
    pooled = tuple(PooledQuery(q.id, q.text, tuple(q.labels), f"mftr-{ds.name}") for ds in sets for q in ds.queries)
    texts += [q.text for q in stress_requests(pooled, n=STRESS_SIZE, seed=0)]
    return texts


# ------------------------------------------------------------------------- tests


def _compare(texts: list[str], path: Path, *, prefix: bool = False) -> list[dict]:
    """Compare each input's line with the golden file's (all of it, or its first
    ``len(texts)`` lines with ``prefix``); returns the outputs."""
    want = path.read_text().split("\n")
    header, want = want[0], [w for w in want[1:] if w]
    if prefix:
        want = want[:len(texts)]
    assert len(want) == len(texts), f"{path.name}: {len(want)} golden lines for {len(texts)} inputs ({header})"
    outs = []
    for i, (text, w) in enumerate(zip(texts, want)):
        out = output(text)
        got = f"{_hex(text)} {_hex(out)}"
        if got != w:
            what = "the INPUT changed (generator or data moved)" if got[:16] != w[:16] else "the output changed"
            pytest.fail(f"{path.name}: input {i}: {what}: {text[:300]!r} ({len(text)} chars) -> {out[:600]}")
        got_out = json.loads(out)
        # request_steps leaves out its coarse check once the splitter is loaded: sound only
        # while every text the splitter's own check passes passes the coarse one too.
        assert not got_out["may"] or needs._may_split(text), f"{path.name}: input {i}: {text[:300]!r}"
        outs.append(got_out)
    return outs


def test_edge_inputs_split_as_before():
    """The first FAST_COUNT seeded edge inputs: the same steps, pre-checks and decision as
    before. They exercise the rules (many split, many do not), so the check is not vacuous."""
    outs = _compare(edge_inputs()[:FAST_COUNT], EDGE_FILE, prefix=True)
    assert 150 < sum(len(o["steps"]) >= 2 for o in outs) < FAST_COUNT * 0.8
    assert sum(not o["may"] for o in outs) > 20


@pytest.mark.slow
def test_all_edge_inputs_split_as_before():
    """Every seeded edge input, the very long ones too."""
    _compare(edge_inputs(), EDGE_FILE)


@pytest.mark.slow
@pytest.mark.needs_data
def test_shared_set_queries_split_as_before():
    """Every query of the five shared sets and every stress request: the same as before."""
    _compare(data_inputs(), DATA_FILE)


def _write(texts: list[str], path: Path, what: str) -> None:
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"# {len(texts)} inputs: {what}; <sha256[:16] of input> <sha256[:16] of output>\n"
                    + "".join(line(t) + "\n" for t in texts))


if __name__ == "__main__":  # regenerate (only from a known-right implementation)
    _write(edge_inputs(), EDGE_FILE, f"edge_inputs(), seed {EDGE_SEED}")
    if "--edge-only" not in sys.argv:
        _write(data_inputs(), DATA_FILE, "data_inputs()")
