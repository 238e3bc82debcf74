"""The part of the client wrappers that knows no SDK: the catalogue, ``tool_search`` and the found set.

A wrapped client keeps no conversation state. The tools a request carries are derived
from the request's own message history, so one wrapper serves any number of concurrent
conversations and a conversation can be resumed by any process:

* the pinned tools, always;
* every catalogue tool the assistant has called somewhere in the history;
* every tool listed in a ``tool_search`` result that is in the history (the wrapper
  hands its own search exchanges back as ``response.toolsift_messages``; a caller who
  appends them keeps every found tool, one who does not keeps the ones the model used);
* the tools found by searches inside the current call.

At most ``max_tools`` found tools are sent (pinned ones never count), the most recently
found or used first to stay.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from ..errors import ConfigError, QueryError, SchemaError, ToolsiftError
from ..schema import Tool

__all__ = [
    "SEARCH_TOOL_NAME", "ToolSearch", "ToolsSource", "WrappedClient", "as_index", "drive", "drive_async",
    "field", "reject_stream", "round_kwargs",
]

#: Default name of the search tool the model sees.
SEARCH_TOOL_NAME = "tool_search"

# What the user may pass as the full tool list: a built index, a catalogue, Tool objects,
# or anything load_catalog reads (a path, an OpenAI/Anthropic/MCP/OpenAPI payload ...).
ToolsSource = Any

_DESCRIPTION_CHARS = 300
_T = TypeVar("_T")


def field(obj: Any, key: str, default: Any = None) -> Any:
    """``obj[key]`` for a dict, ``obj.key`` for an SDK object (history may mix both)."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def as_index(tools: ToolsSource, *, preset: str | None = None) -> Any:
    """A :class:`~toolsift.ToolIndex` over ``tools`` (returned as is when it is one already).

    A new index is built by :meth:`~toolsift.ToolIndex.build` with ``preset``
    (:mod:`toolsift.presets`; default :func:`~toolsift.presets.default_preset`), so a
    wrapped client ranks exactly like the library and the CLI on the same catalogue.

    Raises:
        SchemaError, CatalogFormatError: ``tools`` cannot be read (see :func:`~toolsift.load_catalog`).
        ConfigError: ``preset`` is given with a ready index, or is unknown.
    """
    from ..toolindex import ToolIndex

    if isinstance(tools, ToolIndex):
        if preset is not None:
            raise ConfigError("preset: the tools are an index already (built with its own configuration)")
        return tools
    return ToolIndex.build(tools, preset=preset)


def _positive_int(value: Any, name: str, *, allow_zero: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if allow_zero else 1):
        raise ConfigError(f"{name}: expected an integer >= {0 if allow_zero else 1}, got {value!r}")
    return value


