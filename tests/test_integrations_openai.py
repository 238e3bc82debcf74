"""The OpenAI wrapper end to end: the real ``openai`` SDK against a loopback chat server.

Every assertion is on what the SDK actually sent over HTTP.
"""

from __future__ import annotations

import asyncio
import json

import openai
import pytest

from toolsift import SchemaError, ToolsiftError
from toolsift.integrations.openai import ToolsiftOpenAI, wrap

from .chat_api_server import ChatAPIServer, chat_reply, responses_reply

K = 3
PINNED = "get_current_weather"


@pytest.fixture()
def server():
    with ChatAPIServer() as srv:
        yield srv


def _client(srv, cls=openai.OpenAI):
    return cls(base_url=srv.url + "/v1", api_key="test", max_retries=0)


def _names(body):
    return [t["function"]["name"] for t in body.get("tools", [])]


def _expected(demo_index, query):
    return [h.name for h in demo_index.search(query, k=K) if h.matched]


def test_tools_shrink_found_tools_persist_pinned_always(server, demo_catalog, demo_index):
    client = wrap(_client(server), demo_catalog.to_list(), pinned=[PINNED], k=K)
    found = _expected(demo_index, "send an email")
    assert "send_email" in found and len(found) >= 2
    server.script(chat_reply(calls=[("c1", "tool_search", {"query": "send an email"})]),
                  chat_reply(calls=[("c2", "send_email", {"to": "boss@example.com", "subject": "Q3"})]))
    messages = [{"role": "user", "content": "Email the Q3 report to my manager"}]
    reply = client.chat.completions.create(model="test-model", messages=messages)

    first, second = server.bodies
    assert server.requests[0]["path"] == "/v1/chat/completions"
    # 60 catalogue tools, but the model first sees only the search tool and the pinned one.
    assert _names(first) == ["tool_search", PINNED]
    assert _names(second) == ["tool_search", PINNED, *found]
    # The search ran locally and its result went back as a tool message.
    assert second["messages"][1]["tool_calls"][0]["function"]["name"] == "tool_search"
    result = json.loads(second["messages"][2]["content"])
    assert {k: v for k, v in second["messages"][2].items() if k != "content"} == {"role": "tool",
                                                                                 "tool_call_id": "c1"}
    assert [f["name"] for f in result["found"]] == found
    # The send_email schema is the catalogue's, converted to OpenAI form.
    schema = next(t for t in second["tools"] if t["function"]["name"] == "send_email")
    assert set(schema["function"]["parameters"]["properties"]) >= {"to", "subject"}
    # The caller sees only the real call.
    assert [c.function.name for c in reply.choices[0].message.tool_calls] == ["send_email"]
    assert len(reply.toolsift_messages) == 2

    # Next turn without the search exchange: the tool the model called stays.
    messages += [reply.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": "c2", "content": "sent"}]
    server.script(chat_reply(content="Done."))
    client.chat.completions.create(model="test-model", messages=messages)
    assert _names(server.bodies[2]) == ["tool_search", PINNED, "send_email"]

    # With the exchange kept in the history, every found tool stays.
    history = [messages[0], *reply.toolsift_messages, *messages[1:]]
    server.script(chat_reply(content="Done."))
    out = client.chat.completions.create(model="test-model", messages=history)
    assert out.choices[0].message.content == "Done."
    assert set(_names(server.bodies[3])) == {"tool_search", PINNED, *found}
    assert len(server.requests) == 4


def test_search_rounds_are_bounded(server, demo_catalog):
    client = ToolsiftOpenAI(_client(server), demo_catalog, k=K, max_searches=2)
    server.script(chat_reply(calls=[("a", "tool_search", {"query": "weather forecast"})]),
                  chat_reply(calls=[("b", "tool_search", {"query": "air quality"})]),
                  chat_reply(content="I could not find it."))
    forced = {"type": "function", "function": {"name": "tool_search"}}
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                           tool_choice=forced)
    assert reply.choices[0].message.content == "I could not find it."
    assert len(server.requests) == 3
    # Forcing the search applies to the first round only.
    assert [b["tool_choice"] for b in server.bodies] == [forced, "auto", "auto"]
    last = server.bodies[2]
    assert "tool_search" not in _names(last)
    # Tools found by both searches are still offered on the last round.
    assert {"get_weather_forecast", "get_air_quality"} <= set(_names(last))
    assert len(reply.toolsift_messages) == 4


