"""A drop-in wrapper for the official ``openai`` client (extra ``openai``).

Give the wrapper the full tool list once; every ``chat.completions.create`` and
``responses.create`` call then sends the model a ``tool_search`` tool plus the tools
found so far instead of the whole catalogue. When the model calls ``tool_search`` the
wrapper runs the search locally with toolsift, adds the found tools, and asks the model
again (at most ``max_searches`` rounds), so the caller only ever sees real tool calls::

    from openai import OpenAI
    from toolsift.integrations.openai import wrap

    client = wrap(OpenAI(), tools="tools.json", pinned=["get_time"], k=5)
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)

Nothing is kept between calls: the tools sent are derived from ``messages`` (or the
Responses API ``input``), see :mod:`toolsift.integrations._toolset`. The wrapper's own
search exchanges come back as ``reply.toolsift_messages`` (items to put *before* the
reply's message in the history); appending them keeps every found tool for the next
turns, not only the ones the model called. When a reply mixes search calls with real
calls, the search calls are run, moved into ``toolsift_messages`` and removed from the
reply. Tools passed to ``create(tools=...)`` are sent as well, unchanged. Only the first
choice is inspected; ``stream=True`` is refused. ``previous_response_id`` works, but the
earlier turns it points to are not visible to the wrapper, so only tools found in this
call and pinned ones are sent.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, cast

from ..errors import ToolsiftError
from ..extras import require_extra
from ..gateway.formats import to_openai
from ._toolset import (
    ToolSearch,
    ToolsSource,
    WrappedClient,
    WrappedEndpoint,
    field,
    reject_stream,
    round_kwargs,
)

__all__ = ["ToolsiftOpenAI", "wrap"]


def _require_openai() -> Any:
    return require_extra("openai", extra="openai", feature="toolsift.integrations.openai")


class ToolsiftOpenAI(WrappedClient):
    """An ``openai.OpenAI`` / ``AsyncOpenAI`` client whose requests carry only the tools that matter.

    ``chat.completions.create`` and ``responses.create`` are wrapped; every other
    attribute is the wrapped client's.

    Args:
        client: An ``openai.OpenAI`` or ``openai.AsyncOpenAI`` (Azure ones too).
        tools: The full tool list (see :class:`~toolsift.integrations._toolset.ToolSearch`).
        pinned: Tool names sent with every request.
        k: Tools returned by one search.
        max_searches: Search rounds per ``create`` call.
        max_tools: Found tools sent at most.
        search_tool_name: The search tool's name.

    Raises:
        ToolsiftError: ``client`` is not an OpenAI client.
        SchemaError, ConfigError: See :class:`~toolsift.integrations._toolset.ToolSearch`.
    """

    def __init__(self, client: Any, tools: ToolsSource, **options: Any) -> None:
        super().__init__(client, tools, **options)
        self.chat = _Chat(self)
        self.responses = WrappedEndpoint(self, ("responses",), _responses_loop)

    @staticmethod
    def _client_types() -> tuple[type, type]:
        openai = _require_openai()
        return openai.OpenAI, openai.AsyncOpenAI


def wrap(client: Any, tools: ToolsSource, **options: Any) -> ToolsiftOpenAI:
    """``ToolsiftOpenAI(client, tools, **options)``: the wrapped client."""
    return ToolsiftOpenAI(client, tools, **options)


# ---------------------------------------------------------------- Chat Completions
class _Chat:
    """``client.chat``: ``completions`` wrapped, everything else the SDK's."""

    def __init__(self, owner: ToolsiftOpenAI) -> None:
        self._owner = owner
        self.completions = WrappedEndpoint(owner, ("chat", "completions"), _chat_loop)

    def __getattr__(self, name: str) -> Any:
        return getattr(cast(Any, self._owner._client).chat, name)


def _chat_events(messages: Sequence[Any]) -> Iterator[tuple[str, Any, Any]]:
    """Chat Completions history as :meth:`ToolSearch.found_in_history` events."""
    for m in messages:
        role = field(m, "role")
        if role == "assistant":
            for call in field(m, "tool_calls") or ():
                yield "call", field(call, "id"), field(field(call, "function"), "name")
        elif role == "tool":
            yield "result", field(m, "tool_call_id"), field(m, "content")


def _chat_call(call: Any) -> dict[str, Any]:
    return {"id": call.id, "type": "function",
            "function": {"name": call.function.name, "arguments": call.function.arguments}}


