"""Gateway core (RFC 0001): find_tools, use_tool, call_tool over a real demo index.

Tools run through a real executor made of small Python functions; nothing is mocked.
Async calls run with ``asyncio.run`` inside plain test functions.
"""

from __future__ import annotations

import asyncio
import copy
import json

import pytest
from jsonschema import Draft202012Validator

from toolsift.adapters import demo_catalog_path, load_catalog, read_json
from toolsift.errors import ConfigError
from toolsift.gateway import (
    ERROR_CODES,
    FORMATS,
    Gateway,
    GatewayConfig,
    GatewayError,
    RoutingRule,
    input_schema,
    to_anthropic,
    to_mcp,
    to_openai,
)
from toolsift.query_schema import NO_MATCH_NOTE
from toolsift.schema import Parameter, Tool
from toolsift.toolindex import ToolIndex

RATES_TO_USD = {"USD": 1.0, "EUR": 1.08, "GBP": 1.27, "JPY": 0.0067}


# ------------------------------------------------------------------------ fixtures
class Runner:
    """A real executor: a table of small Python functions, recording every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.deleted: list[str] = []

    async def __call__(self, tool: Tool, args: dict) -> object:
        self.calls.append((tool.name, dict(args)))
        return await getattr(self, tool.name)(**args)

    async def convert_currency(self, amount: float, from_currency: str, to_currency: str) -> dict:
        rate = RATES_TO_USD[from_currency] / RATES_TO_USD[to_currency]
        return {"converted": round(amount * rate, 2), "rate": round(rate, 6)}

    async def get_current_weather(self, location: str, units: str = "metric") -> dict:
        return {"location": location, "temperature": 21 if units == "metric" else 70}

    async def delete_email(self, message_id: str, permanent: bool = False) -> dict:
        self.deleted.append(message_id)
        return {"deleted": message_id, "permanent": permanent}

    async def get_stock_quote(self, symbol: str, exchange: str | None = None) -> dict:
        raise LookupError(f"unknown ticker symbol {symbol}")

    async def get_flight_status(self, flight_number: str, date: str | None = None) -> dict:
        # A client-side deadline, as an upstream proxy would apply it.
        await asyncio.wait_for(asyncio.sleep(30), timeout=0.05)
        return {}

    async def track_order(self, order_id: str) -> dict:
        await asyncio.sleep(30)  # hangs; only the gateway's call_timeout stops it
        return {}


def demo_payload() -> dict:
    return read_json(demo_catalog_path())


def build(payload: dict) -> ToolIndex:
    return ToolIndex.build(load_catalog(payload, format="mcp"))


@pytest.fixture(scope="module")
def index() -> ToolIndex:
    return ToolIndex.build(load_catalog(demo_catalog_path()))


@pytest.fixture
def runner() -> Runner:
    return Runner()


@pytest.fixture
def gw(index: ToolIndex, runner: Runner) -> Gateway:
    return Gateway(index, executor=runner)


@pytest.fixture(scope="module")
def bm25_index() -> ToolIndex:
    return ToolIndex.build(load_catalog(demo_catalog_path()), preset="bm25")


@pytest.fixture
def bm25_gw(bm25_index: ToolIndex, runner: Runner) -> Gateway:
    """The same catalogue on BM25 alone: "no tool shares a word" is checked on both (a
    dense candidate counts as matched only above its field's null floor, search/evidence.py)."""
    return Gateway(bm25_index, executor=runner)


def run(coro):
    return asyncio.run(coro)


def error_of(coro) -> GatewayError:
    with pytest.raises(GatewayError) as info:
        run(coro)
    err = info.value
    assert err.to_dict()["error"]["code"] == err.code
    json.dumps(err.to_dict())  # the wire form is plain JSON
    return err


def names(result: dict) -> list[str]:
    return [t["name"] for t in result["tools"]]


# ---------------------------------------------------------------------- find_tools
def test_find_tools_ranks_and_explains(gw):
    out = run(gw.find_tools("convert 250 euros to yen and send an email to the customer", limit=3))
    assert out["format"] == "mcp" and out["backend"] == "bm25"
    assert len(out["tools"]) == 3
    top = out["tools"][0]
    assert top["name"] == "convert_currency"
    assert set(top) == {"schema", "name", "score", "why", "etag", "risk", "requires_confirmation"}
    assert top["why"] and top["risk"] == "low" and top["requires_confirmation"] is False
    scores = [t["score"] for t in out["tools"]]
    assert scores == sorted(scores, reverse=True)
    assert len(run(gw.find_tools("convert 250 euros to yen and send an email to the customer"))["tools"]) == 5  # default


def test_find_tools_answers_equal_the_fully_explained_search(gw, index):
    """Every entry is the fully explained search's hit (name, score, reason), in order,
    and the same tool always carries the same schema, ETag and risk fields: whatever
    the gateway skips or caches per request must not change an answer."""
    from benchmarks.http_load import queries

    structured = {"tool_needs": [{"user_intent": "convert 100 dollars to euros", "tool_description": "convert currency",
                                  "expected_response": "converted amount"}],
                  "extracted_arguments": {"amount": "money amount"}}
    with_request = {**structured, "request": "how many euros do I get for 100 dollars?"}
    for q in [*queries(), "delete", "weather in paris", "zzzz qqqq", structured, with_request]:
        for limit in (1, 5, 12):
            got = run(gw.find_tools(q, limit=limit))["tools"]
            hits = [h for h in index.search(q, k=limit, explain=True) if h.matched]
            assert [(t["name"], t["score"], t["why"]) for t in got] == \
                [(h.name, round(h.score, 4), h.why) for h in hits]
            for t, h in zip(got, hits):
                assert t["schema"] == h.tool.to_mcp() and t["etag"] == gw.etag(h.tool)
                assert t["risk"] == gw.risk(h.tool) and t["requires_confirmation"] == (t["risk"] == "high")


@pytest.mark.parametrize("fmt", FORMATS)
def test_find_tools_in_each_host_format(gw, index, fmt):
    out = run(gw.find_tools("what's the weather in Paris right now", limit=2, format=fmt))
    assert out["format"] == fmt
    top = out["tools"][0]
    assert top["name"] == "get_current_weather"
    schema = top["schema"]
    source = index.catalog.get("get_current_weather").source
    if fmt == "mcp":
        assert schema["name"] == "get_current_weather"
        assert schema["inputSchema"] == source["inputSchema"]
        assert schema["annotations"] == source["annotations"]
        params = schema["inputSchema"]
    elif fmt == "openai":
        assert schema["type"] == "function" and set(schema) == {"type", "function"}
        assert schema["function"]["name"] == "get_current_weather"
        assert schema["function"]["description"] == source["description"]
        params = schema["function"]["parameters"]
    elif fmt == "openai-responses":
        assert schema["type"] == "function" and "function" not in schema
        assert schema["name"] == "get_current_weather"
        assert schema["description"] == source["description"]
        params = schema["parameters"]
    else:
        assert set(schema) == {"name", "description", "input_schema"}
        params = schema["input_schema"]
    assert params == source["inputSchema"]
    assert params["required"] == ["location"]
    Draft202012Validator.check_schema(params)


def test_config_format_is_the_default(index):
    gw = Gateway(index, config=GatewayConfig(format="anthropic"))
    out = run(gw.find_tools("send an email to Dana"))
    assert out["format"] == "anthropic" and "input_schema" in out["tools"][0]["schema"]


def test_unknown_format_is_a_bad_request(gw):
    assert error_of(gw.find_tools("send an email", format="gemini")).code == "bad_request"
    with pytest.raises(GatewayError):
        gw.meta_tools("xml")


@pytest.mark.parametrize("query", ["", "   ", "\n\t ", None,
                                   {"tool_needs": []},
                                   {"tool_needs": [{"user_intent": "  ", "tool_description": ""}]},
                                   '{"tool_needs": [{"user_intent": " "}]}'])
def test_empty_query_is_refused_never_the_full_list(gw, query):
    err = error_of(gw.find_tools(query))
    assert err.code == "empty_query"
    assert error_of(gw.use_tool(query, {})).code == "empty_query"


@pytest.mark.parametrize("limit", [0, -1, 21, 1000])
def test_limit_out_of_range(gw, limit):
    err = error_of(gw.find_tools("send an email", limit=limit))
    assert err.code == "limit_out_of_range"
    assert err.details["max"] == 20


@pytest.mark.parametrize("limit", ["5", True, 2.5])
def test_limit_of_wrong_type(gw, limit):
    assert error_of(gw.find_tools("send an email", limit=limit)).code == "bad_request"


def test_limit_bounds_are_inclusive(index):
    gw = Gateway(index, config=GatewayConfig(default_limit=2, max_limit=7))
    q = "email the budget to dana"
    assert len(run(gw.find_tools(q, limit=1))["tools"]) == 1
    assert len(run(gw.find_tools(q, limit=7))["tools"]) == 7
    assert len(run(gw.find_tools(q))["tools"]) == 2
    assert len(run(gw.find_tools(q, limit=3.0))["tools"]) == 3
    assert error_of(gw.find_tools(q, limit=8)).code == "limit_out_of_range"


def test_query_length_limit(index):
    gw = Gateway(index, config=GatewayConfig(max_query_chars=40))
    ok = "send an email to dana about the budget"
    assert len(ok) <= 40
    assert run(gw.find_tools(ok))["tools"]
    err = error_of(gw.find_tools(ok + " and attach the file"))
    assert err.code == "query_too_long" and err.details["max_query_chars"] == 40
    long_structured = {"tool_needs": [{"user_intent": ok, "tool_description": ok}]}
    assert error_of(gw.find_tools(long_structured)).code == "query_too_long"
    long_request = {"tool_needs": [{"user_intent": "send an email"}], "request": ok + " and attach the file"}
    assert error_of(gw.find_tools(long_request)).code == "query_too_long"  # the request counts too
    assert error_of(gw.use_tool(ok * 2, {})).code == "query_too_long"


def test_structured_query_form(gw):
    query = {
        "tool_needs": [{
            "user_intent": "How much is 250 euros in yen?",
            "tool_description": "Convert an amount of money from one currency to another",
            "expected_response": "the converted amount and the exchange rate",
        }],
        "extracted_arguments": {"amount": "amount of money to convert",
                                "from_currency": "source currency code",
                                "to_currency": "target currency code"},
    }
    out = run(gw.find_tools(query, limit=3))
    assert names(out)[0] == "convert_currency"
    # The same object serialised to a string (some LLMs stringify nested arguments).
    assert names(run(gw.find_tools(json.dumps(query), limit=3))) == names(out)
    # Two needs: each one's best tool is found.
    two = {"tool_needs": [{"user_intent": "what's the weather in Oslo"},
                          {"user_intent": "email the team the forecast"}]}
    got = names(run(gw.find_tools(two, limit=6)))
    assert "send_email" in got and {"get_current_weather", "get_weather_forecast"} & set(got)


def test_malformed_structured_query_is_a_bad_request(gw):
    assert error_of(gw.find_tools({"tool_needs": "convert money"})).code == "bad_request"
    bad_args = {"tool_needs": [{"user_intent": "convert money"}], "extracted_arguments": ["amount"]}
    assert error_of(gw.find_tools(bad_args)).code == "bad_request"
    assert error_of(gw.find_tools(42)).code == "bad_request"


# ------------------------------------------------------------- tags, routing, risk
def test_tag_filter_keeps_only_tools_with_all_tags(gw):
    out = run(gw.find_tools("show my money", limit=5, tags=["finance"]))
    assert out["tools"]
    catalog = gw.index.catalog
    assert all("finance" in catalog.get(n).tags for n in names(out))
    both = run(gw.find_tools("show my money", limit=5, tags=["payments", "finance"]))
    assert both["tools"]
    assert all({"payments", "finance"} <= set(catalog.get(n).tags) for n in names(both))
    assert names(run(gw.find_tools("show my money", tags="finance"))) == names(out)  # bare string
    assert run(gw.find_tools("show my money", tags=["no-such-tag"]))["tools"] == []


def test_tag_filter_looks_past_the_first_hits(gw):
    query = "send a message to the team"
    unfiltered = names(run(gw.find_tools(query, limit=3)))
    assert not any("calendar" in gw.index.catalog.get(n).tags for n in unfiltered)
    filtered = names(run(gw.find_tools(query, limit=3, tags=["calendar"])))
    assert len(filtered) == 3  # found deeper in the ranking instead of starving
    assert all("calendar" in gw.index.catalog.get(n).tags for n in filtered)


def test_routing_rule_ranks_tagged_tools_first(index):
    query = "cancel my order"
    plain = names(run(Gateway(index).find_tools(query, limit=6)))
    assert "cancel_calendar_event" in plain  # a non-commerce tool interleaves without routing
    rule = RoutingRule(r"\border", ("commerce",))
    routed = names(run(Gateway(index, config=GatewayConfig(routing=(rule,))).find_tools(query, limit=6)))
    tags = [("commerce" in index.catalog.get(n).tags) for n in routed]
    assert tags == sorted(tags, reverse=True), routed  # every commerce tool before the rest
    # Inside the routed group the score order is kept.
    commerce = [n for n in plain if "commerce" in index.catalog.get(n).tags]
    assert routed[:len(commerce)] == commerce
    # A non-matching query is not routed; matching is case-insensitive.
    gw = Gateway(index, config=GatewayConfig(routing=(rule,)))
    assert names(run(gw.find_tools("delete the old email", limit=4))) == \
        names(run(Gateway(index).find_tools("delete the old email", limit=4)))
    assert names(run(gw.find_tools("Cancel my ORDER", limit=6)))[0] in commerce


def test_risk_and_when_not_to_use_metadata():
    payload = demo_payload()
    by_name = {t["name"]: t for t in payload["tools"]}
    by_name["send_email"]["_meta"]["toolsift/when_not_to_use"] = "For chat messages use send_slack_message."
    by_name["create_payment"]["_meta"]["toolsift/tags"].append("risk:high")
    by_name["search_emails"]["_meta"]["toolsift/tags"].append("risk:medium")
    gw = Gateway(build(payload), config=GatewayConfig(high_risk_tags=("risk:high", "database")))
    out = {t["name"]: t for t in run(gw.find_tools("find an email from dana about the budget and reply",
                                                    limit=10))["tools"]}
    assert out["send_email"]["when_not_to_use"] == "For chat messages use send_slack_message."
    assert out["send_email"]["risk"] == "medium"  # may change state, no label
    assert "when_not_to_use" not in out["read_email"] and out["read_email"]["risk"] == "low"
    assert out["search_emails"]["risk"] == "medium"  # explicit label beats read-only
    assert out["delete_email"]["risk"] == "high" and out["delete_email"]["requires_confirmation"]
    pay = run(gw.find_tools("charge the customer 40 dollars", limit=3))["tools"]
    assert pay[0]["name"] == "create_payment" and pay[0]["requires_confirmation"] is True
    db = run(gw.find_tools("run a sql query on the analytics database", limit=1))["tools"][0]
    assert db["name"] == "run_sql_query" and db["risk"] == "high"  # configured high-risk tag


# ------------------------------------------------------------------ session cache
def test_session_schema_cache_and_etag_change_on_swap(index, runner):
    gw = Gateway(index, executor=runner)
    q = "convert 250 euros to japanese yen"
    first = run(gw.find_tools(q, limit=3, session="s1"))
    assert all("schema" in t for t in first["tools"])
    second = run(gw.find_tools(q, limit=3, session="s1"))
    assert second["tools"] == [{"name": t["name"], "etag": t["etag"], "unchanged": True}
                               for t in first["tools"]]
    # Another session, no session, or another format still get full schemas.
    assert all("schema" in t for t in run(gw.find_tools(q, limit=3, session="s2"))["tools"])
    assert all("schema" in t for t in run(gw.find_tools(q, limit=3))["tools"])
    assert all("schema" in t for t in run(gw.find_tools(q, limit=3, session="s1", format="openai"))["tools"])

    # A new index where convert_currency's schema changed: the session gets it in full
    # again with a new ETag, the others stay unchanged.
    payload = demo_payload()
    tool = next(t for t in payload["tools"] if t["name"] == "convert_currency")
    tool["inputSchema"]["properties"]["amount"]["minimum"] = 0
    old_etag = gw.etag(index.catalog.get("convert_currency"))
    gw.index = build(payload)
    assert gw.index is not index
    third = {t["name"]: t for t in run(gw.find_tools(q, limit=3, session="s1"))["tools"]}
    changed = third["convert_currency"]
    assert "schema" in changed and changed["etag"] != old_etag
    assert changed["schema"]["inputSchema"]["properties"]["amount"]["minimum"] == 0
    assert all(t.get("unchanged") for n, t in third.items() if n != "convert_currency")
    # The swapped-in index is the one that validates and executes.
    err = error_of(gw.call_tool("convert_currency", {"amount": -5, "from_currency": "EUR", "to_currency": "USD"}))
    assert err.code == "invalid_params" and err.details["path"] == "$.amount"

    assert gw.forget_session("s1") is True
    assert all("schema" in t for t in run(gw.find_tools(q, limit=3, session="s1"))["tools"])
    assert gw.forget_session("never-seen") is False
    assert error_of(gw.find_tools(q, session="")).code == "bad_request"


def test_schema_cache_off_sends_full_schemas_every_time(index):
    gw = Gateway(index, config=GatewayConfig(schema_cache=False))
    q = "convert 250 euros to japanese yen"
    first = run(gw.find_tools(q, limit=3, session="s1"))
    again = run(gw.find_tools(q, limit=3, session="s1"))
    assert again == first and all("schema" in t for t in again["tools"])
    assert gw.capabilities()["features"]["session_schema_cache"] is False
    assert Gateway(index).capabilities()["features"]["session_schema_cache"] is True


def test_etag_is_stable_and_sensitive(index):
    gw = Gateway(index)
    tool = index.catalog.get("send_email")
    rebuilt = ToolIndex.build(load_catalog(demo_catalog_path())).catalog.get("send_email")
    assert gw.etag(tool) == gw.etag(rebuilt) and len(gw.etag(tool)) == 16
    changed = Tool(id=tool.id, name=tool.name, description=tool.description + " Fast.",
                   parameters=tool.parameters, tags=tool.tags,
                   source={**tool.source, "description": tool.description + " Fast."})
    assert gw.etag(changed) != gw.etag(tool)


# ----------------------------------------------------------------------- call_tool
def test_call_tool_runs_the_tool(gw, runner):
    out = run(gw.call_tool("convert_currency", {"amount": 100, "from_currency": "EUR", "to_currency": "USD"}))
    assert out == {"tool": "convert_currency", "result": {"converted": 108.0, "rate": 1.08}}
    assert runner.calls == [("convert_currency", {"amount": 100, "from_currency": "EUR", "to_currency": "USD"})]
    weather = run(gw.call_tool("get_current_weather", {"location": "Oslo", "units": "imperial"}))
    assert weather["result"]["temperature"] == 70


def test_unknown_tool_with_suggestions(gw, bm25_gw, runner):
    err = error_of(gw.call_tool("convert_currencies", {"amount": 1}))
    assert err.code == "unknown_tool" and err.details["tool"] == "convert_currencies"
    assert err.details["did_you_mean"][0] == "convert_currency"
    err = error_of(gw.call_tool("weather_now", {}))
    assert any("weather" in s for s in err.details["did_you_mean"])
    assert "did you mean" in err.message
    assert error_of(gw.call_tool("zzqx", None)).details["did_you_mean"] == []
    assert error_of(bm25_gw.call_tool("zzqx", None)).details["did_you_mean"] == []
    assert runner.calls == []


@pytest.mark.parametrize("args, path", [
    ({"amount": 100, "from_currency": "EUR"}, "$.to_currency"),  # missing required
    ({"amount": "a hundred", "from_currency": "EUR", "to_currency": "USD"}, "$.amount"),  # wrong type
    ({"amount": 100, "from_currency": ["EUR"], "to_currency": "USD"}, "$.from_currency"),
])
def test_invalid_params_rejected_before_execution(gw, runner, args, path):
    err = error_of(gw.call_tool("convert_currency", args))
    assert err.code == "invalid_params"
    assert err.details["path"] == path and path in err.message
    assert err.details["tool"] == "convert_currency"
    assert err.details["input_schema"]["required"] == ["amount", "from_currency", "to_currency"]
    assert runner.calls == []


def test_invalid_params_lists_every_problem(gw, runner):
    err = error_of(gw.call_tool("convert_currency", {"amount": "x"}))
    assert [e["path"] for e in err.details["errors"]] == ["$.amount", "$.from_currency", "$.to_currency"]
    assert error_of(gw.call_tool("convert_currency", ["EUR"])).code == "invalid_params"  # type: ignore[arg-type]
    assert error_of(gw.call_tool("convert_currency", None)).code == "invalid_params"
    assert runner.calls == []


def test_high_risk_tool_needs_confirmation(gw, runner):
    err = error_of(gw.call_tool("delete_email", {"message_id": "m-1"}))
    assert err.code == "confirmation_required" and err.details == {"tool": "delete_email", "risk": "high"}
    assert runner.deleted == []
    # Invalid arguments are reported before asking for confirmation.
    assert error_of(gw.call_tool("delete_email", {})).code == "invalid_params"
    out = run(gw.call_tool("delete_email", {"message_id": "m-1"}, confirm=True))
    assert out["result"] == {"deleted": "m-1", "permanent": False}
    assert runner.deleted == ["m-1"]


def test_executor_error_becomes_upstream_error(gw):
    err = error_of(gw.call_tool("get_stock_quote", {"symbol": "XYZQ"}))
    assert err.code == "upstream_error"
    assert err.message == "unknown ticker symbol XYZQ"  # the executor's message is kept
    assert err.details == {"tool": "get_stock_quote", "type": "LookupError"}
    # The gateway keeps serving afterwards.
    assert run(gw.find_tools("stock price of ACME"))["tools"]


def test_executor_timeout_becomes_upstream_timeout(gw):
    err = error_of(gw.call_tool("get_flight_status", {"flight_number": "LH400"}))
    assert err.code == "upstream_timeout" and err.details["tool"] == "get_flight_status"


def test_gateway_call_timeout(index, runner):
    gw = Gateway(index, executor=runner, config=GatewayConfig(call_timeout=0.05))
    err = error_of(gw.call_tool("track_order", {"order_id": "o-1"}))
    assert err.code == "upstream_timeout" and "0.05" in err.message
    assert run(gw.call_tool("get_current_weather", {"location": "Oslo"}))["result"]["temperature"] == 21


def test_no_executor(index):
    err = error_of(Gateway(index).call_tool("get_current_weather", {"location": "Oslo"}))
    assert err.code == "upstream_error"


# ------------------------------------------------------------------------ use_tool
@pytest.mark.parametrize("which", ["gw", "bm25_gw"])
def test_use_tool_finds_and_runs(which, request, runner):
    gw = request.getfixturevalue(which)
    out = run(gw.use_tool("convert 100 euros to dollars",
                          {"amount": 100, "from_currency": "EUR", "to_currency": "USD"}))
    assert out == {"tool": "convert_currency", "result": {"converted": 108.0, "rate": 1.08}}
    # Parameter names steer the choice between similar tools: by text alone BM25 ranks
    # another delete tool first, but only delete_email takes a message_id.
    if which == "bm25_gw":
        assert names(run(gw.find_tools("delete it", limit=1))) != ["delete_email"]
    err = error_of(gw.use_tool("delete it", {"message_id": "m-9"}))
    assert err.code == "confirmation_required" and err.details["tool"] == "delete_email"
    assert run(gw.use_tool("delete it", {"message_id": "m-9"}, confirm=True))["tool"] == "delete_email"
    assert runner.deleted == ["m-9"]


def test_use_tool_validates_and_reports_no_match(gw, bm25_gw, runner):
    err = error_of(gw.use_tool("convert 100 euros to dollars", {"amount": "lots"}))
    assert err.code == "invalid_params" and err.details["tool"] == "convert_currency"
    assert error_of(gw.use_tool("qwxyzzy blorft", {})).code == "no_match"
    assert error_of(bm25_gw.use_tool("qwxyzzy blorft", {})).code == "no_match"
    assert runner.calls == []


@pytest.mark.parametrize("query", ["qwxyzzy blorft", "zzkq vvbn ploof", "xqzt jjwp, then vvkq zzrb"])
def test_gibberish_finds_nothing_on_the_default_preset(gw, index, query):
    # The hybrid default's dense half gives every tool some cosine; none of these beats
    # the field's null floor, and no word is shared, so nothing is matched (one- and
    # two-step requests alike) and the agent is told to rephrase.
    assert not any(h.matched for h in index.search(query, k=len(index.catalog)))
    out = run(gw.find_tools(query))
    assert out["tools"] == [] and out["note"] == NO_MATCH_NOTE
    assert error_of(gw.use_tool(query, {})).code == "no_match"


def test_semantic_request_stays_matched_on_the_default_preset(gw, index, bm25_index):
    # No word shared with its tool (BM25 does not match it), but its cosine stands out.
    q = "snap a photo of the porch"
    top = index.search(q, k=1)[0]
    assert top.id == "get_camera_snapshot" and top.matched
    assert not any(h.matched and h.id == "get_camera_snapshot" for h in bm25_index.search(q, k=60))
    assert names(run(gw.find_tools(q, limit=1))) == ["get_camera_snapshot"]


def test_use_tool_structured(gw):
    query = {"tool_needs": [{"user_intent": "what's the weather in Oslo now",
                             "tool_description": "current weather conditions for a location"}]}
    out = run(gw.use_tool(query, {"location": "Oslo"}))
    assert out["tool"] == "get_current_weather" and out["result"]["location"] == "Oslo"


# --------------------------------------------------------- capabilities, meta-tools
def test_capabilities(gw, index):
    caps = gw.capabilities()
    assert caps["backends"] == ["bm25"]
    assert caps["formats"] == ["mcp", "openai", "openai-responses", "anthropic"]
    assert caps["limits"] == {"default_limit": 5, "max_limit": 20, "max_query_chars": 2000, "call_timeout": None}
    assert caps["tools"] == len(index.catalog) == 60
    assert caps["meta_tools"] == ["find_tools", "use_tool"]
    assert caps["query_forms"] == ["text", "structured"]
    json.dumps(caps)


@pytest.mark.parametrize("fmt", FORMATS)
def test_meta_tools_in_each_format(gw, fmt):
    tools = gw.meta_tools(fmt)
    assert len(tools) == 2
    if fmt == "mcp":
        got = {t["name"]: t["inputSchema"] for t in tools}
    elif fmt == "openai":
        got = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    elif fmt == "openai-responses":
        got = {t["name"]: t["parameters"] for t in tools}
    else:
        got = {t["name"]: t["input_schema"] for t in tools}
    assert set(got) == {"find_tools", "use_tool"}
    for schema in got.values():
        Draft202012Validator.check_schema(schema)
    find = Draft202012Validator(got["find_tools"])
    assert find.is_valid({"query": "send an email", "limit": 3, "tags": ["email"]})
    assert find.is_valid({"query": {"tool_needs": [{"user_intent": "send an email"}]}})
    assert not find.is_valid({"query": "x", "limit": 21})
    assert not find.is_valid({"limit": 3})
    use = Draft202012Validator(got["use_tool"])
    assert use.is_valid({"query": "convert money", "params": {"amount": 1}, "confirm": True})
    assert not use.is_valid({"query": "convert money"})


# ------------------------------------------------------------------------- formats
def native_tool() -> Tool:
    return Tool(id="geocode", name="geocode", description="Turn an address into coordinates.",
                parameters=(Parameter("address", "str", "Street address", example="1 Main St"),
                            Parameter("limit", "int", "Max results", required=False),
                            Parameter("bounds", "BoundingBox", "Area to search in", required=False),
                            Parameter("country", "string|null", "ISO country", required=False)),
                tags=("maps", "read-only"))


def test_formats_build_a_schema_for_native_tools():
    tool = native_tool()
    schema = input_schema(tool)
    assert schema == {
        "type": "object",
        "properties": {
            "address": {"type": "string", "description": "Street address", "examples": ["1 Main St"]},
            "limit": {"type": "integer", "description": "Max results"},
            "bounds": {"description": "Area to search in"},  # unknown type stays open
            "country": {"type": ["string", "null"], "description": "ISO country"},
        },
        "required": ["address"],
    }
    Draft202012Validator.check_schema(schema)
    mcp = to_mcp(tool)
    assert mcp["inputSchema"] == schema and mcp["annotations"] == {"readOnlyHint": True}
    assert mcp["_meta"] == {"toolsift/tags": ["maps"]}
    assert to_openai(tool) == {"type": "function", "function": {
        "name": "geocode", "description": "Turn an address into coordinates.", "parameters": schema}}
    assert to_anthropic(tool) == {"name": "geocode", "description": "Turn an address into coordinates.",
                                  "input_schema": schema}


def test_formats_keep_openai_and_anthropic_schemas():
    params = {"type": "object", "properties": {"city": {"type": "string", "enum": ["Oslo", "Rome"]}},
              "required": ["city"], "additionalProperties": False}
    oa = load_catalog([{"type": "function", "function": {"name": "weather", "description": "Weather.",
                                                         "parameters": params, "strict": True}}],
                      format="openai")[0]
    assert to_openai(oa) == oa.source and to_openai(oa)["function"]["strict"] is True
    assert to_anthropic(oa) == {"name": "weather", "description": "Weather.", "input_schema": params}
    assert to_mcp(oa)["inputSchema"] == params
    an = load_catalog([{"name": "weather", "description": "Weather.", "input_schema": params,
                        "cache_control": {"type": "ephemeral"}}], format="anthropic")[0]
    assert to_anthropic(an) == {"name": "weather", "description": "Weather.", "input_schema": params}
    assert to_openai(an)["function"]["parameters"] == params
    # Returned schemas are copies: changing one never changes the tool.
    input_schema(an)["properties"]["city"]["enum"].append("Paris")
    assert an.source["input_schema"]["properties"]["city"]["enum"] == ["Oslo", "Rome"]


def test_renamed_tool_is_returned_under_its_new_name(index):
    tool = index.catalog.get("send_sms")
    renamed = Tool(id="phone__send_sms", name="phone__send_sms", description=tool.description,
                   parameters=tool.parameters, tags=tool.tags, source=tool.source)
    assert to_mcp(renamed)["name"] == "phone__send_sms"
    assert to_openai(renamed)["function"]["name"] == "phone__send_sms"
    assert to_anthropic(renamed)["name"] == "phone__send_sms"


def test_gateway_works_over_a_native_catalogue(runner):
    index = ToolIndex.build([native_tool()])
    gw = Gateway(index, executor=runner, config=GatewayConfig(format="openai"))
    out = run(gw.find_tools("coordinates of an address"))
    assert names(out) == ["geocode"]
    err = error_of(gw.call_tool("geocode", {"address": "1 Main St", "limit": "3"}))
    assert err.code == "invalid_params" and err.details["path"] == "$.limit"


# -------------------------------------------------------------- config and errors
def test_config_round_trip_and_validation():
    cfg = GatewayConfig.from_dict({
        "format": "openai", "default_limit": 3, "max_limit": 10, "max_query_chars": 500,
        "routing": [{"pattern": r"\border", "tags": ["commerce"]}],
        "high_risk_tags": ["risk:high", "payments"], "call_timeout": 2.5, "schema_cache": False,
    })
    assert cfg.routing == (RoutingRule(r"\border", ("commerce",)),)
    assert cfg.routing[0].matches("Where is my ORDER?") and not cfg.routing[0].matches("bordering")
    assert GatewayConfig.from_dict(cfg.to_dict()) == cfg
    assert GatewayConfig.from_dict({}) == GatewayConfig()
    json.dumps(cfg.to_dict())
    bad = [
        ({"format": "xml"}, "gateway.format"),
        ({"max_limit": 0}, "gateway.max_limit"),
        ({"default_limit": 30}, "gateway.default_limit"),
        ({"max_query_chars": "many"}, "gateway.max_query_chars"),
        ({"routing": [{"pattern": "(", "tags": ["x"]}]}, "gateway.routing[0].pattern"),
        ({"routing": [{"pattern": "a", "tags": []}, ]}, "gateway.routing[0].tags"),
        ({"routing": [{"pattern": "a", "tags": "commerce"}]}, "gateway.routing[0].tags"),
        ({"routing": {"pattern": "a"}}, "gateway.routing"),
        ({"high_risk_tags": "risk:high"}, "gateway.high_risk_tags"),
        ({"call_timeout": -1}, "gateway.call_timeout"),
        ({"schema_cache": "no"}, "gateway.schema_cache"),
        ({"limit": 3}, "limit"),
    ]
    for d, key in bad:
        with pytest.raises(ConfigError, match=key.replace("[", r"\[").replace("]", r"\]")):
            GatewayConfig.from_dict(d)


def test_gateway_error_wire_form():
    err = GatewayError("unknown_tool", "no tool named 'x'", did_you_mean=["y"])
    assert err.to_dict() == {"error": {"code": "unknown_tool", "message": "no tool named 'x'",
                                       "did_you_mean": ["y"]}}
    assert GatewayError("empty_query").message == ERROR_CODES["empty_query"]
    with pytest.raises(ValueError):
        GatewayError("teapot")
    assert set(ERROR_CODES) == {"unknown_tool", "invalid_params", "empty_query", "query_too_long",
                                "limit_out_of_range", "confirmation_required", "upstream_error",
                                "upstream_timeout", "result_too_large", "no_match", "bad_request"}


def test_concurrent_requests_during_an_index_swap(index):
    gw = Gateway(index)
    other = build(copy.deepcopy(demo_payload()))

    async def many():
        async def swap():
            await asyncio.sleep(0)
            gw.index = other
        results = await asyncio.gather(*(gw.find_tools("send an email", limit=3) for _ in range(20)), swap())
        return results[:-1]

    for out in run(many()):
        assert names(out)[0] == "send_email"
    assert gw.index is other


class _TimedIndex:
    """The demo index, with each search first spending ``cost[i]`` seconds of CPU
    (``"cpu"``) or of waiting (``"wait"``), recording the thread it ran on."""

    def __init__(self, index: ToolIndex, costs: list[tuple[str, float]]) -> None:
        self._index = index
        self.catalog = index.catalog
        self.costs = costs
        self.threads: list[int] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self._index, name)

    def search(self, *args, **kwargs):
        import threading
        import time

        self.threads.append(threading.get_ident())
        kind, seconds = self.costs[len(self.threads) - 1]
        if kind == "cpu":
            end = time.thread_time() + seconds
            while time.thread_time() < end:
                pass
        else:
            time.sleep(seconds)  # off the CPU, as when other processes have the cores
        return self._index.search(*args, **kwargs)


def test_searches_run_inline_unless_the_last_one_cost_cpu(index):
    import threading

    for _ in range(3):  # warm: a first search pays one-off costs (find_tools asks for the why only)
        index.search("send an email", k=1, explain=True)
        index.search("send an email", k=1, explain="why")
    timed = _TimedIndex(index, [("cpu", 0.0), ("cpu", 0.0), ("cpu", 0.02), ("cpu", 0.0),
                                ("wait", 0.02), ("cpu", 0.0)])
    gw = Gateway(timed)  # type: ignore[arg-type]

    async def six():
        loop_thread = threading.get_ident()
        for _ in range(6):
            assert names(await gw.find_tools("send an email", limit=1)) == ["send_email"]
        return loop_thread

    loop_thread = run(six())
    on_loop = [t == loop_thread for t in timed.threads]
    # 1st: no timing yet (thread); 2nd, 3rd: quick predecessors (inline); 4th: after a
    # CPU-heavy search (thread); 5th inline; 6th inline too: the 5th only waited.
    assert on_loop == [False, True, True, False, True, True]
