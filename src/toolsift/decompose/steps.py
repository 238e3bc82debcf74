"""Splitting a request into its steps: lines, enumerations, sentences, "and then" clauses.

Every regular expression uses bounded quantifiers without nested repetition, so
splitting is linear in the input length. The clause patterns are in step_patterns.
The functions here are the reference implementation: on ASCII text the public ones (and
``_steps``) answer from the C++ splitter (steps_native), which gives the same steps.
"""

from __future__ import annotations

import re

from ..schema import MAX_TEXT_CHARS
from ..textscan import exists, finditer_at, has_line_break, scan, whole_word
from .lexicon import _REQUEST, _VERBS, _strip_polite
from .steps_native import native_may_split, native_search_steps, native_several_steps, native_steps
from .step_patterns import (_ABBREV, _AND_REQUEST, _AND_WORD, _BULLET, _CLAUSE_OPENER, _CLAUSE_WORDS, _COMMA_WORD,
                            _DONE, _IF, _INLINE_NUM, _NEEDS, _REQUEST_OPENS, _REQUEST_WORDS, _SCAN, _SENT_END, _SEQ,
                            _SPLITTER_GROUPS, _SUBORD, _SUBORD_HEAD, _THEN_CLAUSE, _WORD)

__all__ = ["may_split", "search_steps", "several_steps", "split_steps"]


def _lower(text: str) -> str | None:
    """``text.lower()`` when ``text`` is ASCII (where it keeps every position and agrees
    with ``re.IGNORECASE``), else ``None``."""
    return text.lower() if text.isascii() else None


def _asks(text: str) -> bool:
    """``_REQUEST.search(text) is not None``, trying only where a match can start."""
    low = _lower(text)
    if low is None:
        return _REQUEST.search(text) is not None
    return exists(_REQUEST, text, low, _REQUEST_WORDS, 13, _REQUEST_OPENS)


def _matches(pattern: re.Pattern[str], text: str, low: str | None):
    """``pattern.finditer(text)`` for a clause pattern of _SCAN; ``low``: ``_lower(text)``."""
    return scan(pattern, text, low, *_SCAN[pattern])


_QUOTE_SPAN = re.compile(r"\"[^\"\n]{0,500}\"|“[^”\n]{0,500}”|(?<!\w)'[^'\n]{0,500}'(?!\w)")
_QUOTE_CHAR = re.compile("[\"“']")  # what every quoted span opens with


def _quoted(text: str) -> list[tuple[int, int]]:
    """Spans of quoted text: a "?" or "and" inside a quotation never splits a request."""
    return [m.span() for m in finditer_at(_QUOTE_SPAN, text, [m.start() for m in _QUOTE_CHAR.finditer(text)])]


