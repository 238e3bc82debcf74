"""Splitting a request into its steps: lines, enumerations, sentences, "and then" clauses.

Every regular expression uses bounded quantifiers without nested repetition, so
splitting is linear in the input length.
"""

from __future__ import annotations

import re

from ..schema import MAX_TEXT_CHARS
from .lexicon import _REQUEST, _VERBS, _strip_polite

__all__ = ["split_steps"]


# A bullet or number opening a line: "- x", "* x", "• x", "1. x", "2) x", "(3) x", "a) x".
_BULLET = re.compile(r"^\s{0,20}(?:[-*•·‣▪–—]|\(?\d{1,3}[.)]|\(?[a-hA-H]\))\s{1,10}")
# An inline enumeration marker: "1) " or "(2) " after whitespace, or "3. " only at the
# start or after punctuation ("steps: 1. x. 2. y"), so "send message 1. Then" is prose.
_INLINE_NUM = re.compile(r"(?:(?<=\s)|^)\(?(\d{1,2})\)(?=\s)|(?:(?<=[:;,.]\s)|^)(\d{1,2})\.(?=\s)")
# A sentence end: the punctuation run and the whitespace after it.
_SENT_END = re.compile(r"[.!?;]{1,10}[\"')\]]{0,3}\s{1,50}")
# Abbreviations whose period does not end a sentence.
_ABBREV = frozenset("""
mr mrs ms dr prof st vs etc e.g i.e eg ie inc ltd jr sr no approx u.s u.k d.c a.m p.m
mt ft fig dept est min max avg
""".split())
# Sequencing connectives that start a new step.
_SEQ = re.compile(
    r"(?:[,;:]\s{0,5}|\s{1,5})(?:and\s{1,5})?"
    r"(?:then|after\s{1,5}that|afterwards|afterward|next(?!\s{1,5}(?:week|month|year|day|time|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|morning|evening|night)\b)|finally|lastly|subsequently|additionally|"
    r"also|as\s{1,5}well(?=\s{1,5}(?:as\s{1,5})?\w))\b,?\s{1,5}",
    re.IGNORECASE,
)
# "and" / "but" followed by a new request ("and I want to", "and can you").
_AND_REQUEST = re.compile(
    r"(?:,\s{0,5}|\s{1,5})(?:and|but|plus)\s{1,5}(?=(?:i\s{1,5}(?:also\s{1,5})?(?:want|need|would|wish)|i'd|"
    r"(?:can|could|would)\s{1,5}you|please|tell\s{1,5}me|let\s{1,5}me)\b)",
    re.IGNORECASE,
)
# "and <verb>": a candidate split between two verb phrases; the verb is checked in code.
_AND_WORD = re.compile(r"(?:,\s{0,5}|\s{1,5})and\s{1,5}(?:also\s{1,5})?(?:please\s{1,5})?([A-Za-z]{2,20})\b")
_WORD = re.compile(r"[A-Za-z']{1,40}")

# Words one of which every match of a pattern contains (case-insensitively). On ASCII text
# ``lower()`` and IGNORECASE agree, so a text with none of them cannot match and skips the
# regex scan (most clauses: ~15 scans a request); other text always runs the regex.
_NEEDS: dict[re.Pattern[str], tuple[str, ...]] = {}
_IF = re.compile(r"\bif\b", re.IGNORECASE)
_NEEDS[_SEQ] = ("then", "after", "next", "finally", "lastly", "subsequently", "additionally", "also", "well")
_NEEDS[_AND_REQUEST] = ("and", "but", "plus")
_NEEDS[_AND_WORD] = ("and",)
_NEEDS[_REQUEST] = ("?", "you", "please", "want", "need", "wish", "i'd", "would", "looking", "help", "let", "tell",
                    "searching", "trying", "hoping", "interested")
# _REQUEST's one alternative without a fixed word: a question word opening the text.
_REQUEST_START = re.compile(r"\s{0,5}(?:how|what|which|when|where|who|why|is|are|do|does|should)\b", re.IGNORECASE)


def _may_match(pattern: re.Pattern[str], text: str) -> bool:
    """False only when ``pattern`` cannot match ``text`` (see ``_NEEDS``)."""
    if not text.isascii():
        return True
    low = text.lower()
    return any(w in low for w in _NEEDS[pattern])


def _asks(text: str) -> bool:
    """``_REQUEST.search(text)``, skipping the scan when it cannot match."""
    if not (_may_match(_REQUEST, text) or _REQUEST_START.match(text)):
        return False
    return _REQUEST.search(text) is not None


_QUOTE_SPAN = re.compile(r"\"[^\"\n]{0,500}\"|“[^”\n]{0,500}”|(?<!\w)'[^'\n]{0,500}'(?!\w)")


