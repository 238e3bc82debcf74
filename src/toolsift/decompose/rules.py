"""A rule-based, LLM-free query decomposer.

:func:`decompose` turns a free-text request into the same :class:`~toolsift.schema.Query`
structure an LLM rewrite produces: one :class:`~toolsift.schema.ToolNeed` per sub-task
plus abstract argument roles (``{"date": "a date the user refers to"}``).

Design rules:

* Pure and deterministic: no randomness, no global state, no I/O.
* Bounded work: the input is cut to :data:`~toolsift.schema.MAX_TEXT_CHARS` and every
  regular expression uses bounded quantifiers without nested repetition, so matching is
  linear in the input length (no catastrophic backtracking).
* Argument descriptions are fixed templates chosen by the role, never text copied from
  the query, so concrete values (a date, an e-mail address) cannot leak into them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..errors import QueryError
from ..schema import MAX_TEXT_CHARS, Query, ToolNeed

__all__ = ["decompose", "extract_arguments", "split_steps"]

# Longest clause kept verbatim in a need; longer clauses are cut at a word boundary so
# one giant sentence cannot dominate BM25 length statistics.
_MAX_NEED_CHARS = 2_000
_MAX_RESPONSE_WORDS = 25

# --------------------------------------------------------------------------- lexicon

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

# ------------------------------------------------------------------------- splitting

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
_IF = re.compile(r"\bif\b", re.IGNORECASE)


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
        if not (set(_words(window)) & _VERBS or _REQUEST.search(window)):
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
    if _REQUEST.search(clause):
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


# --------------------------------------------------------------------- need fields


_SEARCHING = re.compile(r"^i(?:'m|\s{1,5}am)\s{1,5}(?:searching|looking|hunting)\s{1,5}for\s{1,5}", re.IGNORECASE)


def _strip_polite(clause: str) -> str:
    s = clause.strip()
    for _ in range(4):  # openers stack: "Hi, can you please help me to ..."
        new = _POLITE.sub("", s, count=1).lstrip(" ,")
        if new == s:
            break
        s = new
    s = _SEARCHING.sub("Find ", s, count=1)
    return _TRAILING_POLITE.sub("", s).strip() or clause.strip()


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > limit // 2 else cut


def _capitalise(s: str) -> str:
    return s[:1].upper() + s[1:]


_IF_WHETHER = re.compile(r"^(?:if|whether)\s+", re.IGNORECASE)
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_LEADING_FILLER = re.compile(r"^(?:(?:me|us|up|for)\s+){1,3}", re.IGNORECASE)


def _expected_response(description: str) -> str:
    words = description.rstrip(" ?.!").split()
    if not words:
        return "the result of the request"
    verb = words[0].lower()
    rest = " ".join(words[1:_MAX_RESPONSE_WORDS])
    body = " ".join(words[:_MAX_RESPONSE_WORDS])
    if verb in _CHECK_VERBS:
        if _IF_WHETHER.match(rest):
            return "whether " + _IF_WHETHER.sub("", rest, count=1)
        return f"the outcome of checking {rest}" if rest else "the outcome of the check"
    if verb in _ACTION_VERBS:
        return f"a confirmation of the request to {body[:1].lower() + body[1:]}"
    if verb in {"calculate", "compute", "estimate", "count", "measure", "determine"} and rest:
        return "the computed " + _ARTICLE.sub("", rest)
    if verb in {"translate", "summarize", "summarise", "convert", "paraphrase", "rewrite", "transcribe"}:
        return f"the {verb}d text or value" if verb.endswith("e") else f"the {verb}ed text or value"
    if verb in {"find", "search", "get", "fetch", "retrieve", "list", "show", "give", "look", "obtain", "locate",
                "recommend", "suggest"} and rest:
        return f"the {_ARTICLE.sub('', _LEADING_FILLER.sub('', rest))} requested"
    return f"the result of {body[:1].lower() + body[1:]}"


def _need(clause: str, core: str) -> ToolNeed:
    # The intent keeps context sentences ("I have a photo of my dog."); the description
    # is the request alone, as a tool's own description would phrase it.
    intent = _cut(clause, _MAX_NEED_CHARS)
    stripped = _strip_polite(core)
    first = _words(stripped[:40])
    if not first or first[0] not in _VERBS:
        # A bare question ("What was the number?") needs its context to say anything.
        stripped = _strip_polite(clause)
    description = _capitalise(_cut(stripped, _MAX_NEED_CHARS)).rstrip(" ?!")
    if not description:
        description = intent
    return ToolNeed(user_intent=intent, tool_description=description,
                    expected_response=_expected_response(description))


# ------------------------------------------------------------------------- arguments

_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
          r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_LANGUAGES = frozenset("""