def _inside(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(a < pos < b for a, b in spans)


def _words(text: str) -> list[str]:
    low = _lower(text)  # _WORD is ASCII letters: lower-casing first finds the same words
    return _WORD.findall(low) if low is not None else [w.lower() for w in _WORD.findall(text)]


def _lines(text: str) -> list[str]:
    """Split off bulleted or numbered lines; other lines stay joined as prose."""
    raw = text.splitlines()
    if len(raw) < 2 or sum(1 for ln in raw if _BULLET.match(ln)) < 2:
        return [text]
    out: list[str] = []
    prose: list[str] = []
    for ln in raw:
        if _BULLET.match(ln):
            if prose:
                out.append(" ".join(prose))
                prose = []
            out.append(_BULLET.sub("", ln, count=1))
        elif ln.strip():
            if out and not prose and ln[:1].isspace():
                # An indented continuation line belongs to the previous item.
                out[-1] += " " + ln.strip()
            else:
                prose.append(ln.strip())
    if prose:
        out.append(" ".join(prose))
    # A lead-in such as "Please do the following:" asks for nothing by itself.
    return [s for s in out if s.strip() and not s.rstrip().endswith(":")] or [text]


def _inline_enumeration(text: str) -> list[str]:
    """Split "1) do x 2) do y" at markers numbered 1, 2, 3 ... in order."""
    # Two cuts need markers numbered 1 and 2 ("1)" or "01." ...); \d is 0-9 on ASCII text.
    if text.isascii() and not (("1)" in text or "1." in text) and ("2)" in text or "2." in text)):
        return [text]
    cuts: list[tuple[int, int]] = []
    expected = 1
    for m in _INLINE_NUM.finditer(text):
        if int(m.group(1) or m.group(2)) == expected:
            cuts.append((m.start(), m.end()))
            expected += 1
    if len(cuts) < 2:
        return [text]
    lead = text[:cuts[0][0]]
    # A lead-in of one word ("Please 1) ... 2) ...") asks for nothing by itself.
    parts = [lead] if len(lead[:100].split()) >= 2 else []
    for (_, end), nxt in zip(cuts, cuts[1:] + [(len(text), len(text))]):
        parts.append(text[end:nxt[0]])
    return [p for p in parts if p.strip() and not p.rstrip().endswith(":")]


_SENT_CHAR = re.compile(r"[.!?;]")  # what every _SENT_END match opens with
# A sentence end's last mark and the space after it (the punctuation run of _SENT_END cut to
# its last mark: "[.!?;]+..." and this find the same texts; this one opens with a plain class).
_PUNCT_SPACE = re.compile(r"[.!?;][\"')\]]{0,3}\s")


def _sentences(text: str) -> list[str]:
    # Every _SENT_END match has a _PUNCT_SPACE match at its last mark (one regex scan that
    # re skips through fast): without one, the text is one sentence.
    if _PUNCT_SPACE.search(text) is None:
        return [text] if text.strip() else []
    out: list[str] = []
    start = 0
    spans = None  # the quoted spans, found when a sentence end needs them
    for m in finditer_at(_SENT_END, text, [m.start() for m in _SENT_CHAR.finditer(text)]):
        end = m.end()
        if end >= len(text):
            break
        punct = text[m.start()]
        if punct == ".":
            before = text[max(start, m.start() - 12):m.start()].split()
            token = before[-1].lower().lstrip("(\"'") if before else ""
            # "D.C.", "e.g.", "Dr." and single initials do not end a sentence; nor does a
            # period followed by a lower-case word ("approx. five").
            if token in _ABBREV or len(token) == 1 or not text[end].isupper() and not text[end].isdigit():
                continue
        # Each check only skips a match, so the order is free: the quotation scan comes last.
        if spans is None:
            spans = _quoted(text)
        if spans and _inside(m.start(), spans):
            continue
        out.append(text[start:m.start() + 1])
        start = end
    out.append(text[start:])
    return [s for s in out if s.strip()]


def _split_at(text: str, pattern: re.Pattern[str], low: str | None) -> list[str]:
    # The connective stays at the head of the next piece, so pieces that are later
    # re-joined (context, not requests) read exactly as the user wrote them.
    parts: list[str] = []
    start = 0
    spans = None
    for m in _matches(pattern, text, low):
        head = text[start:m.start()]
        # A conditional "if ..., then ..." is one step, not two.
        # Checks look at a bounded window of the head: a skipped match makes the head
        # grow, and scanning all of it each time would be quadratic.
        if pattern is _SEQ and m.group(0).strip(" ,;:").lower().startswith("then") and _IF.search(head[-500:]):
            continue
        if len(head[:200].split()) < 2:
            continue
        # Each check only skips a match, so the order is free: the quotation scan comes last.
        if spans is None:
            spans = _quoted(text)
        if spans and _inside(m.start(), spans):
            continue
        parts.append(head)
        start = m.start()
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _split_and_verbs(text: str, low: str | None) -> list[str]:
    """Split "book a flight and reserve a hotel" but not "salt and pepper"."""
    parts: list[str] = []
    start = 0
    spans = None
    for m in _matches(_AND_WORD, text, low):
        if m.group(1).lower() not in _VERBS:
            continue
        head, tail = text[start:m.start()], text[m.start(1):m.start(1) + 200]
        # Both sides must be phrases ("search and replace text" stays whole), and the
        # head must itself look like a verb phrase or request.
        window = head[-500:]
        if len(head[:200].split()) < 2 or len(tail.split()) < 2:
            continue
        # Each check only skips a match, so the order is free: the quotation scan late.
        if spans is None:
            spans = _quoted(text)
        if spans and _inside(m.start(), spans):
            continue
        if _VERBS.isdisjoint(_words(window)) and not _asks(window):
            continue
        parts.append(head)
        start = m.start()
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _split_comma_clauses(text: str, low: str | None) -> list[str]:
    """Split a comma series of clauses: "get X, calculate Y, what is Z" but not "Rome, Paris"."""
    parts: list[str] = []
    start = 0
    spans = None
    for m in _COMMA_WORD.finditer(text):  # opens with a literal ",": re skips ahead fast
        tail = text[m.start(2):m.start(2) + 200]  # the checks read no further
        # ", and <verb>" is _split_and_verbs' rule; ", and what ..." opens a clause here.
        if not _CLAUSE_OPENER.match(tail[:40]) and (m.group(1) or m.group(2).lower() not in _VERBS):
            continue
        head = text[start:m.start()]
        # The head is a clause of its own (3+ words, a verb phrase or request), not a
        # fronted subordinate clause; the tail is a phrase.
        window = head.lstrip(" ,;:")[-500:]
        if len(head[:200].split()) < 3 or len(tail.split()) < 2 or _SUBORD_HEAD.match(head[:40]):
            continue
        # Each check only skips a match, so the order is free: the quotation scan late.
        if spans is None:
            spans = _quoted(text)
        if spans and _inside(m.start(), spans):
            continue
        if _VERBS.isdisjoint(_words(window)) and not _asks(window):
            continue
        parts.append(head)
        start = m.start()
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


# The clause splitters in order, each with its word groups (step_patterns._SPLITTER_GROUPS).
# Each splitter takes a piece and _lower(piece).
_SPLITTERS = tuple(zip((
    lambda s, low: _split_at(s, _SEQ, low),
    lambda s, low: _split_at(s, _THEN_CLAUSE, low),
    lambda s, low: _split_at(s, _AND_REQUEST, low),
    _split_and_verbs,
    _split_comma_clauses,
), _SPLITTER_GROUPS))


def _has_any(low: str, words: tuple[str, ...]) -> bool:
    for w in words:
        if w in low:
            return True
    return False


def _clause_splits(sentence: str) -> list[str]:
    if not sentence.strip():
        return []
    low = _lower(sentence)
    out = [sentence]
    for splitter, groups in _SPLITTERS:
        # Every piece is a non-blank part of the sentence: when the sentence lacks a word of
        # a group, no piece has a match, and the splitter would return each piece as it is.
        # (Plain loops: this runs for every sentence of every search.)
        if low is not None:
            for words in groups:
                for w in words:
                    if w in low:
                        break
                else:
                    break  # no word of this group
            else:
                out = [piece for s in out for piece in splitter(s, low if s is sentence else _lower(s))]
            continue
        out = [piece for s in out for piece in splitter(s, None)]
    return out


# Connectives opening a step, and a clause saying the previous one is over ("once done"):
# neither is the step's request.
_LEAD = re.compile(r"^[\s,;:.]{0,20}(?:(?:(?:and|then|also|additionally|next|finally|lastly|afterwards|afterward|"
                   r"subsequently|plus|after\s{1,5}that|as\s{1,5}well(?:\s{1,5}as)?|" + _DONE + r")\b)"
                   r"[\s,]{0,5}){0,3}", re.IGNORECASE)
# A fronted temporal clause ("after the meeting, deliver ..."): the request follows its comma.
_FRONTED = re.compile(r"^" + _SUBORD + r"\b[^,.;:!?\n]{1,80},\s{0,5}", re.IGNORECASE)
# An ordinal opening the first step ("First, ...", "First I need ..."): not the request's verb.
_ORDINAL = re.compile(r"^(?:first(?:ly)?|to\s{1,5}(?:begin|start)(?:\s{1,5}with)?)\b[\s,]{0,5}", re.IGNORECASE)


# A clause that opens by saying the previous step is over ("once that is done ...", "when
# finished, ..."): an instruction to whoever does the steps, so a step even when it does not
# start with a verb of the list. (Not "then ...": stories use it too.)
_STEP_OPENER = re.compile(r"^[\s,;:.]{0,20}(?:and\s{1,5})?" + _DONE + r"\b[\s,]{0,5}\S{1,40}\s{1,5}\S",
                          re.IGNORECASE)


def _is_request(clause: str) -> bool:
    if _asks(clause) or _STEP_OPENER.match(clause):
        return True
    core = _ORDINAL.sub("", _FRONTED.sub("", _LEAD.sub("", clause, count=1), count=1), count=1)
    if core != clause and _asks(core):  # "once done, what is ..."
        return True
    first = _WORD.search(_strip_polite(core)[:60])  # the first of _words(...)
    return first is not None and first.group().lower() in _VERBS


def _clauses(text: str) -> list[str]:
    """The clauses of non-blank ``text`` (at most MAX_TEXT_CHARS), whitespace collapsed."""
    clauses: list[str] = []
    for block in _lines(text):
        for part in _inline_enumeration(block):
            for sent in _sentences(part):
                clauses.extend(c.strip(" \t\r\n,;:") for c in _clause_splits(sent))
    return [" ".join(c.split()) for c in clauses if c.strip(" \t\r\n,;:.")]


def _steps(text: str, max_steps: int) -> list[tuple[str, str]]:
    """``(step text incl. context, the request clause alone)`` pairs."""
    got = native_steps(text, max_steps)
    return _steps_py(text, max_steps) if got is None else got


def _steps_py(text: str, max_steps: int) -> list[tuple[str, str]]:
    """:func:`_steps` by the Python rules (the reference; every non-ASCII text)."""
    text = text[:MAX_TEXT_CHARS]
    if not text.strip():
        return []
    return _merge(text, _clauses(text), max_steps)


def _merge(text: str, clauses: list[str], max_steps: int) -> list[tuple[str, str]]:
    """The steps of ``text`` from its clauses: each request clause with the context before it."""
    if not clauses:
        whole = " ".join(text.split()) or text.strip()
        return [(whole, whole)]
    merged: list[list[str]] = []  # [full text, request core]
    pending: list[str] = []
    if len(clauses) == 1:  # one clause is one step, whether it asks for something or not
        merged = [[clauses[0], clauses[0]]]
    for c in clauses if len(clauses) > 1 else ():
        if _is_request(c):
            merged.append([" ".join(pending + [c]), c])
            pending = []
        else:
            pending.append(c)
    if pending:
        if merged:
            merged[-1][0] = " ".join([merged[-1][0]] + pending)
        else:
            joined = " ".join(pending)
            merged = [[joined, joined]]
    max_steps = max(1, int(max_steps))
    if len(merged) > max_steps:
        tail = merged[max_steps - 1:]
        merged = merged[:max_steps - 1] + [[" ".join(m[0] for m in tail), " ".join(m[1] for m in tail)]]
    return [(_LEAD.sub("", full, count=1).strip() or full, _LEAD.sub("", core, count=1).strip() or core)
            for full, core in merged]


# What any rule above needs to find a second step: a line break, a sentence end, an
# enumeration number, a word a clause rule starts at, a temporal clause after a comma or
# colon, or a comma before a verb or question (_COMMA_WORD, checked below). One regular
# expression each, not one alternation: re would try an alternation at every position, and
# skips ahead only to a pattern's literal or plain opening character.
_NUMBER_MARK = re.compile(r"\d[).]")
_SUBORD_AFTER = re.compile(r"[,:;]\s{0,5}" + _SUBORD + r"\b", re.IGNORECASE)
_CLAUSE_WORD = re.compile(r"\b(?:" + "|".join(_CLAUSE_WORDS) + r")\b", re.IGNORECASE)


def may_split(text: str) -> bool:
    """False only when :func:`split_steps` returns one step for ``text`` whatever its
    length (a cheap check for search paths: most short queries need no splitter)."""
    got = native_may_split(text)
    return _may_split_py(text) if got is None else got


def _may_split_py(text: str) -> bool:
    """:func:`may_split` by the Python rules."""
    low = _lower(text)
    if low is None:
        return bool(has_line_break(text) or _PUNCT_SPACE.search(text) or _NUMBER_MARK.search(text)
                    or _SUBORD_AFTER.search(text) or _CLAUSE_WORD.search(text) or _comma_clause(text))
    # ASCII text: the same checks, the likeliest first, with str.find where it is faster
    # (_SUBORD_AFTER needs a comma, semicolon or colon and a subordinator's word).
    return (has_line_break(text) or whole_word(low, _CLAUSE_WORDS) or _PUNCT_SPACE.search(text) is not None
            or _number_mark(text)
            or ("," in text or ";" in text or ":" in text) and _has_any(low, _NEEDS[_THEN_CLAUSE])
            and _SUBORD_AFTER.search(text) is not None
            or _comma_clause(text))


def _number_mark(text: str) -> bool:
    """``_NUMBER_MARK.search(text)`` for ASCII text (where \\d is 0-9)."""
    for mark in ").":
        k = text.find(mark)
        while k >= 0:
            if k and text[k - 1] in "0123456789":
                return True
            k = text.find(mark, k + 1)
    return False


def _comma_clause(text: str) -> bool:
    """A comma before a verb or a question or request opener (_split_comma_clauses' match)."""
    for m in _COMMA_WORD.finditer(text):
        if m.group(2).lower() in _VERBS or _CLAUSE_OPENER.match(text, m.start(2)):
            return True
    return False


def several_steps(text: str, max_steps: int) -> list[str] | None:
    """``split_steps(text, max_steps=max_steps)`` when that is two steps or more, else
    ``None``: what a search asks. A text of one clause (most requests) stops there, before
    the clauses are read as requests or context.

    Args:
        text: The request.
        max_steps: An ``int``, as :func:`split_steps` takes it.
    """
    got = native_several_steps(text, max_steps)
    return _several_steps_py(text, max_steps) if got is None else got or None


def search_steps(text: str, max_steps: int) -> list[str] | None:
    """``several_steps(text, max_steps) if may_split(text) else None``, in one call of the
    C++ splitter on ASCII text: what a search asks (search.needs)."""
    got = native_search_steps(text, max_steps)
    if got is None:
        return _several_steps_py(text, max_steps) if _may_split_py(text) else None
    return got or None


def _several_steps_py(text: str, max_steps: int) -> list[str] | None:
    """:func:`several_steps` by the Python rules."""
    text = text[:MAX_TEXT_CHARS]
    if not text.strip():
        return None
    clauses = _clauses(text)
    if len(clauses) < 2:  # no clauses or one: one step
        return None
    steps = [full for full, _ in _merge(text, clauses, max_steps)]
    return steps if len(steps) >= 2 else None


def split_steps(text: str, *, max_steps: int = 8) -> list[str]:
    """Split a request into sub-task clauses (no LLM).

    Context sentences that ask for nothing ("I am planning a trip.") are attached to the
    following request (or the previous one, at the end) rather than becoming steps.

    Args:
        text: The request.
        max_steps: Upper bound; surplus clauses are merged into the last step.

    Returns:
        At least one clause for non-blank text; ``[]`` for blank text.
    """
    return [full for full, _ in _steps(text, max_steps)]