def test_search_on_the_last_round_is_not_passed_to_the_caller(server, demo_catalog):
    client = wrap(_client(server), demo_catalog, max_searches=1)
    server.script(chat_reply(calls=[("a", "tool_search", {"query": "lock the door"})]),
                  chat_reply(content="Searching once more.", calls=[("b", "tool_search", {"query": "lights"})]))
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert len(server.requests) == 2 and "tool_search" not in _names(server.bodies[1])
    message = reply.choices[0].message
    assert message.tool_calls is None and message.content == "Searching once more."
    assert [m["role"] for m in reply.toolsift_messages] == ["assistant", "tool", "assistant", "tool"]


def test_no_tools_left_drops_tool_options(server, demo_catalog):
    client = wrap(_client(server), demo_catalog, max_searches=0)
    server.script(chat_reply(content="hello"))
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                   tool_choice="auto", parallel_tool_calls=False)
    body = server.bodies[0]
    assert "tools" not in body and "tool_choice" not in body and "parallel_tool_calls" not in body


def test_mixed_reply_strips_search_calls(server, demo_catalog, demo_index):
    client = wrap(_client(server), demo_catalog, k=K)
    server.script(chat_reply(calls=[("s", "tool_search", {"query": "book a hotel"}),
                                    ("r", "get_current_weather", {"location": "Paris"})]))
    own = {"type": "function", "function": {"name": "get_current_weather", "parameters": {"type": "object"}}}
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "trip"}],
                                           tools=[own])
    assert len(server.requests) == 1
    # A tool the caller passes itself is sent as given.
    assert _names(server.bodies[0]) == ["tool_search", "get_current_weather"]
    assert [c.id for c in reply.choices[0].message.tool_calls] == ["r"]
    assistant, result = reply.toolsift_messages
    assert [c["id"] for c in assistant["tool_calls"]] == ["s"]
    assert [f["name"] for f in json.loads(result["content"])["found"]] == _expected(demo_index, "book a hotel")


def test_malformed_search_arguments_go_back_to_the_model(server, demo_catalog):
    client = wrap(_client(server), demo_catalog)
    server.script(chat_reply(calls=[("x", "tool_search", "{not json")]),
                  chat_reply(calls=[("y", "tool_search", {"q": "no query key"})]),
                  chat_reply(content="ok"))
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    errors = [json.loads(b["messages"][-1]["content"]) for b in server.bodies[1:]]
    assert "not valid JSON" in errors[0]["error"] and "query" in errors[1]["error"]
    assert _names(server.bodies[2]) == ["tool_search"]


def test_concurrent_conversations_do_not_share_state(server, demo_catalog):
    client = wrap(_client(server), demo_catalog)
    a = [{"role": "user", "content": "x"},
         {"role": "assistant", "content": None, "tool_calls": [
             {"id": "1", "type": "function", "function": {"name": "send_email", "arguments": "{}"}}]},
         {"role": "tool", "tool_call_id": "1", "content": "ok"}]
    b = [{"role": "user", "content": "y"},
         {"role": "assistant", "content": None, "tool_calls": [
             {"id": "2", "type": "function", "function": {"name": "lock_door", "arguments": "{}"}}]},
         {"role": "tool", "tool_call_id": "2", "content": "ok"}]
    server.script(chat_reply(content="a"), chat_reply(content="b"), chat_reply(content="a"))
    for history in (a, b, a):
        client.chat.completions.create(model="m", messages=history)
    assert [_names(body) for body in server.bodies] == [
        ["tool_search", "send_email"], ["tool_search", "lock_door"], ["tool_search", "send_email"]]


