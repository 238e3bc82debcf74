"""The step splitter's patterns (decompose.steps), and what says where each can match:
the words every match holds (``_NEEDS``) and where a match can start (``_SCAN``).

Every regular expression uses bounded quantifiers without nested repetition, so
splitting is linear in the input length (tests/test_steps_scan.py checks it).
"""

from __future__ import annotations

import re

from ..textscan import WHITESPACE, any_word
from .lexicon import _REQUEST


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
# ``lower()`` and IGNORECASE agree, so a sentence with none of them skips the pattern's
# splitter (_clause_splits), and where they occur says where a match can start (_SCAN);
# other text always runs the plain regex scan.
_NEEDS: dict[re.Pattern[str], tuple[str, ...]] = {}
_IF = re.compile(r"\bif\b", re.IGNORECASE)
_NEEDS[_SEQ] = ("then", "after", "next", "finally", "lastly", "subsequently", "additionally", "also", "well")
_NEEDS[_AND_REQUEST] = ("and", "but", "plus")
_NEEDS[_AND_WORD] = ("and",)
_NEEDS[_THEN_CLAUSE] = ("once", "when", "after", "before", "soon")
_NEEDS[_COMMA_WORD] = (",",)
_NEEDS[_REQUEST] = ("?", "you", "please", "want", "need", "wish", "i'd", "would", "looking", "help", "let", "tell",
                    "searching", "trying", "hoping", "interested")
# The word groups of decompose.steps' clause splitters, in their order (_SEQ, _THEN_CLAUSE,
# _AND_REQUEST, _AND_WORD, _COMMA_WORD): every match of a splitter's pattern holds a word of
# each of its groups (case-insensitively): the _NEEDS words, and for two patterns also a word
# of their lookahead ("and" + "can you"/"i want"/"please"...; "once" + "done"/"finished"... or
# the comma closing a fronted clause). A sentence without them skips that splitter (Python's
# and the C++ splitter's rule alike).
_SPLITTER_GROUPS: tuple[tuple[tuple[str, ...], ...], ...] = (
    (_NEEDS[_SEQ],),
    (_NEEDS[_THEN_CLAUSE], ("done", "finished", "complete", "over", "ready", "through", ",")),
    (_NEEDS[_AND_REQUEST], ("want", "need", "would", "wish", "i'd", "you", "please", "tell", "let")),
    (_NEEDS[_AND_WORD],),
    (_NEEDS[_COMMA_WORD],),
)
# The words a clause rule starts at: a text with none of them (and none of may_split's other
# triggers) is one step.
_CLAUSE_WORDS = ("and", "but", "plus", "then", "after", "afterward", "afterwards", "next", "finally", "lastly",
                 "subsequently", "additionally", "also", "well")
# Where a match of each clause pattern can start, for textscan.scan (its words, how far from
# the start one of them begins at most, the characters a match opens with):
_SEPARATORS = WHITESPACE | {",", ";", ":"}
_SCAN: dict[re.Pattern[str], tuple[re.Pattern[str] | tuple[str, ...], int, frozenset[str]]] = {
    # [,;:]\s{0,5} or \s{1,5} (6 at most), "and\s{1,5}" (8), then the connective: within 14;
    # "as\s{1,5}well"'s word "well" within 14 + 2 + 5 = 21.
    _SEQ: (any_word(_NEEDS[_SEQ]), 21, _SEPARATORS),
    # The same opening (14), then the subordinator; "as\s{1,5}soon"'s "soon" within 21.
    _THEN_CLAUSE: (any_word(_NEEDS[_THEN_CLAUSE]), 21, _SEPARATORS),
    # ,\s{0,5} or \s{1,5}, then and|but|plus: within 6.
    _AND_REQUEST: (_NEEDS[_AND_REQUEST], 6, WHITESPACE | {","}),
    _AND_WORD: (_NEEDS[_AND_WORD], 6, WHITESPACE | {","}),
}
# _REQUEST: "?" or a word opening with one of these letters after \b ("can you", "please",
# "i want", "looking for", "help me", "let me know", "tell me", "i'm searching"), whose word
# of _NEEDS begins within 13 characters ("i am" + spaces before "searching"), or the
# question word opening the text (position 0, always tried).
_REQUEST_OPENS = frozenset("?cwpilht")
_REQUEST_WORDS = any_word(_NEEDS[_REQUEST])
