"""Text clean-up shared by the standardisation rules: markdown and quotes off, sentences,
identifiers as words."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["clean_text", "name_words", "sentences"]


_FENCE_LINE = re.compile(r"^\s*```")
_WRAPPING_QUOTES = (('"', '"'), ("'", "'"), ("`", "`"), ("\u201c", "\u201d"), ("\u2018", "\u2019"))
_MD_IMAGE_OR_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
# Only "**bold**": "__" also wraps Python dunders (__init__), which must survive.
_MD_EMPHASIS = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_MD_INLINE_CODE = re.compile(r"`+([^`]*)`+")
_MD_LINE_MARK = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+]\s+)", re.MULTILINE)
_HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*\s*/?>")
_SPACE = re.compile(r"\s+")
_HAS_WORD = re.compile(r"[^\W\d_]{2}")
# Whole "descriptions" that are placeholders, e.g. apigen's seven tools described as
# "python" (a fence language tag that lost its code block).
_PLACEHOLDERS = frozenset({"python", "json", "javascript", "js", "bash", "shell", "code",
                           "n/a", "na", "none", "null", "todo", "tbd", "description"})
# A sentence ends at . ! ? followed by space and something that can start a sentence;
# "e.g. the" and "v1.5" therefore do not split.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'`(\[])")
_ABBREVIATION_END = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx|Dr|Mr|Mrs|Ms|No|Fig)\.$")


def _fence_split(text: str) -> tuple[str, str]:
    """``(prose outside fences, code inside fences)`` of a markdown text."""
    outside: list[str] = []
    inside: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE_LINE.match(line):
            in_fence = not in_fence
            continue
        (inside if in_fence else outside).append(line)
    return "\n".join(outside), "\n".join(inside)


def _unwrap_quotes(text: str) -> str:
    """Drop quote pairs wrapping the whole text, unless the quote also occurs inside
    (``'a' and 'b'`` starts and ends with a quote but is not wrapped)."""
    changed = True
    while changed and len(text) >= 2:
        changed = False
        for left, right in _WRAPPING_QUOTES:
            inner = text[1:-1]
            if text[0] == left and text[-1] == right and left not in inner and right not in inner:
                text = inner.strip()
                changed = True
                break
    return text


def clean_text(value: Any) -> str:
    """Normalise a raw documentation string into one line of plain prose.

    Drops fenced code blocks (keeping their content only when there is no prose
    around them), markdown markup (emphasis, inline code ticks, links, headings,
    bullets), simple HTML tags and quotes wrapping the whole text, then collapses
    whitespace. Placeholders (``"python"``, ``"N/A"``, ``"."``) become ``""``.

    Args:
        value: Anything; non-strings give ``""``.

    Returns:
        The cleaned text, or ``""``.
    """
    if not isinstance(value, str):
        return ""
    text = value
    if "```" in text:
        outside, inside = _fence_split(text)
        text = outside if _HAS_WORD.search(outside) else inside
    text = _MD_IMAGE_OR_LINK.sub(r"\1", text)
    text = _MD_LINE_MARK.sub("", text)
    text = _HTML_TAG.sub(" ", text)
    text = _SPACE.sub(" ", text).strip()
    text = _unwrap_quotes(text)
    text = _MD_EMPHASIS.sub(r"\1", text)
    text = _MD_INLINE_CODE.sub(r"\1", text)
    text = _SPACE.sub(" ", text).strip()
    if not _HAS_WORD.search(text) or text.lower().rstrip(".") in _PLACEHOLDERS:
        return ""
    return text


def sentences(text: str) -> list[str]:
    """Split cleaned prose into sentences (abbreviations such as ``e.g.`` do not end one)."""
    out: list[str] = []
    for part in _SENTENCE_END.split(text):
        part = part.strip()
        if not part:
            continue
        if out and _ABBREVIATION_END.search(out[-1]):
            out[-1] = f"{out[-1]} {part}"
        else:
            out.append(part)
    return out


def _sentence(text: str) -> str:
    """``text`` with a capital first letter and a final full stop."""
    text = text.strip().rstrip(",;:").strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def _join(parts: Iterable[str]) -> str:
    """Sentences joined by spaces, empty and repeated ones (case-insensitively) dropped."""
    seen: set[str] = set()
    out: list[str] = []
    for part in parts:
        s = _sentence(part)
        key = s.casefold()
        if s and key not in seen:
            seen.add(key)
            out.append(s)
    return " ".join(out)


_IDENT_SPLIT = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[_\-./:]+")


def name_words(name: str) -> str:
    """``"sendEmail"``/``"send_email"`` -> ``"send email"``."""
    return " ".join(p for p in _IDENT_SPLIT.split(name) if p)
