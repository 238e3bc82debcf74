"""The four-field tool schema and the structured query.

A :class:`Tool` is standardised into the four fields MFTR scores separately:
``description``, ``parameters``, ``response`` and ``examples``. A :class:`Query` holds
one or more :class:`ToolNeed` (what the user wants done, what a fitting tool's
description and response would say) plus extracted ``arguments`` (abstract roles such as
``{"recipient": "email address of the person to notify"}``).

The query types live in :mod:`toolsift.query_types` and the text checks in
:mod:`toolsift.text_checks`; both are re-exported here.

Validation happens at construction time and raises :class:`~toolsift.errors.SchemaError`
naming the offending item, so bad data never reaches the C++ core.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import SchemaError
from .jsoncheck import MAX_NESTING, check_json, no_surrogates
from .query_types import Query, ToolNeed
from .text_checks import MAX_TEXT_CHARS, query_text
from .text_checks import check_finite as check_finite
from .text_checks import check_text as _text

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
