"""Splitting a request into its steps: lines, enumerations, sentences, "and then" clauses.

Every regular expression uses bounded quantifiers without nested repetition, so
splitting is linear in the input length.
"""

from __future__ import annotations

import re

from ..schema import MAX_TEXT_CHARS
from .lexicon import _REQUEST, _VERBS, _strip_polite

__all__ = ["may_split", "split_steps"]


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
# Temporal subordinators: a clause they open is placed in time against another step.
_SUBORD = r"(?:once|when|after|before|as\s{1,5}soon\s{1,5}as)"
# A clause that says the previous step is over ("once done", "when that is finished", "after
# you've completed it"): a subordinator, an optional subject and auxiliary, a completion predicate.
_DONE = (_SUBORD + r"\s{1,5}(?:(?:that|this|it|these|those|they|you|we|i|everything|all\s{1,5}that)"
         r"(?:'s|'re|'ve|\s{1,5}(?:is|are|has|have|was|were|had|gets?|got))?(?:\s{1,5}been)?\s{1,5})?"
         r"(?:done|finished|complete|completed|over|ready|through)(?:\s{1,5}(?:with\s{1,5})?(?:it|that|this))?\b")
# A coordinated clause that opens with a temporal clause starts a step: ", and once that is
# done X", "; when finished X", ", and after the meeting, X" (a fronted clause closed by a comma).
_THEN_CLAUSE = re.compile(
    r"(?:[,;:]\s{0,5}(?:and\s{1,5})?|\s{1,5}and\s{1,5})(?=" + _DONE + r"|" + _SUBORD + r"\b[^,.;:!?\n]{1,80},)",
    re.IGNORECASE,
)
# A comma series of clauses ("get X, calculate Y, what is Z, and ..."): a comma followed by an
# imperative verb or a question/request opener. The verb is checked in code.
_COMMA_WORD = re.compile(r",\s{1,5}(and\s{1,5})?(?:please\s{1,5})?([A-Za-z']{2,20})\b", re.IGNORECASE)
_CLAUSE_OPENER = re.compile(r"(?:what|how|where|who|(?:can|could|would|will)\s{1,5}you|i\s{1,5}(?:also\s{1,5})?"
                            r"(?:want|need|wish|would\s{1,5}like)|i'd\s{1,5}like|tell\s{1,5}me|let\s{1,5}me)\b",
                            re.IGNORECASE)
# A head that opens with a subordinator ends at its comma: "If it rains, book ..." is one clause.
_SUBORD_HEAD = re.compile(r"^[\s,;:]{0,5}(?:(?:and|then)\s{1,5})?(?:if|when|whenever|once|after|before|unless|"
                          r"while|although|though|because|since|as|until|whether)\b", re.IGNORECASE)

# Words one of which every match of a pattern contains (case-insensitively). On ASCII text
# ``lower()`` and IGNORECASE agree, so a text with none of them cannot match and skips the
# regex scan (most clauses: ~15 scans a request); other text always runs the regex.
_NEEDS: dict[re.Pattern[str], tuple[str, ...]] = {}
_IF = re.compile(r"\bif\b", re.IGNORECASE)
_NEEDS[_SEQ] = ("then", "after", "next", "finally", "lastly", "subsequently", "additionally", "also", "well")
_NEEDS[_AND_REQUEST] = ("and", "but", "plus")
_NEEDS[_AND_WORD] = ("and",)
_NEEDS[_THEN_CLAUSE] = ("once", "when", "after", "before", "soon")
_NEEDS[_COMMA_WORD] = (",",)
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


def _split_comma_clauses(text: str) -> list[str]:
    """Split a comma series of clauses: "get X, calculate Y, what is Z" but not "Rome, Paris"."""
    if not _may_match(_COMMA_WORD, text):
        return [text] if text.strip() else []
    parts: list[str] = []
    start = 0
    spans = _quoted(text)
    for m in _COMMA_WORD.finditer(text):
        if spans and _inside(m.start(), spans):
            continue
        tail = text[m.start(2):]
        # ", and <verb>" is _split_and_verbs' rule; ", and what ..." opens a clause here.
        if not _CLAUSE_OPENER.match(tail[:40]) and (m.group(1) or m.group(2).lower() not in _VERBS):
            continue
        head = text[start:m.start()]
        # The head is a clause of its own (3+ words, a verb phrase or request), not a
        # fronted subordinate clause; the tail is a phrase.
        window = head.lstrip(" ,;:")[-500:]
        if len(head[:200].split()) < 3 or len(tail[:200].split()) < 2 or _SUBORD_HEAD.match(head[:40]):
            continue
        if not (set(_words(window)) & _VERBS or _asks(window)):
            continue
        parts.append(head)
        start = m.start()
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _clause_splits(sentence: str) -> list[str]:
    out = [sentence]
    for splitter in (lambda s: _split_at(s, _SEQ), lambda s: _split_at(s, _THEN_CLAUSE),
                     lambda s: _split_at(s, _AND_REQUEST), _split_and_verbs, _split_comma_clauses):
        out = [piece for s in out for piece in splitter(s)]
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
    first = _words(_strip_polite(core)[:60])
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


# What any rule above needs to find a second step: a line break, a sentence end, an
# enumeration number, a word a clause rule starts at, a temporal clause after a comma or
# colon, or a comma before a verb or question (_COMMA_WORD, checked below).
_MAY_SPLIT = re.compile(r"\n|[.!?;]+[\"')\]]{0,3}\s|\d[).]|\b(?:and|but|plus|then|after|afterwards?|next|"
                        r"finally|lastly|subsequently|additionally|also|well)\b|[,:;]\s{0,5}" + _SUBORD + r"\b",
                        re.IGNORECASE)


def may_split(text: str) -> bool:
    """False only when :func:`split_steps` returns one step for ``text`` whatever its
    length (a cheap check for search paths: most short queries need no splitter)."""
    if _MAY_SPLIT.search(text):
        return True
    for m in _COMMA_WORD.finditer(text):
        if m.group(2).lower() in _VERBS or _CLAUSE_OPENER.match(text, m.start(2)):
            return True
    return False


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
