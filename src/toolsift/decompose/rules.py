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

This module builds the needs and the :class:`~toolsift.schema.Query`; splitting into
steps (:mod:`.steps`), argument roles (:mod:`.arguments`) and the word lists
(:mod:`.lexicon`) live beside it.
"""

from __future__ import annotations

import re

from ..errors import QueryError
from ..schema import MAX_TEXT_CHARS, Query, ToolNeed
from .arguments import extract_arguments
from .lexicon import _ACTION_VERBS, _CHECK_VERBS, _VERBS, _strip_polite
from .steps import _steps, _words, split_steps

__all__ = ["decompose", "extract_arguments", "split_steps"]

# Longest clause kept verbatim in a need; longer clauses are cut at a word boundary so
# one giant sentence cannot dominate BM25 length statistics.
_MAX_NEED_CHARS = 2_000
_MAX_RESPONSE_WORDS = 25

# --------------------------------------------------------------------- need fields


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
