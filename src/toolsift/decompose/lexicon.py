"""Word lists and request patterns the decomposer reads: request verbs, politeness.

:func:`_strip_polite` takes the politeness off a clause so the need keeps the request.
"""

from __future__ import annotations

import re

# Verbs that start an imperative tool request. Used to decide whether "X and Y" joins
# two verb phrases ("book a flight and reserve a hotel") or two nouns ("salt and pepper").
_VERBS = frozenset("""
add analyse analyze answer apply archive arrange ask assess assign block book browse buy
calculate call cancel categorize categorise change check classify clean close compare
compile compose compute confirm connect convert copy count create decrypt delete describe
design detect determine display download draft draw edit email encrypt enable disable
estimate evaluate explain export extract fetch fill filter find fix forecast format
generate get give go identify import increase install invite list locate log look
make manage map measure merge modify monitor move notify obtain open order organize
organise paraphrase parse pay plan play post predict prepare print provide publish
purchase query rank read recognize recognise recommend record reduce register reject
remind remove rename render rent replace reply report request reschedule reserve reset
resize retrieve return review rewrite run save scan schedule search see select sell send
set share show sign solve sort split start stop store submit subscribe suggest summarize
summarise switch synthesize take tell test track transcribe transfer translate turn
unsubscribe update upload validate verify view visualize visualise watch write
""".split())

# Verbs whose result is a confirmation rather than data.
_ACTION_VERBS = frozenset("""
add archive assign block book buy cancel change create delete disable enable install
invite modify move notify order pay post publish purchase register reject remind remove
rename rent reschedule reserve reset schedule send set share sign start stop store
submit subscribe switch transfer turn unsubscribe update upload
""".split())
_CHECK_VERBS = frozenset({"check", "verify", "validate", "confirm", "test"})

# Openers removed from the tool description: they say who asks, not what a tool does.
_POLITE = re.compile(
    r"^(?:(?:hi|hello|hey)\b[,!.]?\s{0,5}|"
    r"(?:can|could|would|will)\s{1,5}you\s{1,5}(?:please\s{1,5}|kindly\s{1,5})?(?:help\s{1,5}me\s{1,5}(?:to\s{1,5})?)?|"
    r"(?:please|kindly)\s{1,5}(?:help\s{1,5}me\s{1,5}(?:to\s{1,5})?)?|"
    r"help\s{1,5}me\s{1,5}(?:to\s{1,5})?|"
    r"i(?:\s{1,5}would|'d|\s{1,5}want|\s{1,5}need|\s{1,5}wish|\s{1,5}am\s{1,5}trying|'m\s{1,5}trying|"
    r"\s{1,5}am\s{1,5}looking|'m\s{1,5}looking|\s{1,5}have)?\s{1,5}(?:like\s{1,5}|love\s{1,5})?"
    r"(?:you\s{1,5})?to\s{1,5}|"
    r"let(?:'s|\s{1,5}us)\s{1,5}|"
    r"(?:i\s{1,5}also\s{1,5}|also\s{1,5})|"
    r"(?:and|then|next|finally|afterwards|additionally|lastly|first|firstly|second|secondly)\b,?\s{0,5})",
    re.IGNORECASE,
)
_TRAILING_POLITE = re.compile(r"(?:[\s,]{1,5}(?:for\s{1,5}me|please|thanks|thank\s{1,5}you))+\s{0,5}[?.!]*\s{0,5}$",
                              re.IGNORECASE)

# Phrases marking a sentence as a request (as opposed to context like "I am a teacher.").
_REQUEST = re.compile(
    r"\?|\b(?:can|could|would|will)\s{1,5}you\b|\bplease\b|\bi\s{1,5}(?:want|need|wish)\b|\bi'd\s{1,5}like\b|"
    r"\bi\s{1,5}would\s{1,5}like\b|\blooking\s{1,5}for\b|\bhelp\s{1,5}me\b|\blet\s{1,5}me\s{1,5}know\b|"
    r"\btell\s{1,5}me\b|\bi(?:'m|\s{1,5}am)\s{1,5}(?:searching|looking|trying|hoping|interested)\b|"
    r"^\s{0,5}(?:how|what|which|when|where|who|why|is|are|do|does|should)\b|\blet's\b",
    re.IGNORECASE,
)


_SEARCHING = re.compile(r"^i(?:'m|\s{1,5}am)\s{1,5}(?:searching|looking|hunting)\s{1,5}for\s{1,5}", re.IGNORECASE)


def _strip_polite(clause: str) -> str:
    s = clause.strip()
    for _ in range(4):  # openers stack: "Hi, can you please help me to ..."
        new = _POLITE.sub("", s, count=1).lstrip(" ,")
        if new == s:
            break
        s = new
    s = _SEARCHING.sub("Find ", s, count=1)
    # Every match of _TRAILING_POLITE holds "for", "please" or "thank"; on ASCII text, where
    # lower() agrees with IGNORECASE, a text without them skips the scan (it would find none).
    if s.isascii() and not any(w in s.lower() for w in ("for", "please", "thank")):
        return s.strip() or clause.strip()
    return _TRAILING_POLITE.sub("", s).strip() or clause.strip()
