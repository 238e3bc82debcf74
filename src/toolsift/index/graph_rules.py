"""What one tool consumes and produces, as the tool graph matches them.

Per tool, :func:`tool_signature` reads

* its **inputs**: required top-level parameters (name, type, description);
* its **outputs**: the named fields of what it returns, read back from the response
  text every adapter writes with :func:`toolsift.adapters._jsonschema.describe_fields`
  (``"Returns an object with: order_id (string): ...; total (number): ..."``; the same
  sentence for MCP ``outputSchema``, OpenAPI response schemas, Gemini and UltraTool
  ``results``), so the graph works on stored indexes whose tools keep only that text;
* its **operation** and **resource**: the name split into words, the first or last word
  a CRUD verb (``get_user``, ``user_delete``, ``createOrder``), the rest the resource.

Names are compared as keys: the identifier split into words (``userId`` -> ``user id``)
and analysed by the index's analyzer (stop words, stemming), so ``user_ids`` and
``userId`` meet. Everything here is a function of one tool, so an update re-derives
only the tools it touches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..analyze import Analyzer
from ..schema import Tool

__all__ = ["OPERATIONS", "Field", "Signature", "name_key", "tool_signature"]

#: CRUD verbs by operation. ``read`` tools (get, list, search) and ``create`` tools hand
#: out a resource's identity; ``read``, ``update`` and ``delete`` tools take it.
OPERATIONS: dict[str, frozenset[str]] = {
    "create": frozenset({"create", "add", "new", "make", "insert", "post", "register", "write", "upload",
                         "generate", "book", "open", "start"}),
    "read": frozenset({"get", "list", "search", "find", "fetch", "read", "retrieve", "query", "lookup",
                       "show", "view", "check", "describe", "browse", "load"}),
    "update": frozenset({"update", "modify", "edit", "set", "put", "patch", "change", "rename", "replace",
                         "move"}),
    "delete": frozenset({"delete", "remove", "del", "cancel", "drop", "destroy", "erase", "clear", "close"}),
}
_VERB_OP = {v: op for op, verbs in OPERATIONS.items() for v in verbs}

# camelCase and separators -> words (the same split the index uses for names).
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEP = re.compile(r"[\W_]+")  # any non-word character, Unicode-aware
# One "name (type): description" entry of describe_fields; the type is optional.
_ENTRY = re.compile(r"^\s*([^\s:()]+)(?:\s+\(([^)]*)\))?(?::\s*(.*))?$", re.DOTALL)
# The sentence describe_fields writes: "<lead>: entry; entry; ... ." (lead ends in "with").
_FIELDS = re.compile(r"\bwith:\s+(.*?)\.?\s*$", re.DOTALL)


def words(name: str) -> list[str]:
    """``"getUserId"`` / ``"get_user_id"`` -> ``["get", "user", "id"]`` (lower case)."""
    return [w.lower() for part in _SEP.split(name) for w in _CAMEL.split(part) if w]


def name_key(name: str, analyzer: Analyzer) -> tuple[str, ...]:
    """A name as the graph compares it: its words, analysed (stemmed, stop words out)."""
    return tuple(t for w in words(name) for t in analyzer.tokenize(w))


@dataclass(frozen=True, slots=True)
class Field:
    """One input or output: its name key, JSON type and analysed description terms."""

    name: str
    key: tuple[str, ...]
    type: str
    terms: frozenset[str]


@dataclass(frozen=True, slots=True)
class Signature:
    """What a tool takes and returns, as the graph matches it."""

    inputs: tuple[Field, ...]
    outputs: tuple[Field, ...]
    operation: str | None
    resource: tuple[str, ...]


def _field(name: str, type_: str, desc: str, analyzer: Analyzer) -> Field:
    return Field(name, name_key(name, analyzer), (type_ or "").strip().lower(), frozenset(analyzer.tokenize(desc)))


def response_fields(response: str) -> list[tuple[str, str, str]]:
    """``(name, type, description)`` of each field listed in a response text written by
    ``describe_fields`` (empty when the text lists none)."""
    m = _FIELDS.search(response)
    if m is None:
        return []
    out = []
    for entry in m.group(1).split("; "):
        e = _ENTRY.match(entry)
        if e is not None:
            out.append((e.group(1), e.group(2) or "", (e.group(3) or "").strip()))
    return out


def operation_of(name_words: list[str]) -> tuple[str | None, list[str]]:
    """The CRUD operation named by the first (or else last) word and the other words."""
    if len(name_words) >= 2:
        for i in (0, len(name_words) - 1):
            op = _VERB_OP.get(name_words[i])
            if op is not None:
                return op, name_words[:i] + name_words[i + 1:]
    return None, name_words


def tool_signature(tool: Tool, analyzer: Analyzer, memo: dict[tuple[str, str, str], Field] | None = None
                   ) -> Signature:
    """The :class:`Signature` of ``tool`` under ``analyzer``.

    ``memo`` (one dict for one analyzer, e.g. a whole catalogue's build) shares each
    distinct ``(name, type, description)`` field: catalogues repeat their parameters
    (``user_id``, ``query`` ...), and analysing each occurrence was most of a graph build.
    """
    def field(name: str, type_: str, desc: str) -> Field:
        if memo is None:
            return _field(name, type_, desc, analyzer)
        key = (name, type_, desc)
        got = memo.get(key)
        if got is None:
            got = memo[key] = _field(name, type_, desc, analyzer)
        return got

    inputs = tuple(field(p.name, p.type, p.description) for p in tool.parameters
                   if p.required and tool.parent_of(p.name) is None)
    outputs = tuple(field(n, t, d) for n, t, d in response_fields(tool.response))
    op, rest = operation_of(words(tool.name))
    resource = tuple(t for w in rest for t in analyzer.tokenize(w)) if op is not None else ()
    return Signature(inputs, outputs, op, resource)