english french german spanish italian portuguese dutch russian chinese mandarin cantonese
japanese korean arabic hindi bengali urdu turkish greek polish swedish norwegian danish
finnish czech hungarian romanian ukrainian hebrew thai vietnamese indonesian malay persian
swahili tamil telugu latin
""".split())
_NOT_NAMES = frozenset("""
i me my the a an this that these those it monday tuesday wednesday thursday friday saturday
sunday january february march april may june july august september october november
december today tomorrow please can could would will what which when where who how
""".split())

_CAP = r"[A-Z][A-Za-z'.-]{0,30}"
# (role, description, pattern). Order matters only for the output order of roles.
_PATTERNS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("email_address", "an email address given by the user",
     re.compile(r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,5}")),
    ("url", "a web address (URL) given by the user",
     re.compile(r"\b(?:https?://|www\.)[^\s<>\"']{1,2000}", re.IGNORECASE)),
    ("file_name", "the name of a file given by the user",
     re.compile(r"\b[\w-]{1,100}\.(?:pdf|docx?|xlsx?|csv|tsv|json|txt|png|jpe?g|gif|bmp|svg|mp3|mp4|wav|flac|"
                r"avi|mov|zip|tar|gz|py|js|html?|xml|ya?ml|pptx?|md|log|sql|ipynb)\b", re.IGNORECASE)),
    ("file_format", "the file format the user refers to",
     re.compile(r"\b(?:pdf|csv|json|xml|yaml|excel|png|jpe?g|mp3|mp4|wav)\s{1,5}(?:file|format|document)s?\b",
                re.IGNORECASE)),
    ("phone_number", "a phone number given by the user",
     re.compile(r"(?<![\w+])\+?\(?\d{1,4}\)?[\s.-]\d{2,4}[\s.-]\d{3,4}(?:[\s.-]\d{2,4})?(?!\w)")),
    ("amount", "an amount of money given by the user",
     re.compile(r"[$€£¥₹]\s{0,3}\d[\d,]{0,20}(?:\.\d{1,4})?(?:\s{0,3}(?:k|m|million|billion|thousand)\b)?|"
                r"\b\d[\d,]{0,20}(?:\.\d{1,4})?\s{0,3}(?:dollars?|usd|euros?|eur|gbp|pounds sterling|yen|jpy|"
                r"rupees?|inr|yuan|cny|cad|aud|chf)\b", re.IGNORECASE)),
    ("currency", "a currency the user refers to",
     re.compile(r"\b(?:USD|EUR|GBP|JPY|CNY|INR|CAD|AUD|CHF|BTC|ETH)\b|\b(?:dollars?|euros?|yen|rupees?|yuan|"
                r"bitcoin|currency)\b", re.IGNORECASE)),
    ("percentage", "a percentage or rate given by the user",
     re.compile(r"\b\d{1,10}(?:\.\d{1,6})?\s{0,2}(?:%|percent\b|per\s{1,3}cent\b)", re.IGNORECASE)),
    ("date", "the date the user refers to",
     re.compile(
         r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}\b|"
         rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s{{1,3}}(?:of\s{{1,3}})?{_MONTH}\b\.?(?:,?\s{{1,3}}\d{{4}})?|"
         rf"\b{_MONTH}\.?\s{{1,3}}\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s{{1,3}}\d{{4}})?|"
         rf"\b{_MONTH}\s{{1,3}}\d{{4}}\b|"
         r"\b(?:today|tomorrow|yesterday|tonight|day\s{1,3}after\s{1,3}tomorrow)\b|"
         rf"\b(?:next|this|last|coming)\s{{1,3}}(?:week(?:end)?|month|year|{_WEEKDAY})\b|\b{_WEEKDAY}\b|"
         r"\b(?:in|within)\s{1,3}\d{1,4}\s{1,3}(?:days?|weeks?|months?)\b",
         re.IGNORECASE)),
    ("time", "the time of day the user refers to",
     re.compile(r"\b\d{1,2}(?::\d{2}){0,2}\s{0,2}(?:am|pm|a\.m\.|p\.m\.)(?!\w)|\b\d{1,2}:\d{2}(?::\d{2})?\b|"
                r"\b(?:noon|midnight|morning|afternoon|evening)\b", re.IGNORECASE)),
    ("temperature", "a temperature given by the user",
     re.compile(r"\b-?\d{1,6}(?:\.\d{1,4})?\s{0,2}(?:°\s{0,2}[CF]?|degrees?(?:\s{1,3}(?:celsius|fahrenheit))?|"
                r"celsius|fahrenheit)\b", re.IGNORECASE)),
    ("distance", "a distance or length given by the user",
     re.compile(r"\b\d{1,9}(?:\.\d{1,6})?\s{0,2}(?:km|kilomet(?:er|re)s?|miles?|mi|m|met(?:er|re)s?|cm|mm|"
                r"inch(?:es)?|in\.|feet|foot|ft|yards?|yd)\b", re.IGNORECASE)),
    ("weight", "a weight given by the user",
     re.compile(r"\b\d{1,9}(?:\.\d{1,6})?\s{0,2}(?:kg|kilograms?|g|grams?|lbs?|pounds?|oz|ounces?|tons?|tonnes?)\b",
                re.IGNORECASE)),
    ("duration", "a length of time given by the user",
     re.compile(r"\b\d{1,9}(?:\.\d{1,6})?\s{0,2}(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|"
                r"months?|years?|decades?)\b", re.IGNORECASE)),
    ("volume", "a volume given by the user",
     re.compile(r"\b\d{1,9}(?:\.\d{1,6})?\s{0,2}(?:l|liters?|litres?|ml|milliliters?|gallons?|gal|cups?)\b",
                re.IGNORECASE)),
    ("data_size", "a data size given by the user",
     re.compile(r"\b\d{1,9}(?:\.\d{1,6})?\s{0,2}(?:[kmgt]b|bytes?|[kmgt]ib)\b", re.IGNORECASE)),
)

# "order #1234", "ticket number AB-12", "user ID: u_42" -> "<keyword>_id".
_ID = re.compile(
    r"\b(order|ticket|invoice|account|booking|reservation|tracking|confirmation|user|customer|product|"
    r"transaction|flight|appointment|device|employee|patient|reminder|meeting|case|item)"
    r"\s{0,3}(?:number|no\.?|id|code|#)?\s{0,3}[:#]?\s{0,3}(?=[A-Za-z0-9_-]{0,40}\d)[A-Za-z0-9_-]{2,40}\b",
    re.IGNORECASE,
)
_HASH_ID = re.compile(r"(?<!\w)#\d{1,20}\b")
# Codes mixing letters and digits (AB12CD, XYZ-123, 9f8e7d); a lookahead keeps it linear.
_CODE = re.compile(r"\b(?=[A-Za-z0-9-]{0,40}[A-Za-z])(?=[A-Za-z0-9-]{0,40}\d)[A-Za-z0-9]{1,20}(?:-[A-Za-z0-9]{1,20}){0,3}\b")
_QUOTED = re.compile(r"\"([^\"\n]{1,500})\"|“([^”\n]{1,500})”|(?<!\w)'([^'\n]{1,500})'(?!\w)")
_NUMBER = re.compile(r"(?<![\w.])-?\d{1,15}(?:[.,]\d{1,15})?(?![\w])")
_PLACE = re.compile(rf"\b(in|at|from|near|to|into|around)\s{{1,3}}((?:{_CAP})(?:\s{{1,2}}(?:{_CAP})){{0,3}})")
_PERSON = re.compile(
    r"\b(?:for|with|to|from|by|call|email|message|text|contact|tell|remind|invite|meet|ask)\s{1,3}"
    r"(?:(?:dr|mr|mrs|ms|prof)\.?\s{1,3})?([A-Z][a-z]{1,20})\s{1,2}([A-Z][a-z]{1,20})\b"
)
_TO_PERSON_VERBS = re.compile(r"\b(?:send|sent|email|mail|message|write|talk|speak|reply|forward|give|pay|"
                              r"transfer|introduce)\b[^.!?]{0,60}$", re.IGNORECASE)

# Mentions of an input with no concrete value ("translate my text", "resize the image"):
# the LLM rewrites name these roles too, so a cue word yields the role.
_CUES: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (role, desc, re.compile(pattern, re.IGNORECASE)) for role, desc, pattern in (
        ("text", "a text the user provides", r"\b(?:text|sentence|paragraph|passage|article|document|essay)s?\b"),
        ("image", "an image the user provides", r"\b(?:image|photo|picture|photograph|screenshot)s?\b"),
        ("audio", "an audio recording the user provides", r"\b(?:audio|recording|speech|voice|sound)\b"),
        ("video", "a video the user provides", r"\bvideos?\b"),
        ("question", "the question the user asks", r"\bquestions?\b"),
        ("username", "the user's account name", r"\b(?:username|user\s{1,3}name|login)\b"),
        ("password", "the user's password", r"\bpasswords?\b"),
        ("email_address", "an email address given by the user", r"\be-?mail\s{1,3}address(?:es)?\b"),
        ("phone_number", "a phone number given by the user", r"\bphone\s{1,3}numbers?\b"),
        ("zip_code", "a postal code the user refers to", r"\b(?:zip|postal|post)\s{0,3}codes?\b"),
        ("address", "a street address the user refers to", r"\b(?:street\s{1,3})?address\b(?!\s{0,3}book)"),
        ("location", "a place the user refers to", r"\b(?:location|city|country|region|place|area)\b"),
        ("language", "a language the user refers to", r"\blanguages?\b"),
        ("query", "the search terms the user gives", r"\b(?:search|look\s{1,3}up|query)\b"),
        ("symbol", "a ticker or symbol the user refers to", r"\b(?:stock|ticker|symbol|shares?)\b"),
        ("number", "a number given by the user", r"\b(?:number|integer|digit)s?\b"),
        ("year", "a year the user refers to", r"\byear\b"),
        ("category", "a category the user refers to", r"\b(?:category|categories|genre|type)\b"),
        ("ip_address", "an IP address given by the user", r"\bip(?:\s{1,3}address)?\b"),
        ("domain", "a domain name given by the user", r"\bdomains?\b"),
        ("token", "an authentication token of the user", r"\b(?:token|api\s{1,3}key)\b"),
    )
)


def _iter_arguments(text: str) -> Iterator[tuple[str, str]]:
    for m in _QUOTED.finditer(text):
        yield "quoted_text", "a quoted text given by the user"
        break
    for role, desc, pattern in _PATTERNS:
        if pattern.search(text):
            yield role, desc
    for m in _ID.finditer(text):
        yield f"{m.group(1).lower()}_id", f"the identifier of the {m.group(1).lower()} the user refers to"
    if _HASH_ID.search(text):
        yield "identifier", "an identifier given by the user"
    for m in _CODE.finditer(text):
        if not re.fullmatch(r"\d{1,2}(?:st|nd|rd|th|am|pm|[kmgt]b|km|kg|mm|cm|ml|m|g|s|h|d)", m.group(0),
                            re.IGNORECASE):
            yield "code", "an alphanumeric code given by the user"
            break
    for m in _PERSON.finditer(text):
        first, last = m.group(1), m.group(2)
        if first.lower() not in _NOT_NAMES and last.lower() not in _NOT_NAMES:
            yield "person_name", "the name of a person the user mentions"
            break
    for m in _PLACE.finditer(text):
        prep, phrase = m.group(1).lower(), m.group(2)
        head = phrase.split()[0].rstrip(".").lower()
        if head in _LANGUAGES:
            role = "source_language" if prep == "from" else "target_language" if prep in {"to", "into"} else "language"
            yield role, f"the {role.replace('_', ' ')} the user refers to"
        elif head in _NOT_NAMES or head.upper() in {"USD", "EUR", "GBP", "JPY", "CNY", "INR", "CAD", "AUD", "CHF"}:
            continue
        elif prep == "to" and (_TO_PERSON_VERBS.search(text[max(0, m.start() - 80):m.start()])):
            yield "recipient", "the person the user wants to reach"
        else:
            role = {"from": "origin", "to": "destination"}.get(prep, "location")
            yield role, "a place name mentioned by the user"
    if _NUMBER.search(text):
        yield "number", "a number given by the user"
    for role, desc, pattern in _CUES:
        if pattern.search(text):
            yield role, desc


def extract_arguments(text: str) -> dict[str, str]:
    """Abstract argument roles mentioned in ``text``.

    Args:
        text: Any string; only its first :data:`~toolsift.schema.MAX_TEXT_CHARS`
            characters are read.

    Returns:
        ``{role: description}`` in a stable order, each role once. Descriptions are fixed
        templates and never contain text from ``text``.
    """
    out: dict[str, str] = {}
    for role, desc in _iter_arguments(text[:MAX_TEXT_CHARS]):
        out.setdefault(role, desc)
    return out


# ----------------------------------------------------------------------------- API


def decompose(text: str, *, max_needs: int = 8, arguments: bool = True) -> Query:
    """Decompose a request into tool needs and abstract argument roles, without an LLM.

    Args:
        text: The user's request. Text beyond :data:`~toolsift.schema.MAX_TEXT_CHARS`
            characters is ignored.
        max_needs: At most this many needs; surplus clauses join the last need.
        arguments: Extract argument roles (``False`` leaves ``arguments`` empty, which
            also disables the missing-parameter penalty).

    Returns:
        A :class:`~toolsift.schema.Query` with one need per sub-task (``user_intent``
        the clause, ``tool_description`` an imperative without politeness,
        ``expected_response`` a short phrase from the clause's verb and object), the
        argument roles, and ``text`` the (possibly truncated) input.

    Raises:
        QueryError: ``text`` is not a string or is blank.

    Example:
        >>> q = decompose("Book a flight to Paris and then email the receipt to a@b.com")
        >>> len(q.needs), sorted(q.arguments)[:2]
        (2, ['destination', 'email_address'])
    """
    if not isinstance(text, str):
        raise QueryError("query", f"expected a string, got {type(text).__name__}")
    text = text[:MAX_TEXT_CHARS]
    if not text.strip():
        raise QueryError("query", "the query is empty")
    steps = _steps(text, max_needs)
    needs = tuple(_need(full, core) for full, core in steps)
    # Steps, not the raw text: enumeration markers ("1.") are not numbers the user gave.
    args = extract_arguments("\n".join(full for full, _ in steps)) if arguments else {}
    return Query(needs=needs, arguments=args, text=text)
