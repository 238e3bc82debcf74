"""A drop-in wrapper for the official ``anthropic`` client (extra ``anthropic``).

Give the wrapper the full tool list once; every ``messages.create`` call then sends
Claude a ``tool_search`` tool plus the tools found so far instead of the whole
catalogue. When Claude calls ``tool_search`` the wrapper runs the search locally with
toolsift, adds the found tools, and asks again (at most ``max_searches`` rounds), so the
caller only ever sees real ``tool_use`` blocks::

    from anthropic import Anthropic
    from toolsift.integrations.anthropic import wrap

    client = wrap(Anthropic(), tools="tools.json", pinned=["get_time"], k=5)
    reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=messages)

Nothing is kept between calls: the tools sent are derived from ``messages``, see
:mod:`toolsift.integrations._toolset`. The wrapper's own search exchanges come back as
``reply.toolsift_messages`` (an assistant turn with the ``tool_use`` blocks and a user
turn with their ``tool_result`` blocks, per round, to put *before* the reply in the
history); appending them keeps every found tool for the next turns, not only the ones
Claude called. When a reply mixes search calls with real ones, the searches are run,
moved into ``toolsift_messages`` and removed from ``reply.content``. Tools passed to
``create(tools=...)`` are sent as well, unchanged; ``stream=True`` is refused.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import ToolsiftError
from ..extras import require_extra
from ..gateway.formats import to_anthropic
from ._toolset import (
    ToolSearch,
    ToolsSource,
    WrappedClient,
    WrappedEndpoint,
    field,
    reject_stream,
    round_kwargs,
)

__all__ = ["ToolsiftAnthropic", "wrap"]


def _require_anthropic() -> Any:
    return require_extra("anthropic", extra="anthropic", feature="toolsift.integrations.anthropic")


class ToolsiftAnthropic(WrappedClient):
    """An ``anthropic.Anthropic`` / ``AsyncAnthropic`` client whose requests carry only the tools that matter.

    ``messages.create`` is wrapped; every other attribute is the wrapped client's.

    Args:
        client: An ``anthropic.Anthropic`` or ``anthropic.AsyncAnthropic``.
        tools: The full tool list (see :class:`~toolsift.integrations._toolset.ToolSearch`).
        pinned: Tool names sent with every request.
        k: Tools returned by one search.
        max_searches: Search rounds per ``create`` call.
        max_tools: Found tools sent at most.
        search_tool_name: The search tool's name.

    Raises:
        ToolsiftError: ``client`` is not an Anthropic client.
        SchemaError, ConfigError: See :class:`~toolsift.integrations._toolset.ToolSearch`.
    """

    def __init__(self, client: Any, tools: ToolsSource, **options: Any) -> None:
        super().__init__(client, tools, **options)
        self.messages = WrappedEndpoint(self, ("messages",), _messages_loop)

    @staticmethod
    def _client_types() -> tuple[type, type]:
        anthropic = _require_anthropic()
        return anthropic.Anthropic, anthropic.AsyncAnthropic


def wrap(client: Any, tools: ToolsSource, **options: Any) -> ToolsiftAnthropic:
    """``ToolsiftAnthropic(client, tools, **options)``: the wrapped client."""
    return ToolsiftAnthropic(client, tools, **options)


def _blocks(content: Any) -> Sequence[Any]:
    return content if isinstance(content, (list, tuple)) else ()


def _events(messages: Sequence[Any]) -> Iterator[tuple[str, Any, Any]]:
    """Messages API history as :meth:`ToolSearch.found_in_history` events."""
    for m in messages:
        for block in _blocks(field(m, "content")):
            kind = field(block, "type")
            if kind == "tool_use":
                yield "call", field(block, "id"), field(block, "name")
            elif kind == "tool_result":
                yield "result", field(block, "tool_use_id"), field(block, "content")


def _dump(block: Any) -> Any:
    return block.model_dump(mode="json", exclude_none=True) if hasattr(block, "model_dump") else block


def _messages_loop(search: ToolSearch, kwargs: dict[str, Any]) -> Any:
    reject_stream(kwargs, "messages.create")
    if "messages" not in kwargs:
        raise ToolsiftError("messages.create: messages= is required")
    messages = list(kwargs.pop("messages"))
    extra_tools = list(kwargs.pop("tools", None) or ())
    found = search.found_in_history(_events(messages))
    search_def = {"name": search.name, "description": search.description, "input_schema": search.parameters}
    added: list[dict[str, Any]] = []
    for round_ in range(search.max_searches + 1):
        tools = ([search_def] if round_ < search.max_searches else [])
        tools += [to_anthropic(t) for t in search.tools_for(found)] + extra_tools
        request = {**round_kwargs(kwargs, search.name, round_, auto={"type": "auto"}),
                   "messages": messages + added}
        if tools:
            request["tools"] = tools
        else:  # tool_choice without tools is rejected
            request.pop("tool_choice", None)
        response = yield request
        content = list(response.content or ())
        searches = [b for b in content if field(b, "type") == "tool_use" and field(b, "name") == search.name]
        if not searches:
            break
        results = []
        for block in searches:
            text, names = search.run(field(block, "input"))
            found.extend(names)
            results.append({"type": "tool_result", "tool_use_id": field(block, "id"), "content": text})
        real = [b for b in content if field(b, "type") == "tool_use" and not any(b is s for s in searches)]
        if real or round_ == search.max_searches:
            # Real calls need the caller's results (and a search on the last round, where
            # the model was not offered one, gets no further round): hand the reply back
            # without the searches, which move into the exchange the caller may keep.
            added += [{"role": "assistant", "content": [_dump(b) for b in searches]},
                      {"role": "user", "content": results}]
            response.content = [b for b in content if not any(b is s for s in searches)]
            break
        added += [{"role": "assistant", "content": [_dump(b) for b in content]},
                  {"role": "user", "content": results}]
    response.toolsift_messages = added
    return response