class ToolSearch:
    """The full catalogue behind a wrapped client, and the ``tool_search`` tool over it.

    Args:
        tools: The full tool list, given once: a :class:`~toolsift.ToolIndex`, a
            :class:`~toolsift.Catalog`, a list of :class:`~toolsift.Tool`, or anything
            :func:`~toolsift.load_catalog` reads (a path, an OpenAI / Anthropic / MCP /
            OpenAPI payload ...).
        pinned: Names of tools sent with every request, searched for or not.
        k: Tools returned by one search.
        max_searches: Search rounds inside one ``create`` call; after that the model is
            asked once more without the search tool, so the loop always ends.
        max_tools: Found tools sent at most (pinned tools do not count).
        search_tool_name: The name the model sees for the search tool.
        preset: Index configuration when ``tools`` is not an index yet
            (:mod:`toolsift.presets`; default :func:`~toolsift.presets.default_preset`).
        complete: Each search returns a tool set: the found tools plus the ones that
            produce their missing inputs (``ToolIndex.search(complete=True)``).

    Raises:
        SchemaError: Two catalogue tools share a name, a pinned name is not in the
            catalogue, or a catalogue tool is called like the search tool.
        QueryError: ``k`` is not an integer >= 1 (the check :meth:`ToolIndex.search` makes).
        ConfigError: Another count is not a positive integer.
    """

    def __init__(self, tools: ToolsSource, *, pinned: Sequence[str] = (), k: int = 5,
                 max_searches: int = 3, max_tools: int = 32,
                 search_tool_name: str = SEARCH_TOOL_NAME, preset: str | None = None,
                 complete: bool = False) -> None:
        from ..search.query import check_k

        check_k(k)
        self.k = k
        if not isinstance(complete, bool):
            raise ConfigError(f"complete: expected True or False, got {complete!r}")
        self.complete = complete
        self.max_searches = _positive_int(max_searches, "max_searches", allow_zero=True)
        self.max_tools = _positive_int(max_tools, "max_tools")
        if not isinstance(search_tool_name, str) or not search_tool_name.strip():
            raise ConfigError(f"search_tool_name: expected a non-empty string, got {search_tool_name!r}")
        self.name = search_tool_name
        self.index = as_index(tools, preset=preset)
        by_name: dict[str, Tool] = {}
        for tool in self.index.catalog:
            if tool.name in by_name:
                # The model calls tools by name, so a shared name could run the wrong one.
                raise SchemaError(f"tools (id={tool.id!r})", f"duplicate tool name {tool.name!r}; "
                                  "tool names must be unique for a model to call them")
            by_name[tool.name] = tool
        if self.name in by_name:
            raise SchemaError(f"tools (name={self.name!r})", "a catalogue tool has the search tool's "
                              "name; pass another search_tool_name")
        self.by_name = by_name
        if isinstance(pinned, str):
            raise SchemaError("pinned", "expected a list of tool names, got one string")
        unknown = [p for p in pinned if p not in by_name]
        if unknown:
            raise SchemaError("pinned", f"not in the catalogue: {', '.join(map(repr, unknown))}")
        self.pinned = tuple(dict.fromkeys(pinned))

    # ------------------------------------------------------------ the tool
    @property
    def description(self) -> str:
        """What the model reads about the search tool."""
        return (f"Search a catalogue of {len(self.by_name)} tools and make the best {self.k} "
                "matches available. Only the tools listed in your tool list can be called; when "
                "none of them fits the task, call this first with a short description of what "
                "you need to do, then call a found tool by its name.")

    @property
    def parameters(self) -> dict[str, Any]:
        """The search tool's JSON Schema."""
        return {
            "type": "object",
            "properties": {"query": {"type": "string",
                                     "description": "The action you need a tool for, in plain words."}},
            "required": ["query"],
            "additionalProperties": False,
        }

    def run(self, arguments: Any) -> tuple[str, list[str]]:
        """Execute one ``tool_search`` call.

        Args:
            arguments: The call's arguments as the model sent them (JSON text or a dict).

        Returns:
            The tool result text for the model (JSON) and the names of the tools found.
            A malformed call is answered with an error text for the model to correct
            rather than raised, since it is the model's mistake, not the caller's.
        """
        try:
            args = json.loads(arguments) if isinstance(arguments, (str, bytes)) else arguments
        except ValueError:
            return json.dumps({"error": "arguments are not valid JSON; send {\"query\": \"...\"}"}), []
        query = args.get("query") if isinstance(args, Mapping) else None
        if not isinstance(query, str) or not query.strip():
            return json.dumps({"error": "missing 'query': send {\"query\": \"what you need to do\"}"}), []
        try:
            hits = self.index.search(query, k=self.k, complete=self.complete)
        except QueryError as exc:
            return json.dumps({"error": str(exc)}), []
        found = [h.tool for h in hits if h.matched]
        payload: dict[str, Any] = {
            "found": [{"name": t.name, "description": _short(t.description)} for t in found],
        }
        payload["note"] = ("These tools are now in your tool list: call them by name." if found else
                           "No tool matches these words; search again with other words.")
        return json.dumps(payload, ensure_ascii=False), [t.name for t in found]

    # ------------------------------------------------------------ state
    def found_in_history(self, events: Iterable[tuple[str, Any, Any]]) -> list[str]:
        """The tools a conversation has found so far, in order, from its history as
        events (the one scan behind every wrapped API; each API only lists its events):
        ``("call", call_id, tool_name)`` for a tool call and ``("result", call_id,
        content)`` for a tool result. A call of a catalogue tool counts as found; a
        result answering a ``tool_search`` call adds the tools it lists."""
        search_ids: set[Any] = set()
        names: list[str] = []
        for kind, call_id, value in events:
            if kind == "call":
                if value == self.name:
                    search_ids.add(call_id)
                elif value in self.by_name:
                    names.append(value)
            elif kind == "result" and call_id in search_ids:
                names.extend(self.found_in_result(value))
        return names

    def found_in_result(self, content: Any) -> list[str]:
        """Tool names listed in one earlier ``tool_search`` result (text or text blocks)."""
        if isinstance(content, list):  # Anthropic / Responses text blocks
            content = "".join(str(field(b, "text", "") or "") for b in content)
        if not isinstance(content, str):
            return []
        try:
            payload = json.loads(content)
        except ValueError:
            return []
        entries = payload.get("found") if isinstance(payload, Mapping) else None
        if not isinstance(entries, list):
            return []
        return [e["name"] for e in entries
                if isinstance(e, Mapping) and isinstance(e.get("name"), str) and e["name"] in self.by_name]

    def tools_for(self, found: Iterable[str]) -> list[Tool]:
        """Pinned tools, then at most ``max_tools`` of ``found`` (the last ones win)."""
        recent: dict[str, None] = {}
        for name in found:
            if name in self.by_name and name not in self.pinned:
                recent.pop(name, None)
                recent[name] = None
        kept = list(recent)[-self.max_tools:]
        return [self.by_name[n] for n in (*self.pinned, *kept)]


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _DESCRIPTION_CHARS else text[:_DESCRIPTION_CHARS - 1] + "…"