def _chat_loop(search: ToolSearch, kwargs: dict[str, Any]) -> Any:
    reject_stream(kwargs, "chat.completions.create")
    if "messages" not in kwargs:
        raise ToolsiftError("chat.completions.create: messages= is required")
    messages = list(kwargs.pop("messages"))
    extra_tools = list(kwargs.pop("tools", None) or ())
    found = search.found_in_history(_chat_events(messages))
    search_def = {"type": "function", "function": {"name": search.name, "description": search.description,
                                                   "parameters": search.parameters}}
    added: list[dict[str, Any]] = []
    for round_ in range(search.max_searches + 1):
        tools = ([search_def] if round_ < search.max_searches else [])
        tools += [to_openai(t) for t in search.tools_for(found)] + extra_tools
        request = {**round_kwargs(kwargs, search.name, round_, auto="auto"), "messages": messages + added}
        if tools:
            request["tools"] = tools
        else:  # the API rejects an empty tool list and tool options without tools
            for key in ("tool_choice", "parallel_tool_calls"):
                request.pop(key, None)
        response = yield request
        message = response.choices[0].message
        calls = list(message.tool_calls or ())
        searches = [c for c in calls if getattr(c, "function", None) is not None
                    and c.function.name == search.name]
        if not searches:
            break
        rest = [c for c in calls if not any(c is s for s in searches)]
        results = []
        for call in searches:
            text, names = search.run(call.function.arguments)
            found.extend(names)
            results.append({"role": "tool", "tool_call_id": call.id, "content": text})
        if rest or round_ == search.max_searches:
            # Real calls need the caller's results (and a search on the last round, where
            # the model was not offered one, gets no further round): hand the reply back
            # without the searches, which move into the exchange the caller may keep.
            added += [{"role": "assistant", "content": None, "tool_calls": [_chat_call(c) for c in searches]},
                      *results]
            message.tool_calls = rest or None
            break
        added += [{"role": "assistant", "content": message.content,
                   "tool_calls": [_chat_call(c) for c in calls]}, *results]
    response.toolsift_messages = added
    return response


# ---------------------------------------------------------------- Responses API
def _responses_tool(chat_tool: dict[str, Any]) -> dict[str, Any]:
    fn = chat_tool["function"]
    # Responses function tools are flat; strict mode is opt-in here because catalogue
    # schemas are rarely written for it.
    return {"type": "function", "name": fn["name"], "description": fn.get("description", ""),
            "parameters": fn["parameters"], "strict": bool(fn.get("strict", False))}


def _responses_events(items: Sequence[Any]) -> Iterator[tuple[str, Any, Any]]:
    """Responses API input items as :meth:`ToolSearch.found_in_history` events."""
    for item in items:
        kind = field(item, "type")
        if kind == "function_call":
            yield "call", field(item, "call_id"), field(item, "name")
        elif kind == "function_call_output":
            yield "result", field(item, "call_id"), field(item, "output")


def _item(item: Any) -> Any:
    return item.model_dump(mode="json", exclude_none=True) if hasattr(item, "model_dump") else item


def _responses_loop(search: ToolSearch, kwargs: dict[str, Any]) -> Any:
    reject_stream(kwargs, "responses.create")
    given = kwargs.pop("input", None)
    items = [{"role": "user", "content": given}] if isinstance(given, str) else list(given or ())
    extra_tools = list(kwargs.pop("tools", None) or ())
    found = search.found_in_history(_responses_events(items))
    search_def = {"type": "function", "name": search.name, "description": search.description,
                  "parameters": search.parameters, "strict": False}
    added: list[Any] = []
    # With previous_response_id the server holds the conversation: each further round
    # sends only the new search results, chained to the reply they answer.
    chained = kwargs.get("previous_response_id") is not None
    pending: list[Any] = []
    response: Any = None  # the previous round's reply (set before any round that chains)
    for round_ in range(search.max_searches + 1):
        tools = ([search_def] if round_ < search.max_searches else [])
        tools += [_responses_tool(to_openai(t)) for t in search.tools_for(found)] + extra_tools
        request = {**round_kwargs(kwargs, search.name, round_, auto="auto"),
                   "input": (pending if round_ else items) if chained else items + added}
        if chained and round_:
            request["previous_response_id"] = response.id
        if tools:
            request["tools"] = tools
        else:
            for key in ("tool_choice", "parallel_tool_calls"):
                request.pop(key, None)
        response = yield request
        output = list(response.output or ())
        calls = [o for o in output if field(o, "type") == "function_call"]
        searches = [o for o in calls if field(o, "name") == search.name]
        if not searches:
            break
        real = [o for o in calls if not any(o is s for s in searches)]
        results = []
        for call in searches:
            text, names = search.run(field(call, "arguments"))
            found.extend(names)
            results.append({"type": "function_call_output", "call_id": field(call, "call_id"),
                            "output": text})
        if real or round_ == search.max_searches:  # as in _chat_loop
            added += [*(_item(c) for c in searches), *results]
            response.output = [o for o in output if not any(o is s for s in searches)]
            break
        # Every output item goes back (reasoning items must precede their calls).
        added += [*(_item(o) for o in output), *results]
        pending = results
    response.toolsift_messages = added
    return response
