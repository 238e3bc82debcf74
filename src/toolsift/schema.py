"""The four-field tool schema and the structured query.

A :class:`Tool` is standardised into the four fields MFTR scores separately:
``description``, ``parameters``, ``response`` and ``examples``. A :class:`Query` holds
one or more :class:`ToolNeed` (what the user wants done, what a fitting tool's
description and response would say) plus extracted ``arguments`` (abstract roles such as
``{"recipient": "email address of the person to notify"}``).

Validation happens at construction time and raises :class:`~toolsift.errors.SchemaError`
naming the offending item, so bad data never reaches the C++ core.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import QueryError, SchemaError
from .jsoncheck import MAX_NESTING, check_json, no_surrogates
from .query_caps import check_counts, check_structure

__all__ = [
    "FIELDS",
    "MAX_NESTING",
    "MAX_TEXT_CHARS",
    "Parameter",
    "Tool",
    "ToolNeed",
    "Query",
    "Catalog",
    "query_text",
]

#: The four MFTR fields, in the order used by weight vectors and score breakdowns.
FIELDS: tuple[str, ...] = ("description", "parameters", "response", "examples")

#: Longest text accepted in any single field. Longer text is almost always a mistake
#: (a whole spec pasted into a description) and would dominate BM25 length statistics.
MAX_TEXT_CHARS = 100_000



def _text(value: Any, where: str, *, allow_empty: bool = True,
          error: type[SchemaError] = SchemaError) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise error(where, f"expected a string, got {type(value).__name__}")
    if len(value) > MAX_TEXT_CHARS:
        raise error(
            where, f"text is {len(value):,} characters long; the limit is {MAX_TEXT_CHARS:,}"
        )
    if not allow_empty and not value.strip():
        raise error(where, "must be a non-empty string")
    no_surrogates(value, where, error)
    return value


def query_text(text: Any) -> str:
    """``text``, checked as a raw-text query (:meth:`Query.from_text`): a string, not
    blank, within the length limit, encodable as UTF-8.

    Raises:
        QueryError: Naming ``query``.
    """
    if not isinstance(text, str):
        raise QueryError("query", f"expected a string, got {type(text).__name__}")
    if not text.strip():
        raise QueryError("query", "the query is empty")
    return _text(text, "query", error=QueryError)


def _text_tuple(values: Any, where: str) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise SchemaError(where, f"expected a list of strings, got {type(values).__name__}")
    return tuple(_text(v, f"{where}[{i}]") for i, v in enumerate(values))


@dataclass(frozen=True, slots=True)
class Parameter:
    """One input parameter of a tool.

    Attributes:
        name: Parameter name as the tool expects it.
        type: Type name (``"string"``, ``"integer"``, ...); free text, not validated.
        description: What the parameter means.
        required: Whether a call must supply it. Sources mark parameters optional
            explicitly; everything else is required.
        example: An example value, any JSON-serialisable object, or ``None``.
    """

    name: str
    type: str = "string"
    description: str = ""
    required: bool = True
    example: Any = None

    def __post_init__(self) -> None:
        _text(self.name, "parameter.name", allow_empty=False)
        _text(self.type, f"parameter {self.name!r}.type")
        _text(self.description, f"parameter {self.name!r}.description")
        if not isinstance(self.required, bool):
            raise SchemaError(f"parameter {self.name!r}.required", "expected a bool")
        if self.example is not None:
            check_json(self.example, f"parameter {self.name!r}.example")

    def document(self) -> str:
        """The text indexed for this parameter: ``"name (type): description"``."""
        return f"{self.name} ({self.type}): {self.description}"

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "name": self.name,
            "type": self.type,
            "description": self.description,
            "required": self.required,
            "example": self.example,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "parameter") -> Parameter:
        """Build from the :meth:`to_dict` form, naming ``where`` in errors."""
        if not isinstance(data, Mapping):
            raise SchemaError(where, f"expected an object, got {type(data).__name__}")
        try:
            return cls(
                name=data.get("name"),  # type: ignore[arg-type]
                type=data.get("type") or "string",
                description=data.get("description") or "",
                required=data.get("required", True),
                example=data.get("example"),
            )
        except SchemaError as exc:
            raise SchemaError(where, str(exc)) from None


def _parent(name: str, names: set[str]) -> str | None:
    cut = len(name)
    while (cut := name.rfind(".", 0, cut)) > 0:
        head = name[:cut]
        while head.endswith("[]") and head not in names:
            head = head[:-2]
        if head in names and head != name:
            return head
    return None


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool standardised into the four MFTR fields.

    Attributes:
        id: Unique id inside a catalogue (defaults to ``name`` in adapters).
        name: The name the tool is called by.
        description: What the tool does.
        parameters: Input parameters. Adapters flatten nested objects into
            sub-parameters named after their parent (``address.city``, ``stops[].name``),
            listed after it; :meth:`parent_of` and :attr:`top_level_parameters` tell
            them apart.
        response: Free text describing what the tool returns.
        examples: User intents the tool serves, one sentence each.
        tags: Free labels (domain, server, risk ...).
        source: The original payload the tool was read from, kept verbatim so schemas
            can be returned in the caller's native format.
    """

    id: str
    name: str
    description: str = ""
    parameters: tuple[Parameter, ...] = ()
    response: str = ""
    examples: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    source: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise SchemaError(f"tool {self.name!r}.id", "must be a non-empty string")
        no_surrogates(self.id, f"tool {self.id!a}.id")
        where = f"tool {self.id!r}"
        _text(self.name, f"{where}.name", allow_empty=False)
        _text(self.description, f"{where}.description")
        _text(self.response, f"{where}.response")
        params = self.parameters
        if isinstance(params, (str, bytes)) or not isinstance(params, Iterable):
            raise SchemaError(f"{where}.parameters", "expected a list of Parameter")
        params = tuple(params)
        seen: set[str] = set()
        for i, p in enumerate(params):
            if not isinstance(p, Parameter):
                raise SchemaError(
                    f"{where}.parameters[{i}]", f"expected Parameter, got {type(p).__name__}"
                )
            if p.name in seen:
                raise SchemaError(f"{where}.parameters[{i}]", f"duplicate parameter {p.name!r}")
            seen.add(p.name)
        object.__setattr__(self, "parameters", params)
        object.__setattr__(self, "examples", _text_tuple(self.examples, f"{where}.examples"))
        object.__setattr__(self, "tags", _text_tuple(self.tags, f"{where}.tags"))
        if self.source is not None and not isinstance(self.source, Mapping):
            raise SchemaError(f"{where}.source", "expected a mapping or None")
        if self.source is not None:
            check_json(self.source, f"{where}.source")

    def parent_of(self, name: str) -> str | None:
        """The parameter that parameter ``name`` is nested in, or ``None`` at top level.

        A sub-parameter is named ``<parent>.<key>``, or ``<parent>[].<key>`` for the
        objects of an array parameter; the parent is the longest such prefix that is
        itself a parameter of this tool (so a top-level name that merely contains a dot,
        like ``"filter.name"``, stays top-level).
        """
        return _parent(name, {p.name for p in self.parameters})

    @property
    def top_level_parameters(self) -> tuple[Parameter, ...]:
        """The parameters that are not nested in another one (the tool's own arguments)."""
        names = {p.name for p in self.parameters}
        return tuple(p for p in self.parameters if _parent(p.name, names) is None)

    def to_openai(self, *, api: str = "chat") -> dict[str, Any]:
        """The tool as an OpenAI function tool (:func:`toolsift.adapters.writers.to_openai`).

        Args:
            api: ``"chat"`` (Chat Completions, ``{"type": "function", "function":
                {...}}``) or ``"responses"`` (Responses API, flat).
        """
        from .adapters.writers import to_openai

        return to_openai(self, api=api)

    def to_anthropic(self) -> dict[str, Any]:
        """The tool as an Anthropic Messages API tool (``name``, ``description``,
        ``input_schema``)."""
        from .adapters.writers import to_anthropic

        return to_anthropic(self)

    def to_mcp(self, *, examples: bool = False) -> dict[str, Any]:
        """The tool as an MCP ``tools/list`` entry (:func:`toolsift.adapters.writers.to_mcp`).

        Args:
            examples: Also write the example intents under ``_meta``.
        """
        from .adapters.writers import to_mcp

        return to_mcp(self, examples=examples)

    def to_format(self, format: str) -> dict[str, Any]:
        """The tool in host ``format``: ``"openai"``, ``"openai-responses"``,
        ``"anthropic"`` or ``"mcp"``.

        Raises:
            FormatError: For an unknown format.
        """
        from .adapters.writers import to_format

        return to_format(self, format)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (the toolsift native catalogue format)."""
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "parameters": [p.to_dict() for p in self.parameters],
            "response": self.response,
            "examples": list(self.examples),
            "tags": list(self.tags),
        }
        if self.source is not None:
            out["source"] = dict(self.source)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "tool") -> Tool:
        """Build from the :meth:`to_dict` form, naming ``where`` in errors."""
        if not isinstance(data, Mapping):
            raise SchemaError(where, f"expected an object, got {type(data).__name__}")
        name = data.get("name")
        if not isinstance(name, str) or not name.strip():
            raise SchemaError(f"{where}.name", "must be a non-empty string")
        raw_params = data.get("parameters") or []
        if not isinstance(raw_params, Sequence) or isinstance(raw_params, (str, bytes)):
            raise SchemaError(f"{where}.parameters", "expected a list")
        params = tuple(
            Parameter.from_dict(p, where=f"{where}.parameters[{i}]")
            for i, p in enumerate(raw_params)
        )
        try:
            return cls(
                id=data.get("id") or name,
                name=name,
                description=data.get("description") or "",
                parameters=params,
                response=data.get("response") or "",
                examples=data.get("examples") or (),
                tags=data.get("tags") or (),
                source=data.get("source"),
            )
        except SchemaError as exc:
            raise SchemaError(where, str(exc)) from None


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
            _text(getattr(self, name), f"need.{name}", error=QueryError)
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
            args[k] = _text(v, f"query.arguments[{k!r}]", error=QueryError)
        object.__setattr__(self, "arguments", args)
        _text(self.text, "query.text", error=QueryError)

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


class Catalog(Sequence[Tool]):
    """An ordered collection of tools with unique ids.

    Args:
        tools: The tools. Ids must be unique.
        name: A label for messages and manifests.

    Raises:
        SchemaError: On a duplicate id or an element that is not a :class:`Tool`.
    """

    def __init__(self, tools: Iterable[Tool], *, name: str = "catalog") -> None:
        self.name = name
        self._tools: list[Tool] = []
        self._by_id: dict[str, int] = {}
        for i, t in enumerate(tools):
            if not isinstance(t, Tool):
                raise SchemaError(f"{name}[{i}]", f"expected Tool, got {type(t).__name__}")
            if t.id in self._by_id:
                raise SchemaError(
                    f"{name}[{i}] (id={t.id!r})",
                    f"duplicate tool id; first seen at position {self._by_id[t.id]}",
                )
            self._by_id[t.id] = i
            self._tools.append(t)

    def __len__(self) -> int:
        return len(self._tools)

    def __getitem__(self, i):  # type: ignore[override]
        return self._tools[i]

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools)

    def __contains__(self, tool_id: object) -> bool:
        return tool_id in self._by_id

    @property
    def ids(self) -> list[str]:
        """Tool ids in catalogue order (a stored catalogue answers without decoding tools)."""
        return list(self._by_id)

    def get(self, tool_id: str) -> Tool:
        """The tool with ``tool_id``; raises ``KeyError`` naming the id if absent."""
        try:
            return self._tools[self._by_id[tool_id]]
        except KeyError:
            raise KeyError(f"no tool with id {tool_id!r} in {self.name}") from None

    def position(self, tool_id: str) -> int:
        """Position of ``tool_id`` in the catalogue."""
        return self._by_id[tool_id]

    def to_list(self) -> list[dict[str, Any]]:
        """Native JSON form: a list of :meth:`Tool.to_dict` objects."""
        return [t.to_dict() for t in self._tools]

    def __repr__(self) -> str:
        return f"Catalog(name={self.name!r}, tools={len(self)})"


def check_finite(value: float, where: str) -> float:
    """Return ``value`` as float, raising :class:`SchemaError` if it is not finite."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise SchemaError(where, f"expected a number, got {value!r}") from None
    if not math.isfinite(f):
        raise SchemaError(where, f"expected a finite number, got {value!r}")
    return f
