"""Standardisation rules for toolink documentation: a Python stub plus prose."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..adapters._pysig import parse_signature, prose
from ..schema import Tool
from .fields import Fields
from .phrases import _returns, mentioned_parameters, result_phrases
from .text import _fence_split, _join, _sentence, clean_text, name_words

_LABELLED = re.compile(r"^\s*(?P<key>[A-Z][A-Za-z ]{1,20}):\s*(?P<value>.+?)\s*$")
_BARE_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*(?:\.\w+)*$")
_IDENT_UNDERSCORE = re.compile(r"(?<=[A-Za-z0-9])_+(?=[A-Za-z0-9])")


def _labelled(text: str) -> dict[str, str]:
    """``"Name: f\\nUtility: ...\\nOutput: ..."`` prose (one toolink tool) as a dict."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _LABELLED.match(line)
        if m:
            out.setdefault(m.group("key").strip().lower(), m.group("value"))
    return out


def _stub_response(code: str, prose_text: str, param_names: Iterable[str]) -> str:
    """``"Returns <expr>"`` from the stub's last ``return`` (identifiers as words), or
    ``""``. With prose already saying what is returned, only a bare name that adds
    words (``return work_done``) is kept; returning a parameter (``return num1``) adds
    nothing."""
    sig = parse_signature(code)
    if sig is None or not (sig.return_expr or sig.returns):
        return ""
    expr = sig.return_expr
    if prose_text:
        if not _BARE_IDENTIFIER.match(expr) or expr in set(param_names):
            return ""
        words = name_words(expr).lower().split()
        known = set(re.findall(r"\w+", prose_text.lower()))
        return "" if all(w in known for w in words) else f"Returns {name_words(expr)}"
    shown = _IDENT_UNDERSCORE.sub(" ", expr) if expr else ""
    annotation = f"{sig.returns}" if sig.returns else ""
    if shown and annotation:
        return f"Returns {annotation}: {shown}"
    return f"Returns {shown or annotation}"


def _toolink(doc: Mapping[str, Any], tool: Tool) -> Fields:
    code = doc["func_description"]
    description = clean_text(doc.get("description"))
    labelled = _labelled(_fence_split(code)[0])
    if not description:
        description = clean_text(labelled.get("utility") or labelled.get("description")
                                 or prose(code))
    found = result_phrases(description)
    if labelled.get("output"):
        found.append(_returns(clean_text(labelled["output"])))
    stub = _stub_response(code, " ".join(found), (p.name for p in tool.parameters))
    response = _join([*found, stub])
    params = mentioned_parameters(description, tool.parameters)
    if labelled.get("input") and len(tool.parameters) == 1 and not tool.parameters[0].description:
        params.setdefault(tool.parameters[0].name, _sentence(clean_text(labelled["input"])))
    return Fields("toolink", description, response, params)
