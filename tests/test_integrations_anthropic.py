"""The Anthropic wrapper end to end: the real ``anthropic`` SDK against a loopback server.

Every assertion is on what the SDK actually sent over HTTP.
"""

from __future__ import annotations

import asyncio
import json

import anthropic
import pytest

from toolsift import SchemaError, ToolIndex, ToolsiftError
from toolsift.adapters import load_catalog
from toolsift.gateway.formats import to_anthropic
from toolsift.integrations.anthropic import ToolsiftAnthropic, wrap

from .chat_api_server import ChatAPIServer, anthropic_reply

K = 3
PINNED = "create_reminder"


@pytest.fixture()
def server():
    with ChatAPIServer() as srv:
        yield srv


def _client(srv, cls=anthropic.Anthropic):
    return cls(base_url=srv.url, api_key="test", max_retries=0)


def _names(body):
    return [t["name"] for t in body.get("tools", [])]


def _expected(demo_index, query):
    return [h.name for h in demo_index.search(query, k=K) if h.matched]


def _use(uid, name, args):
    return {"type": "tool_use", "id": uid, "name": name, "input": args}


def test_tools_shrink_found_tools_persist_pinned_always(server, demo_catalog):
    # The catalogue given as Anthropic tool definitions: any format toolsift reads works.
    payload = [to_anthropic(t) for t in demo_catalog]
    client = wrap(_client(server), payload, pinned=[PINNED], k=K)
    # Anthropic definitions carry no response or examples, so rank against the same payload.
    found = _expected(ToolIndex.build(load_catalog(payload)), "refund a payment")
    assert "refund_payment" in found
    server.script(anthropic_reply({"type": "text", "text": "Let me look."},
                                  _use("t1", "tool_search", {"query": "refund a payment"})),
                  anthropic_reply(_use("t2", "refund_payment", {"payment_id": "p1"})))
    messages = [{"role": "user", "content": "Refund payment p1"}]
    reply = client.messages.create(model="test-model", max_tokens=100, messages=messages)

    first, second = server.bodies
    assert server.requests[0]["path"] == "/v1/messages"
    assert _names(first) == ["tool_search", PINNED]
    assert _names(second) == ["tool_search", PINNED, *found]
    assistant, user = second["messages"][1:]
    assert [b["type"] for b in assistant["content"]] == ["text", "tool_use"]
    (result,) = user["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "t1"
    assert [f["name"] for f in json.loads(result["content"])["found"]] == found
    schema = next(t for t in second["tools"] if t["name"] == "refund_payment")
    assert "payment_id" in schema["input_schema"]["properties"]
    assert [b.name for b in reply.content] == ["refund_payment"]
    assert reply.toolsift_messages == [assistant, user]

    # Next turn without the exchange: the called tool stays, the merely found ones go.
    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "ok"}]}]
    server.script(anthropic_reply({"type": "text", "text": "Refunded."}))
    client.messages.create(model="test-model", max_tokens=100, messages=messages)
    assert _names(server.bodies[2]) == ["tool_search", PINNED, "refund_payment"]

    # With the exchange kept, every found tool stays.
    server.script(anthropic_reply({"type": "text", "text": "Refunded."}))
    client.messages.create(model="test-model", max_tokens=100,
                           messages=[messages[0], *reply.toolsift_messages, *messages[1:]])
    assert set(_names(server.bodies[3])) == {"tool_search", PINNED, *found}
    assert len(server.requests) == 4


def test_search_rounds_are_bounded_and_tool_choice_dropped(server, demo_bm25_index):
    # BM25 alone finds nothing for gibberish (the hybrid default would find dense matches).
    client = ToolsiftAnthropic(_client(server), demo_bm25_index, max_searches=1)
    server.script(anthropic_reply(_use("a", "tool_search", {"query": "zzqx qqvv"})),
                  anthropic_reply({"type": "text", "text": "Nothing fits."}))
    reply = client.messages.create(model="m", max_tokens=10, tool_choice={"type": "auto"},
                                   messages=[{"role": "user", "content": "?"}])
    assert reply.content[0].text == "Nothing fits."
    result = json.loads(server.bodies[1]["messages"][-1]["content"][0]["content"])
    assert result["found"] == [] and "other words" in result["note"]
    # Nothing found and no search rounds left: no tools, so no tool_choice either.
    assert "tools" not in server.bodies[1] and "tool_choice" not in server.bodies[1]


def test_forced_search_applies_to_the_first_round_only(server, demo_index):
    client = wrap(_client(server), demo_index)
    server.script(anthropic_reply(_use("a", "tool_search", {"query": "lock the door"})),
                  anthropic_reply({"type": "text", "text": "ok"}))
    client.messages.create(model="m", max_tokens=10, tool_choice={"type": "tool", "name": "tool_search"},
                           messages=[{"role": "user", "content": "?"}])
    assert [b["tool_choice"] for b in server.bodies] == [{"type": "tool", "name": "tool_search"},
                                                         {"type": "auto"}]


def test_mixed_reply_strips_search_calls(server, demo_index):
    client = wrap(_client(server), demo_index, k=K)
    server.script(anthropic_reply(_use("s", "tool_search", {"query": "lock the door"}),
                                  _use("r", "lock_door", {"door": "front"})))
    reply = client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert len(server.requests) == 1
    assert [b.id for b in reply.content] == ["r"]
    assistant, user = reply.toolsift_messages
    assert [b["id"] for b in assistant["content"]] == ["s"]
    assert user["content"][0]["tool_use_id"] == "s"


def test_async_client(server, demo_index):
    client = wrap(_client(server, anthropic.AsyncAnthropic), demo_index, k=K)
    server.script(anthropic_reply(_use("a", "tool_search", {"query": "set the thermostat"})),
                  anthropic_reply(_use("b", "set_thermostat", {"temperature": 20})))
    reply = asyncio.run(client.messages.create(model="m", max_tokens=10,
                                               messages=[{"role": "user", "content": "warmer"}]))
    assert reply.content[0].name == "set_thermostat"
    assert _names(server.bodies[1]) == ["tool_search", *_expected(demo_index, "set the thermostat")]


def test_bad_setup_and_calls_raise_typed_errors(server, demo_index):
    with pytest.raises(SchemaError, match="pinned"):
        wrap(_client(server), demo_index, pinned="send_email")
    with pytest.raises(ToolsiftError, match="expected an anthropic"):
        wrap(object(), demo_index)
    client = wrap(_client(server), demo_index)
    with pytest.raises(ToolsiftError, match="stream=True"):
        client.messages.create(model="m", max_tokens=1, messages=[], stream=True)
    with pytest.raises(ToolsiftError, match="messages= is required"):
        client.messages.create(model="m", max_tokens=1)
    assert server.requests == []