def test_async_client(server, demo_catalog, demo_index):
    client = wrap(_client(server, openai.AsyncOpenAI), demo_catalog, k=K)
    server.script(chat_reply(calls=[("c1", "tool_search", {"query": "track my order"})]),
                  chat_reply(calls=[("c2", "track_order", {"order_id": "42"})]))
    messages = [{"role": "user", "content": "?"}]
    reply = asyncio.run(client.chat.completions.create(model="m", messages=messages))
    assert reply.choices[0].message.tool_calls[0].function.name == "track_order"
    assert _names(server.bodies[1]) == ["tool_search", *_expected(demo_index, "track my order")]


def test_responses_api(server, demo_catalog, demo_index):
    client = wrap(_client(server), demo_catalog, pinned=[PINNED], k=K)
    server.script(
        responses_reply({"type": "function_call", "id": "fc1", "call_id": "c1", "name": "tool_search",
                         "arguments": json.dumps({"query": "send an email"}), "status": "completed"}),
        responses_reply({"type": "function_call", "id": "fc2", "call_id": "c2", "name": "send_email",
                         "arguments": "{}", "status": "completed"}))
    reply = client.responses.create(model="m", input="Email my manager")
    first, second = server.bodies
    assert server.requests[0]["path"] == "/v1/responses"
    assert [t["name"] for t in first["tools"]] == ["tool_search", PINNED]
    assert [t["name"] for t in second["tools"]] == ["tool_search", PINNED, *_expected(demo_index, "send an email")]
    assert all(t["type"] == "function" and "parameters" in t for t in second["tools"])
    kinds = [item.get("type", item.get("role")) for item in second["input"]]
    assert kinds == ["user", "function_call", "function_call_output"]
    assert [o.name for o in reply.output] == ["send_email"]

    # The next turn derives the found set from the input items.
    server.script(responses_reply({"type": "message", "id": "m", "role": "assistant", "status": "completed",
                                   "content": [{"type": "output_text", "text": "ok", "annotations": []}]}))
    items = [{"role": "user", "content": "Email my manager"}, *reply.toolsift_messages,
             *(o.model_dump(exclude_none=True) for o in reply.output),
             {"type": "function_call_output", "call_id": "c2", "output": "sent"}]
    client.responses.create(model="m", input=items)
    assert {t["name"] for t in server.bodies[2]["tools"]} == {"tool_search", PINNED,
                                                              *_expected(demo_index, "send an email")}


def test_responses_previous_response_id_sends_only_new_items(server, demo_catalog):
    client = wrap(_client(server), demo_catalog)
    server.script(
        responses_reply({"type": "function_call", "id": "fc1", "call_id": "c1", "name": "tool_search",
                         "arguments": json.dumps({"query": "lights"}), "status": "completed"}, rid="resp_2"),
        responses_reply(rid="resp_3"))
    client.responses.create(model="m", input="turn the lights on", previous_response_id="resp_1")
    first, second = server.bodies
    assert first["previous_response_id"] == "resp_1"
    assert second["previous_response_id"] == "resp_2"
    assert [item["type"] for item in second["input"]] == ["function_call_output"]


def test_bad_setup_and_calls_raise_typed_errors(server, demo_catalog):
    with pytest.raises(SchemaError, match="pinned.*'nope'"):
        wrap(_client(server), demo_catalog, pinned=["nope"])
    with pytest.raises(ToolsiftError, match="expected an openai"):
        wrap(object(), demo_catalog)
    dup = [{"type": "function", "function": {"name": "a", "description": "x"}}] * 2
    with pytest.raises(SchemaError):
        wrap(_client(server), dup)
    with pytest.raises(SchemaError, match="search tool"):
        wrap(_client(server), [{"type": "function", "function": {"name": "tool_search"}}])
    client = wrap(_client(server), demo_catalog)
    with pytest.raises(ToolsiftError, match="stream=True"):
        client.chat.completions.create(model="m", messages=[], stream=True)
    assert server.requests == []
    # Everything not wrapped is the SDK client's own.
    assert client.base_url == _client(server).base_url