def _quoted(text: str) -> list[tuple[int, int]]:
    """Spans of quoted text: a "?" or "and" inside a quotation never splits a request."""
    return [m.span() for m in _QUOTE_SPAN.finditer(text)]


def _inside(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(a < pos < b for a, b in spans)


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _lines(text: str) -> list[str]:
    """Split off bulleted or numbered lines; other lines stay joined as prose."""
    raw = text.splitlines()
    if sum(1 for ln in raw if _BULLET.match(ln)) < 2:
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


def _sentences(text: str) -> list[str]:
    out: list[str] = []
    start = 0
    spans = _quoted(text)
    for m in _SENT_END.finditer(text):
        end = m.end()
        if end >= len(text):
            break
        if spans and _inside(m.start(), spans):
            continue
        punct = text[m.start()]
        if punct == ".":
            before = text[max(start, m.start() - 12):m.start()].split()
            token = before[-1].lower().lstrip("(\"'") if before else ""
            # "D.C.", "e.g.", "Dr." and single initials do not end a sentence; nor does a
            # period followed by a lower-case word ("approx. five").
            if token in _ABBREV or len(token) == 1 or not text[end].isupper() and not text[end].isdigit():
                continue
        out.append(text[start:m.start() + 1])
        start = end
    out.append(text[start:])
    return [s for s in out if s.strip()]


def _split_at(text: str, pattern: re.Pattern[str]) -> list[str]:
    # The connective stays at the head of the next piece, so pieces that are later
    # re-joined (context, not requests) read exactly as the user wrote them.
    if not _may_match(pattern, text):
        return [text] if text.strip() else []
    parts: list[str] = []
    start = 0
    spans = _quoted(text)
    for m in pattern.finditer(text):
        if spans and _inside(m.start(), spans):
            continue
        head = text[start:m.start()]
        # A conditional "if ..., then ..." is one step, not two.
        # Checks look at a bounded window of the head: a skipped match makes the head
        # grow, and scanning all of it each time would be quadratic.
        if pattern is _SEQ and m.group(0).strip(" ,;:").lower().startswith("then") and _IF.search(head[-500:]):
            continue
        if len(head[:200].split()) < 2:
            continue
        parts.append(head)
        start = m.start()
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _split_and_verbs(text: str) -> list[str]:
    """Split "book a flight and reserve a hotel" but not "salt and pepper"."""
    if not _may_match(_AND_WORD, text):
        return [text] if text.strip() else []
    parts: list[str] = []
    start = 0
    spans = _quoted(text)
    for m in _AND_WORD.finditer(text):
        if m.group(1).lower() not in _VERBS or spans and _inside(m.start(), spans):
            continue
        head, tail = text[start:m.start()], text[m.start(1):]
        # Both sides must be phrases ("search and replace text" stays whole), and the
        # head must itself look like a verb phrase or request.
        window = head[-500:]
        if len(head[:200].split()) < 2 or len(tail[:200].split()) < 2:
            continue
        if not (set(_words(window)) & _VERBS or _asks(window)):
            continue
        parts.append(head)
        start = m.start()
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _clause_splits(sentence: str) -> list[str]:
    out = [sentence]
    for splitter in (lambda s: _split_at(s, _SEQ), lambda s: _split_at(s, _AND_REQUEST), _split_and_verbs):
        out = [piece for s in out for piece in splitter(s)]
    return out


_LEAD = re.compile(r"^[\s,;:.]{0,20}(?:(?:and|then|also|additionally|next|finally|lastly|afterwards|afterward|"
                   r"subsequently|plus|after\s{1,5}that|as\s{1,5}well(?:\s{1,5}as)?)\b[\s,]{0,5}){0,3}",
                   re.IGNORECASE)


def _is_request(clause: str) -> bool:
    if _asks(clause):
        return True
    first = _words(_strip_polite(_LEAD.sub("", clause, count=1))[:60])
    return bool(first) and first[0] in _VERBS


def _steps(text: str, max_steps: int) -> list[tuple[str, str]]:
    """``(step text incl. context, the request clause alone)`` pairs."""
    text = text[:MAX_TEXT_CHARS]
    if not text.strip():
        return []
    clauses: list[str] = []
    for block in _lines(text):
        for part in _inline_enumeration(block):
            for sent in _sentences(part):
                clauses.extend(c.strip(" \t\r\n,;:") for c in _clause_splits(sent))
    clauses = [" ".join(c.split()) for c in clauses if c.strip(" \t\r\n,;:.")]
    if not clauses:
        whole = " ".join(text.split()) or text.strip()
        return [(whole, whole)]
    merged: list[list[str]] = []  # [full text, request core]
    pending: list[str] = []
    for c in clauses:
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
