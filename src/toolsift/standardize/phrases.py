"""What a tool description says the tool returns, and what it says about each parameter.

Both read prose only: :func:`result_phrases` finds "returns X" style phrases and
:func:`mentioned_parameters` finds text that describes a named parameter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..schema import Parameter
from .text import _HAS_WORD, _sentence, clean_text, sentences

__all__ = ["mentioned_parameters", "result_phrases"]


# Verbs whose object *is* what the tool hands back ("Fetches the valuation data ...").
# "converts", "translates", "validates" are absent on purpose: their object is the
# input; checks are handled by _CHECK.
_RESULT_VERB = (
    r"fetch(?:es)?|retrieves?|gets?|returns?|obtains?|provides?|lists?|finds?"
    r"|search(?:es)? for|looks? up|calculates?|computes?|generates?|counts?|extracts?"
    r"|estimates?|predicts?|determines?|downloads?"
)
# Sentence-initial: "Fetches X", "This function calculates X", "It returns X", "To find X".
_LEAD = re.compile(
    r"^(?:(?:this|the)\s+(?:\w+\s+)?(?:function|method|tool|api|endpoint|service|operation)\s+"
    r"|it\s+(?:also\s+)?|to\s+)?"
    rf"(?:{_RESULT_VERB})\s+(?P<obj>.+)$",
    re.IGNORECASE,
)
# Inside a sentence only lowercase verbs count, so "makes a GET request" is no result.
_MID = re.compile(
    r"\b(?:and|which|that|it|also|then)\s+(?:also\s+)?"
    r"(?:returns?|retrieves?|fetch(?:es)?|provides?|outputs?|yields?|gives?)\s+(?P<obj>.+)$"
)
# "Reverse geocoding to obtain address information for given coordinates."
_MID_PURPOSE = re.compile(
    r"\bto\s+(?:obtain|get|retrieve|fetch|find|look up)\s+(?P<obj>.+)$"
)
# A check gives back a yes/no: "Checks if a number is prime" -> "Returns whether ...".
_CHECK = re.compile(
    r"^(?:(?:this|the)\s+(?:\w+\s+)?(?:function|method|tool|api|endpoint)\s+)?"
    r"(?:checks?|validates?|verif(?:y|ies)|determines?|tests?)\s+(?:if|whether)\s+(?P<obj>.+)$",
    re.IGNORECASE,
)
# "Given the ratio of butter to sugar, this function calculates the total cups ...".
_MID_SUBJECT = re.compile(
    rf"\b(?:this|the)\s+(?:function|method|tool)\s+(?:{_RESULT_VERB})\s+(?P<obj>.+)$"
)
# A sentence about the output itself: "The results include a `result_type` field ...".
_OUTPUT_SUBJECT = re.compile(
    r"^(?:the|its|each)\s+(?:results?|response|output|return value)s?\b", re.IGNORECASE
)
# Where the data comes from is not what it is: "... using the Amazon Data Scraper API".
# The tempered middle stops at the *last* connective, so "quotes from a specified page
# using the Toolbench RapidAPI" keeps "from a specified page".
_CONNECTIVE = r"(?:using|via|through|from|with|by (?:calling|querying|using))"
_SOURCE_TAIL = re.compile(
    rf"\s*,?\s+{_CONNECTIVE}\s+(?:the\s+|an?\s+)?"
    rf"(?:(?!\b{_CONNECTIVE}\b)[^,.;])*?"
    r"\b(?:APIs?|RapidAPI|service|endpoint|database|library)\b[^.;]*$",
    re.IGNORECASE,
)
# Objects that are not data: "Returns nothing", "gets started".
_NOT_DATA = re.compile(
    r"^(?:nothing|none|started|access to|an? interface|functionality)\b", re.IGNORECASE
)
_MAX_OBJECT_CHARS = 300


def _returns(obj: str) -> str:
    """``"Returns <obj>"``; a capitalised article (``"An integer ..."``) is lowered."""
    obj = obj.strip()
    if re.match(r"(?:A|An|The)\s", obj):
        obj = obj[0].lower() + obj[1:]
    return f"Returns {obj}"


def _object(raw: str) -> str:
    obj = raw.strip().rstrip(".!?").strip()
    obj = _SOURCE_TAIL.sub("", obj).strip().rstrip(",;:").strip()
    if not _HAS_WORD.search(obj) or _NOT_DATA.match(obj):
        return ""
    if len(obj) > _MAX_OBJECT_CHARS:
        obj = obj[:_MAX_OBJECT_CHARS].rsplit(" ", 1)[0]
    return obj


def result_phrases(text: str) -> list[str]:
    """Sentences of ``text`` about what the tool gives back, as ``"Returns <object>."``.

    A sentence contributes when it starts with a result verb (``Fetches X``,
    ``This function calculates X``, ``To find X``), contains one after a connective
    (``... and returns X``, ``It returns X``), or is about the output itself
    (``The results include ...``, kept whole). A trailing data-source clause
    (``using the Foo API``) is dropped from the object.

    Args:
        text: Cleaned prose.

    Returns:
        The phrases in text order, possibly empty.
    """
    out: list[str] = []
    for s in sentences(text):
        if _OUTPUT_SUBJECT.match(s):
            out.append(s)
            continue
        m = _CHECK.match(s)
        if m:
            obj = _object(m.group("obj"))
            if obj:
                out.append(f"Returns whether {obj}")
            continue
        m = _LEAD.match(s) or _MID.search(s) or _MID_SUBJECT.search(s) or _MID_PURPOSE.search(s)
        if m:
            obj = _object(m.group("obj"))
            if obj:
                out.append(_returns(obj))
    return out


# --------------------------------------------------------- parameter mentions

_Q = r"[`'\"\u2018\u2019]"  # a quote around a parameter name in prose
_WHAT_END = r"(?=[,.;:)]|\s+and\s+(?:the\s+)?[`'\"]|\s+respectively|$)"
_LIST_SEP = re.compile(r",\s*(?:and\s+)?|\s+and\s+")
_RESPECTIVELY = re.compile(
    rf"(?P<names>(?:{_Q}\w+{_Q}(?:,\s*(?:and\s+)?|\s+and\s+))+{_Q}\w+{_Q}),?\s+"
    r"(?:which|that)?\s*(?:are|represent|representing|refer to|specify)\s+"
    r"(?P<what>[^.;]+?),?\s+respectively",
    re.IGNORECASE,
)
# Not a description: "one argument", or a fragment such as "of 'whole'" (from
# "'part' represents of 'whole'").
_USELESS_WHAT = re.compile(
    r"^(?:(?:one|two|three|\w+)?\s*(?:arguments?|parameters?|inputs?)"
    r"|of|to|in|for|by|with|from|on|at|and|or)\b",
    re.IGNORECASE,
)


# 'x', which is the semester grade / 'x' (the semester grade) / The 'x' parameter refers to ...
# After a bare "is"/"are" only a noun phrase counts: "'num' is divisible by 9" is a
# statement about the value, not a description of it.
_NOUN_START = (r"(?=(?:an?|the|one|two|three|lists?|tuples?|strings?|integers?|floats?|numbers?"
               r"|dictionar\w+|used\s+(?:to|for))\b)")
_MENTION = re.compile(
    rf"{_Q}(?P<name>\w+){_Q}\s*(?:parameter\s+|argument\s+)?"
    rf"(?:\((?P<paren>(?:an?|the|as)\s[^)]{{2,}})\)|,?\s*(?:which\s+|that\s+)?"
    rf"(?:(?:is|are)\s+{_NOUN_START}|(?:represents|representing|refers to|specifies|denotes|"
    r"indicates|contains)\s+)"
    rf"(?P<what>[^,.;:]{{3,}}?){_WHAT_END})",
    re.IGNORECASE,
)
# an integer `n`, a float number `y`: a short type phrase right before the name.
_TYPED_MENTION = re.compile(
    r"\b(?P<what>an?\s+"
    r"(?!(?:\w+\s+)?(?:with|between|of|by|to|for|in|on|from|the|whether|if|that|which)\b)"
    rf"[A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*)?)\s+{_Q}(?P<name>\w+){_Q}"
)


def _respectively(text: str, names: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in _RESPECTIVELY.finditer(text):
        listed = re.findall(rf"{_Q}(\w+){_Q}", m.group("names"))
        items = [clean_text(i) for i in _LIST_SEP.split(m.group("what"))]
        # "lists of divisors of 'a' and 'b', respectively" splits into a bogus "'b'": a
        # list with any item that is not a phrase is misaligned, so none of it is used.
        if len(listed) == len(items) and all(items):
            for n, what in zip(listed, items):
                if n in names and n not in out:
                    out[n] = what
    return out


_TAKES_ONE = re.compile(
    r"\btakes\s+(?:in\s+)?(?P<what>an?\s+[^,.;]+?)"
    r"(?:\s+as\s+(?:an?\s+)?(?:input|argument|parameter))?"
    r"(?=,|\.|;|\s+and\s+|\s+which\b|$)",
    re.IGNORECASE,
)


def mentioned_parameters(text: str, params: Sequence[Parameter]) -> dict[str, str]:
    """Descriptions for parameters with an empty one, from prose that names them.

    Recognises ``'a' and 'b', which are X and Y, respectively``, ``'a', which is X``,
    ``'a' (X)``, ``The 'a' parameter refers to X``, ``an integer `n```, and, for a
    tool with a single parameter, ``takes a list of integers``.

    Args:
        text: Cleaned prose (a description).
        params: The tool's parameters.

    Returns:
        ``{name: description}`` for parameters whose description is empty.
    """
    empty = [p.name for p in params if not p.description.strip()]
    if not empty or not text:
        return {}
    wanted = set(empty)
    found = _respectively(text, wanted)
    # One pass per pattern over the text (not one compiled pattern per name): catalogues
    # have thousands of distinct names and would thrash the regex cache.
    for pattern in (_MENTION, _TYPED_MENTION):
        for m in pattern.finditer(text):
            name = m.group("name")
            if name not in wanted or name in found:
                continue
            what = (m.groupdict().get("paren") or m.group("what") or "").strip()
            if what and not _USELESS_WHAT.match(what):
                found[name] = what
    if len(params) == 1 and empty == [params[0].name] and params[0].name not in found:
        one = _TAKES_ONE.search(text)
        if one and not _USELESS_WHAT.match(one.group("what").split(" ", 1)[1]):
            found[params[0].name] = one.group("what")
    cleaned = {k: clean_text(v) for k, v in found.items()}
    return {k: _sentence(v) for k, v in cleaned.items() if v}
