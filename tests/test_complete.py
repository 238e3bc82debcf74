"""search(..., complete=True): producers of missing inputs, CRUD steps, near-duplicates,
k and token_budget, and the same option in search_task, the CLI, find_tools and the
integrations."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from toolsift import Parameter, Query, Tool, ToolIndex, ToolNeed
from toolsift.adapters import load_openapi
from toolsift.decompose import search_task

SHOP = Path(__file__).parent / "fixtures" / "openapi" / "shop.json"

# Tools the shop's requests do not need, so that k is tight and rankings have a tail.
DISTRACTORS = [
    Tool("weather", "get_weather", "Current weather and temperature for a city", (Parameter("city"),),
         response="Returns an object with: temperature (number): degrees Celsius."),
    Tool("translate", "translate_text", "Translate a text message into another language",
         (Parameter("text"), Parameter("target_language"))),
    Tool("calendar", "add_calendar_event", "Add an event to the user's calendar",
         (Parameter("title"), Parameter("start_time"))),
    Tool("stocks", "stock_quote", "Latest price of a stock ticker", (Parameter("ticker"),),
         response="Returns an object with: price (number): last trade price."),
]


@pytest.fixture(scope="module")
def shop_index():
    return ToolIndex.build(list(load_openapi(SHOP)) + DISTRACTORS)


def _ids(hits):
    return [h.id for h in hits]


def test_adds_producer_of_missing_input(shop_index):
    # The caller's structured query: it supplies the message text, not the user id.
    q = Query(needs=(ToolNeed("send a text message to a user's inbox", "send a message to a user",
                              "the message sent"),), arguments={"text": "the message body"})
    plain = shop_index.search(q, k=2)
    assert plain[0].id == "sendMessage" and "listUsers" not in _ids(plain)
    full = shop_index.search(q, k=5)
    assert "listUsers" in _ids(full)  # the query matched the producer, below k
    got = shop_index.search(q, k=2, complete=True)
    assert _ids(got) == ["sendMessage", "listUsers"]
    assert got[1].why == "provides user_id for sendMessage"
    assert [h.rank for h in got] == [1, 2]
    assert got[1].to_dict()["why"] == "provides user_id for sendMessage"


def test_supplied_parameter_gets_no_producer(shop_index):
    q = Query(needs=(ToolNeed("send a text message to a user's inbox", "send a message to a user",
                              "the message sent"),), arguments={"text": "the body", "user_id": "the user"})
    assert _ids(shop_index.search(q, k=2, complete=True)) == _ids(shop_index.search(q, k=2))


def test_raw_text_roles_supply_parameters():
    # "order #A-1" names the order: extract_arguments finds an order_id role, so the
    # cancel tool needs no producer; without it the query asks for the id's producer.
    index = ToolIndex.build(list(load_openapi(SHOP)) + DISTRACTORS)
    with_id = index.search("cancel order #A-1 that has not shipped", k=2, complete=True)
    assert all(not (h.why or "").startswith("provides") for h in with_id)


def test_crud_step_the_query_asks_for():
    def t(name, desc, params):
        return Tool(name, name, desc, tuple(Parameter(p) for p in params))
    tools = [t("file_write", "Write content to a file, creating it", ["file_path", "content"]),
             t("file_delete", "Delete a file", ["file_path"]),
             t("file_modify", "Change the content of a file", ["file_path", "content"]),
             t("write_report", "Write a report document about a topic", ["topic"]),
             t("write_summary", "Write a summary of a text", ["text"]),
             t("write_memo", "Write a short memo with content", ["content"]),
             t("report_status", "Status of a report file export", ["report_id"])] + DISTRACTORS
    # BM25 ranks file_delete 6th: outside k=3, inside completion's 2k window, which is what
    # this checks (the hybrid default ranks it 7th, write_summary's cosine above it).
    index = ToolIndex.build(tools, preset="bm25")
    q = "write the report content into a new file and remove the old one"  # "remove": a delete verb
    plain = index.search(q, k=3)
    deeper = index.search(q, k=8)
    assert "file_delete" not in _ids(plain) and "file_delete" in _ids(deeper)
    got = index.search(q, k=3, complete=True)
    assert "file_delete" in _ids(got) and "file_write" in _ids(got)
    added = next(h for h in got if h.id == "file_delete")
    assert added.why == "delete step on the resource of file_write"
    # the query asks for no update: file_modify stays out
    assert "file_modify" not in _ids(got)


def test_near_duplicate_dropped():
    tools = [Tool("get_user", "get_user", "Read a user account", (Parameter("user_id"),),
                  response="Returns an object with: email (string): email."),
             Tool("fetch_user", "fetch_user", "Read one user account", (Parameter("user_id"),),
                  response="Returns an object with: email (string): email."),
             Tool("delete_user", "delete_user", "Delete a user account", (Parameter("user_id"),)),
             Tool("list_users", "list_users", "List user accounts", (),
                  response="Returns a list of objects, each with: id (string): user id.")]
    index = ToolIndex.build(tools)
    plain = _ids(index.search("read a user account", k=4))
    assert {"get_user", "fetch_user"} <= set(plain)
    got = _ids(index.search("read a user account", k=4, complete=True))
    # the same operation on the same resource with the same inputs and outputs: one kept
    assert len({"get_user", "fetch_user"} & set(got)) == 1


def test_catalogue_where_nothing_should_be_added():
    tools = [Tool("weather", "weather", "Current weather for a city", (Parameter("city"),),
                  response="Returns an object with: temperature (number): degrees."),
             Tool("translate", "translate", "Translate text", (Parameter("text"), Parameter("target_language"))),
             Tool("calculator", "calculator", "Evaluate arithmetic", (Parameter("expression"),),
                  response="Returns an object with: result (number): the value."),
             Tool("news", "news", "Latest headlines on a topic", (Parameter("topic"),)),
             Tool("timer", "timer", "Start a countdown timer", (Parameter("seconds", type="integer"),))]
    index = ToolIndex.build(tools)
    for q in ["weather in Paris then translate it to French", "what is 2+2 and the latest news",
              "set a timer for the weather report", "translate the headlines"]:
        for k in (1, 2, 3, 5):
            plain = index.search(q, k=k)
            got = index.search(q, k=k, complete=True)
            assert [(h.id, h.score, h.rank) for h in got] == [(h.id, h.score, h.rank) for h in plain]
            assert all(h.why is None for h in got)


def test_stays_within_k_and_consumer_kept(shop_index):
    msg = Query(needs=(ToolNeed("send a text message to a user's inbox", "send a message to a user",
                                "the message sent"),), arguments={"text": "the message body"})
    order = Query(needs=(ToolNeed("order a product for a user", "create an order", "the new order"),),
                  arguments={"quantity": "how many"})
    for q in (msg, order):
        for k in (1, 2, 3, 4, 11):
            got = shop_index.search(q, k=k, complete=True)
            assert len(got) == min(k, len(shop_index))
            assert len(set(_ids(got))) == len(got)
            assert got[0].id == shop_index.search(q, k=1)[0].id  # the consumer is never pushed out
    # k=1 leaves no room for a producer
    assert _ids(shop_index.search(msg, k=1, complete=True)) == ["sendMessage"]


def test_token_budget(shop_index):
    q = Query(needs=(ToolNeed("send a text message to a user's inbox", "send a message to a user",
                              "the message sent"),), arguments={"text": "the message body"})
    got = shop_index.search(q, k=2, complete=True, token_budget=10_000)
    assert _ids(got) == ["sendMessage", "listUsers"] and all(h.tokens for h in got)
    small = got[0].tokens
    only = shop_index.search(q, k=2, complete=True, token_budget=small)
    assert _ids(only) == ["sendMessage"]


def test_search_batch_matches_search(shop_index):
    qs = ["send a message to the user alice@example.com", "cancel my last order", "order two USB cables",
          Query(needs=(ToolNeed("send a text message", "send a message", "the message"),),
                arguments={"text": "body"})]
    batch = shop_index.search_batch(qs, k=3, complete=True)
    one = [shop_index.search(q, k=3, complete=True) for q in qs]
    assert [[(h.id, h.why) for h in hs] for hs in batch] == [[(h.id, h.why) for h in hs] for hs in one]


def test_complete_after_load(tmp_path, shop_index):
    q = Query(needs=(ToolNeed("send a text message to a user's inbox", "send a message to a user",
                              "the message sent"),), arguments={"text": "the message body"})
    shop_index.save(tmp_path / "ix")
    loaded = ToolIndex.load(tmp_path / "ix")
    assert [(h.id, h.why) for h in loaded.search(q, k=2, complete=True)] == [
        (h.id, h.why) for h in shop_index.search(q, k=2, complete=True)]


def test_search_task_complete(shop_index):
    res = search_task(shop_index, "send the user a text message", steps=["send a message to the user"], k=1,
                      complete=False)
    assert _ids(res.merged) == ["sendMessage"]
    res = search_task(shop_index, "send the user a text message", steps=["send a message to the user"], k=2,
                      complete=True)
    plain = search_task(shop_index, "send the user a text message", steps=["send a message to the user"], k=2)
    assert len(res.merged) <= 2
    assert _ids(res.merged)[0] == _ids(plain.merged)[0]


def test_cli_complete(tmp_path, shop_index):
    from toolsift.cli import main

    shop_index.save(tmp_path / "ix")
    q = json.dumps({"tool_needs": [{"user_intent": "send a text message to a user's inbox",
                                    "tool_description": "send a message to a user",
                                    "expected_response": "the message sent"}],
                    "extracted_arguments": {"text": "the message body"}})
    out = io.StringIO()
    assert main(["search", str(tmp_path / "ix"), q, "--structured", "-k", "2", "--complete", "--json"], out=out) == 0
    doc = json.loads(out.getvalue())
    assert [h["id"] for h in doc["hits"]] == ["sendMessage", "listUsers"]
    assert doc["hits"][1]["why"] == "provides user_id for sendMessage"


def test_find_tools_complete(shop_index):
    from toolsift.gateway.config import GatewayConfig
    from toolsift.gateway.core import Gateway
    from toolsift.gateway.errors import GatewayError
    from toolsift.gateway.meta_tools import meta_tool_definitions

    schema = meta_tool_definitions(GatewayConfig())[0].source["inputSchema"]["properties"]
    assert schema["complete"]["type"] == "boolean"
    gw = Gateway(shop_index)
    q = {"tool_needs": [{"user_intent": "send a text message to a user's inbox",
                         "tool_description": "send a message to a user", "expected_response": "the message sent"}],
         "extracted_arguments": {"text": "the message body"}}
    found = asyncio.run(gw.find_tools(q, limit=2, complete=True))
    assert [t["name"] for t in found["tools"]] == ["sendMessage", "listUsers"]
    assert found["tools"][1]["why"] == "provides user_id for sendMessage"
    with pytest.raises(GatewayError, match="complete must be true or false"):
        asyncio.run(gw.find_tools(q, limit=2, complete="yes"))


def test_integrations_pass_complete(shop_index):
    from toolsift.integrations.langgraph import make_retrieve_tools

    retrieve, _ = make_retrieve_tools(shop_index, k=2, complete=True)
    q = "send a text message to a user's inbox"
    assert retrieve(q) == [h.id for h in shop_index.search(q, k=2, complete=True) if h.matched]
    from toolsift.integrations._toolset import ToolSearch

    ts = ToolSearch(shop_index, k=2, complete=True)
    assert ts.complete is True