def reject_stream(kwargs: Mapping[str, Any], api: str) -> None:
    """Streaming would hand the caller ``tool_search`` calls before they are run; refuse it."""
    if kwargs.get("stream"):
        raise ToolsiftError(f"{api}: stream=True is not supported by the toolsift wrapper "
                            "(the search calls must be run before the caller sees the reply)")


def round_kwargs(kwargs: dict[str, Any], search_name: str, round_: int, *, auto: Any) -> dict[str, Any]:
    """``kwargs`` for search round ``round_``: a ``tool_choice`` that forces the search
    tool applies to the first round only (``auto`` after it), or every round would
    search again and the last one, sent without the search tool, would be rejected."""
    choice = kwargs.get("tool_choice")
    if round_ and isinstance(choice, Mapping) and search_name in (
            field(choice, "name"), field(field(choice, "function"), "name")):
        return {**kwargs, "tool_choice": auto}
    return kwargs


# A request loop is written once as a generator that yields request kwargs and receives
# responses; these two drivers run it on a sync or an async SDK client.
Loop = Generator[dict[str, Any], Any, _T]


def drive(loop: Loop[_T], send: Callable[..., Any]) -> _T:
    """Run ``loop`` with a synchronous ``send(**request)``."""
    request = next(loop)
    while True:
        try:
            request = loop.send(send(**request))
        except StopIteration as stop:
            return stop.value


async def drive_async(loop: Loop[_T], send: Callable[..., Awaitable[Any]]) -> _T:
    """Run ``loop`` with an asynchronous ``send(**request)``."""
    request = next(loop)
    while True:
        response = await send(**request)
        try:
            request = loop.send(response)
        except StopIteration as stop:
            return stop.value


class WrappedClient:
    """What the SDK wrappers share: the client check, the :class:`ToolSearch`, pass-through.

    A subclass names its SDK's sync and async client classes (:meth:`_client_types`) and
    attaches its wrapped endpoints in ``__init__`` after calling this one; every other
    attribute is the wrapped client's.
    """

    def __init__(self, client: Any, tools: ToolsSource, *, pinned: Sequence[str] = (), k: int = 5,
                 max_searches: int = 3, max_tools: int = 32, search_tool_name: str = SEARCH_TOOL_NAME,
                 preset: str | None = None, complete: bool = False) -> None:
        sync_type, async_type = self._client_types()
        if not isinstance(client, (sync_type, async_type)):
            raise ToolsiftError(f"client: expected an {sync_type.__module__.split('.')[0]}.{sync_type.__name__} "
                                f"or {async_type.__name__} client, got {type(client).__name__}")
        self._client = client
        self._async = isinstance(client, async_type)
        self.search = ToolSearch(tools, pinned=pinned, k=k, max_searches=max_searches,
                                 max_tools=max_tools, search_tool_name=search_tool_name, preset=preset,
                                 complete=complete)

    @staticmethod
    def _client_types() -> tuple[type, type]:
        raise NotImplementedError

    def _run(self, loop: Any, send: Any) -> Any:
        return drive_async(loop, send) if self._async else drive(loop, send)

    def __getattr__(self, name: str) -> Any:
        if name == "_client":  # not set yet (a failed __init__): no endless recursion
            raise AttributeError(name)
        return getattr(self._client, name)


class WrappedEndpoint:
    """One SDK endpoint (``client.<path>``) whose ``create`` runs a search loop; every
    other attribute is the SDK endpoint's.

    Args:
        owner: The wrapped client.
        path: Attribute path from the SDK client to the endpoint (``("chat", "completions")``).
        loop: ``loop(search, kwargs)``, the generator that drives one ``create`` call.
    """

    def __init__(self, owner: WrappedClient, path: tuple[str, ...],
                 loop: Callable[[ToolSearch, dict[str, Any]], Any]) -> None:
        self._owner = owner
        self._path = path
        self._loop = loop

    def _target(self) -> Any:
        obj = self._owner._client
        for name in self._path:
            obj = getattr(obj, name)
        return obj

    def __getattr__(self, name: str) -> Any:
        if name in ("_owner", "_path", "_loop"):  # not set yet: no endless recursion
            raise AttributeError(name)
        return getattr(self._target(), name)

    def create(self, **kwargs: Any) -> Any:
        """The SDK's ``create`` with the catalogue behind the search tool.

        Returns the SDK's response (awaitable for an async client), with
        ``toolsift_messages`` set to the messages (or input items) of the searches.
        """
        owner = self._owner
        return owner._run(self._loop(owner.search, kwargs), self._target().create)
