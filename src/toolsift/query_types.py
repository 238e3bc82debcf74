"""The structured query: one or more :class:`ToolNeed` (what the user wants done, what a
fitting tool's description and response would say) plus extracted ``arguments``
(abstract roles such as ``{"recipient": "email address of the person to notify"}``).
Re-exported by :mod:`toolsift.schema`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import QueryError, SchemaError
from .query_caps import check_counts, check_structure
from .text_checks import check_text, query_text

__all__ = ["Query", "ToolNeed"]


@dataclass(frozen=True, slots=True)
class ToolNeed:
    """One tool the query needs, described from three angles.

    Attributes:
        user_intent: What the user wants, phrased like an example intent.
        tool_description: What a fitting tool's description would say.
        expected_response: What a fitting tool would return.
    """

    user_intent: str = ""
    tool_description: str = ""
    expected_response: str = ""

    def __post_init__(self) -> None:
        for name in ("user_intent", "tool_description", "expected_response"):
            check_text(getattr(self, name), f"need.{name}", error=QueryError)
        if not any(s.strip() for s in (self.user_intent, self.tool_description,
                                       self.expected_response)):
            raise QueryError("need", "a tool need must have at least one non-empty text")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "need") -> ToolNeed:
        """Build from ``{"user_intent", "tool_description", "expected_response"}``."""
        if not isinstance(data, Mapping):
            raise QueryError(where, f"expected an object, got {type(data).__name__}")
        try:
            return cls(
                user_intent=data.get("user_intent") or "",
                tool_description=data.get("tool_description") or "",
                expected_response=data.get("expected_response") or "",
            )
        except SchemaError as exc:
            raise QueryError(where, str(exc)) from None


@dataclass(frozen=True, slots=True)
class Query:
    """A retrieval request: tool needs plus extracted argument roles.

    Build one from plain text with :meth:`from_text` (every field sees the text, no
    arguments, no penalty) or pass needs and arguments produced by an LLM or by the
    calling agent itself.

    Attributes:
        needs: One or more tool needs; a tool's field score is the max over needs.
        arguments: ``{role name: abstract description}``; drives the parameter field
            and the missing-parameter penalty. Empty means no penalty.
        text: The original request, in the user's words, if any. A structured query's
            text also queries the description field beside each need
            (``IndexConfig.request_in_description``).
    """

    needs: tuple[ToolNeed, ...]
    arguments: Mapping[str, str] = field(default_factory=dict)
    text: str = ""

    def __post_init__(self) -> None:
        needs = self.needs
        if isinstance(needs, ToolNeed):
            needs = (needs,)
        if isinstance(needs, (str, bytes)) or not isinstance(needs, Iterable):
            raise QueryError("query.needs", "expected a list of ToolNeed")
        needs = tuple(needs)
        for i, n in enumerate(needs):
            if not isinstance(n, ToolNeed):
                raise QueryError(f"query.needs[{i}]", f"expected ToolNeed, got {type(n).__name__}")
        if not needs:
            raise QueryError("query.needs", "a query needs at least one tool need")
        object.__setattr__(self, "needs", needs)
        if not isinstance(self.arguments, Mapping):
            raise QueryError("query.arguments", "expected a mapping of name -> description")
        check_counts(len(needs), len(self.arguments))
        args: dict[str, str] = {}
        for k, v in self.arguments.items():
            if not isinstance(k, str) or not k.strip():
                raise QueryError("query.arguments", f"argument names must be non-empty strings, got {k!r}")
            args[k] = check_text(v, f"query.arguments[{k!r}]", error=QueryError)
        object.__setattr__(self, "arguments", args)
        check_text(self.text, "query.text", error=QueryError)

    @classmethod
    def from_text(cls, text: str) -> Query:
        """A query from plain text: each field sees ``text``; no arguments, no penalty."""
        query_text(text)
        if cls is not Query:
            return cls(needs=(ToolNeed(text, text, text),), arguments={}, text=text)
        # ``text`` has passed every check ToolNeed and Query would make again (four
        # more passes over it per search): set the fields directly.
        need = object.__new__(ToolNeed)
        for name in ("user_intent", "tool_description", "expected_response"):
            object.__setattr__(need, name, text)
        query = object.__new__(Query)
        object.__setattr__(query, "needs", (need,))
        object.__setattr__(query, "arguments", {})
        object.__setattr__(query, "text", text)
        return query

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "query") -> Query:
        """Build from ``{"tool_needs": [...], "extracted_arguments": {...}, "request": "..."}``
        (the MFTR rewrite format, plus the user's own words) or ``{"needs": [...],
        "arguments": {...}, "text": "..."}`` (the attribute names; :meth:`to_dict` writes
        the first)."""
        if not isinstance(data, Mapping):
            raise QueryError(where, f"expected an object, got {type(data).__name__}")
        raw_needs = data.get("tool_needs", data.get("needs"))
        if not isinstance(raw_needs, Sequence) or isinstance(raw_needs, (str, bytes)):
            raise QueryError(f"{where}.tool_needs", "expected a list of tool needs")
        check_structure(data, raw_needs, where)  # caps (toolsift.query_caps) before walking it
        needs = tuple(
            ToolNeed.from_dict(n, where=f"{where}.tool_needs[{i}]") for i, n in enumerate(raw_needs)
        )
        args = data.get("extracted_arguments", data.get("arguments")) or {}
        try:
            return cls(needs=needs, arguments=args, text=data.get("request", data.get("text")) or "")
        except SchemaError as exc:
            raise QueryError(where, str(exc)) from None

    def to_dict(self) -> dict[str, Any]:
        """The wire form :meth:`from_dict` reads back: ``{"tool_needs": [...],
        "extracted_arguments": {...}}``, with ``"request"`` when the query has a text."""
        data: dict[str, Any] = {
            "tool_needs": [{"user_intent": n.user_intent, "tool_description": n.tool_description,
                            "expected_response": n.expected_response} for n in self.needs],
            "extracted_arguments": dict(self.arguments)}
        if self.text:
            data["request"] = self.text
        return data

    @property
    def penalized(self) -> bool:
        """Whether the missing-parameter penalty applies (only with extracted arguments)."""
        return bool(self.arguments)
