"""The LLM client, standardization and rewriting against a scriptable local server.

Covers the error paths CI must see without a real model: timeouts, HTTP 500, 429 with
Retry-After, malformed JSON, refusals, rejected response_format, leaked values.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from toolsift.llm import (
    JsonCache,
    LLMClient,
    LLMError,
    LLMUnavailable,
    extract_json,
    parse_rewrite,
    rewrite_with_llm,
    standardize_with_llm,
)
from toolsift.llm.client import _retry_after, run_concurrently
from toolsift.schema import Catalog, Parameter, Query, Tool
from toolsift.standardize import standardize_catalog

from .llm_server import FakeLLMServer

MSGS = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "hi"}]


@pytest.fixture
def server():
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture
def client(server, tmp_path):
    return LLMClient(server.base_url, "fake-model", "sk-test", timeout=5, max_retries=3,
                     concurrency=4, cache_dir=tmp_path / "cache", backoff=0.01)


def _tools() -> Catalog:
    return Catalog([
        Tool(id="weather", name="get_weather", description="Current weather for a city.",
             parameters=(Parameter("city", "string", "City name"),), response="Temperature and sky."),
        Tool(id="mail", name="send_mail", description="Send an email to a recipient.",
             parameters=(Parameter("to", "string", ""), Parameter("body", "string", "Message text"))),
        Tool(id="book", name="book_appointment", description="Book a doctor appointment.",
             parameters=(Parameter("patient_name"), Parameter("date", required=False))),
    ], name="tiny")


# ------------------------------------------------------------------- client


def test_success_sends_json_mode_model_and_key(server, client):
    server.script({"kind": "ok", "content": {"answer": 42}})
    assert client.complete_json(MSGS) == {"answer": 42}
    body = server.requests[0]
    assert body["response_format"] == {"type": "json_object"}
    assert body["model"] == "fake-model" and body["temperature"] == 0.0
    assert client.usage.calls == 1 and client.usage.cache_hits == 0


def test_second_identical_call_is_a_cache_hit(server, client, tmp_path):
    server.script({"kind": "ok", "content": {"n": 1}})
    assert client.complete_json(MSGS) == {"n": 1}
    assert client.complete_json(MSGS) == {"n": 1}
    assert server.count == 1
    assert client.usage.cache_hits == 1 and client.usage.calls == 1
    # A fresh client on the same folder hits the disk cache too.
    other = LLMClient(server.base_url, "fake-model", cache_dir=tmp_path / "cache")
    assert other.complete_json(MSGS) == {"n": 1} and server.count == 1
    # A different model is a different key.
    LLMClient(server.base_url, "other-model", cache_dir=tmp_path / "cache").complete_json(MSGS)
    assert server.count == 2


def test_timeout_is_retried_then_fails(server, tmp_path):
    server.default = {"kind": "slow", "delay": 0.6, "content": {"late": True}}
    c = LLMClient(server.base_url, timeout=0.2, max_retries=2, cache_dir=False, backoff=0.01)
    with pytest.raises(LLMError) as err:
        c.complete_json(MSGS)
    assert err.value.kind == "timeout"
    assert server.count == 3 and c.usage.retries == 2 and c.usage.failures["timeout"] == 1


def test_timeout_falls_back_to_rules_and_is_counted(server):
    server.default = {"kind": "slow", "delay": 0.5, "content": {}}
    c = LLMClient(server.base_url, timeout=0.1, max_retries=1, cache_dir=False, backoff=0.01)
    cat = _tools()
    std, report = standardize_with_llm(cat, c, progress=False)
    assert [t.to_dict() for t in std] == [t.to_dict() for t in standardize_catalog(cat, examples=None)]
    assert report.failures == {"timeout": 3} and report.fallbacks == 3 and report.llm_ok == 0
    assert report.retries == 3


def test_http_500_then_success(server, client):
    server.script({"kind": "status", "status": 500}, {"kind": "ok", "content": {"x": 1}})
    assert client.complete_json(MSGS) == {"x": 1}
    assert server.count == 2 and client.usage.retries == 1


def test_4xx_is_not_retried(server, client):
    server.script({"kind": "status", "status": 404})
    with pytest.raises(LLMError) as err:
        client.complete_json(MSGS)
    assert err.value.kind == "http" and server.count == 1


def test_429_retry_after_is_honoured(server, client):
    server.script({"kind": "status", "status": 429, "retry_after": 1}, {"kind": "ok", "content": {"y": 2}})
    assert client.complete_json(MSGS) == {"y": 2}
    assert server.count == 2
    assert server.times[1] - server.times[0] >= 0.95  # backoff alone would be ~0.01 s


def test_retry_after_http_date():
    assert _retry_after("3") == 3.0
    assert _retry_after(None) is None and _retry_after("soon") is None
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 <= _retry_after(future) <= 31


def test_rejected_response_format_falls_back_to_plain_prompt(server, client):
    server.default = {"kind": "reject_response_format", "content": {"z": 3}}
    assert client.complete_json(MSGS) == {"z": 3}
    assert "response_format" in server.requests[0] and "response_format" not in server.requests[1]
    client.complete_json(MSGS + [{"role": "user", "content": "again"}])
    assert "response_format" not in server.requests[2]  # remembered


def test_malformed_json_fails_without_retry(server, client):
    server.script({"kind": "malformed"})
    with pytest.raises(LLMError) as err:
        client.complete_json(MSGS)
    assert err.value.kind == "malformed" and server.count == 1
    # Failures are not cached: the next call asks the server again.
    server.script({"kind": "ok", "content": {"fixed": True}})
    assert client.complete_json(MSGS) == {"fixed": True}


def test_refusal_is_its_own_kind(server, client):
    server.script({"kind": "refusal"})
    with pytest.raises(LLMError) as err:
        client.complete_json(MSGS)
    assert err.value.kind == "refusal" and client.usage.failures == {"refusal": 1}


def test_concurrency_limit_is_respected(server, tmp_path):
    server.default = {"kind": "slow", "delay": 0.25, "content": {"ok": 1}}
    c = LLMClient(server.base_url, concurrency=2, cache_dir=False)
    msgs = [[{"role": "user", "content": f"q{i}"}] for i in range(6)]
    run_concurrently(c.complete_json, msgs, workers=6)
    assert server.max_in_flight == 2


def test_async_variant_shares_the_limit(server):
    server.default = {"kind": "slow", "delay": 0.2, "content": {"ok": 1}}
    c = LLMClient(server.base_url, concurrency=3, cache_dir=False)

    async def main():
        return await asyncio.gather(*(c.acomplete_json([{"role": "user", "content": f"a{i}"}])
                                      for i in range(7)))

    assert asyncio.run(main()) == [{"ok": 1}] * 7
    assert server.max_in_flight == 3 and c.usage.calls == 7


def test_token_accounting_sums(server, client):
    server.script(
        {"kind": "ok", "content": {"a": 1}, "usage": {"prompt_tokens": 100, "completion_tokens": 20}},
        {"kind": "ok", "content": {"a": 2}, "usage": {"prompt_tokens": 50, "completion_tokens": 7}},
        {"kind": "ok", "content": {"a": 3}, "usage": {}},
    )
    for i in range(3):
        client.complete_json([{"role": "user", "content": str(i)}])
    client.complete_json([{"role": "user", "content": "0"}])  # cache hit: no tokens
    u = client.usage
    assert (u.calls, u.cache_hits, u.prompt_tokens, u.completion_tokens) == (3, 1, 150, 27)
    assert u.total_tokens == 177


def test_settings_from_environment(monkeypatch, server):
    monkeypatch.setenv("TOOLSIFT_LLM_BASE_URL", server.base_url + "/v1/")
    monkeypatch.setenv("TOOLSIFT_LLM_MODEL", "env-model")
    c = LLMClient(cache_dir=False)
    assert c.base_url == server.base_url and c.model == "env-model"
    c.complete_json(MSGS)
    assert server.requests[0]["model"] == "env-model"
    monkeypatch.delenv("TOOLSIFT_LLM_BASE_URL")
    with pytest.raises(LLMUnavailable):
        LLMClient()


def test_timeout_and_concurrency_from_environment(monkeypatch, server):
    monkeypatch.setenv("TOOLSIFT_LLM_TIMEOUT", "600")
    monkeypatch.setenv("TOOLSIFT_LLM_CONCURRENCY", "1")
    c = LLMClient(server.base_url, cache_dir=False)
    assert c.timeout == 600.0 and c.concurrency == 1
    assert LLMClient(server.base_url, timeout=5, concurrency=3, cache_dir=False).timeout == 5  # arguments win
    for name, value, message in [("TOOLSIFT_LLM_TIMEOUT", "soon", "is not a valid float"),
                                 ("TOOLSIFT_LLM_TIMEOUT", "-1", "must be > 0"),
                                 ("TOOLSIFT_LLM_CONCURRENCY", "1.5", "is not a valid int"),
                                 ("TOOLSIFT_LLM_CONCURRENCY", "0", "must be > 0")]:
        monkeypatch.setenv("TOOLSIFT_LLM_TIMEOUT", "600")
        monkeypatch.setenv("TOOLSIFT_LLM_CONCURRENCY", "1")
        monkeypatch.setenv(name, value)
        with pytest.raises(ValueError, match=f"{name}={value!r} {message}"):
            LLMClient(server.base_url, cache_dir=False)


def test_schema_hint_goes_into_the_system_message(server, client):
    client.complete_json(MSGS, schema_hint='{"k": "v"}')
    sys_msg = server.requests[0]["messages"][0]
    assert sys_msg["role"] == "system" and '{"k": "v"}' in sys_msg["content"]


def test_extract_json_variants():
    assert extract_json('```json\n{"a": {"b": [1, 2]}}\n```') == {"a": {"b": [1, 2]}}
    assert extract_json('Sure! {bad} then {"ok": true} trailing') == {"ok": True}
    with pytest.raises(LLMError) as err:
        extract_json("[1, 2]")
    assert err.value.kind == "malformed"
    with pytest.raises(LLMError) as err:
        extract_json("I cannot help with that.")
    assert err.value.kind == "refusal"


def test_cache_is_atomic_and_tolerates_garbage(tmp_path):
    cache = JsonCache(tmp_path)
    key = "ab" + "0" * 62
    cache.put(key, {"v": 1})
    assert cache.get(key) == {"v": 1} and len(cache) == 1
    assert not list(tmp_path.rglob(".tmp-*"))
    (tmp_path / "ab" / f"{key}.json").write_text('{"key": "ab", "val')
    assert cache.get(key) is None


# ------------------------------------------------------------ standardization


def test_standardize_success_validates_and_merges(server, client):
    def responder(body):
        user = body["messages"][-1]["content"]
        if "get_weather" in user:
            return {"description": "Look up the current weather in a city.",
                    "parameters": [{"name": "city", "type": "string", "description": "Name of the city",
                                    "required": True},
                                   {"name": "invented", "type": "string", "description": "x"}],
                    "response": "", "examples": ["What's the weather in Paris?", "Is it raining?",
                                                 "Weather today", "weather today"]}
        if "send_mail" in user:
            return {"description": "Send an email.", "parameters": {"to": {"type": "string",
                    "description": "Recipient address", "required": True},
                    "body": {"type": "string", "description": "Text", "required": False}},
                    "response": "", "examples": ["Email my boss"]}
        return {"tool": "nothing usable"}

    server.responder = responder
    std, report = standardize_with_llm(_tools(), client, progress=False, price_per_1k=1.0)
    w, m, b = std
    assert w.description == "Look up the current weather in a city."
    assert [p.name for p in w.parameters] == ["city"]  # the invented parameter is dropped
    assert w.response == "Temperature and sky."          # empty from the LLM -> rules
    assert w.examples == ("What's the weather in Paris?", "Is it raining?", "Weather today")
    assert m.response == ""                              # empty in both -> stays empty
    assert [(p.name, p.required) for p in m.parameters] == [("to", True), ("body", False)]
    assert b == standardize_catalog(Catalog([_tools()[2]]), examples=None)[0]
    assert report.failures == {"invalid": 1} and report.llm_ok == 2
    assert report.field_fallbacks == {"response": 1}
    assert report.cost == pytest.approx((3 * 15) / 1000)
    assert "3 items" in report.summary()


def test_standardize_malformed_falls_back(server, client):
    server.default = {"kind": "malformed"}
    std, report = standardize_with_llm(_tools(), client, progress=False)
    assert [t.to_dict() for t in std] == [t.to_dict() for t in standardize_catalog(_tools(), examples=None)]
    assert report.failures == {"malformed": 3}


# ------------------------------------------------------------------ rewriting


@pytest.fixture
def index(demo_catalog):
    from toolsift import ToolIndex

    return ToolIndex.build(demo_catalog)


GOOD_REWRITE = {
    "tool_needs": [{"user_intent": "Check whether a patient has an appointment.",
                    "tool_description": "Query registration records by patient and date.",
                    "expected_response": "Appointment details and status."}],
    "extracted_arguments": {"patient_name": "full name of the patient",
                            "date": "date of the appointment"},
}
QUERY = "Is there an appointment for Olivia Davis on 10th Oct 2023?"


def test_rewrite_success_with_feedback_in_prompt(server, client, index):
    server.responder = lambda body: GOOD_REWRITE
    queries, report = rewrite_with_llm([QUERY], index, client, progress=False)
    q = queries[0]
    assert q.text == QUERY and len(q.needs) == 1
    assert q.arguments == GOOD_REWRITE["extracted_arguments"]
    assert report.llm_ok == 1 and report.fallbacks == 0 and report.calls == 1
    prompt = server.requests[0]["messages"][-1]["content"]
    top = index.search(QUERY, k=20)  # the feedback: BM25 top-20 of the raw query
    listed = prompt.split("# Full")[0]
    assert top
    assert all(f"{i + 1}. {' '.join(h.tool.description.split())}" in listed for i, h in enumerate(top))
    assert f"\n{len(top) + 1}. " not in listed
    assert prompt.count("## Tool ") == min(3, len(top))
    assert QUERY in prompt


@pytest.mark.parametrize("behaviour, kind", [
    ({"kind": "malformed"}, "malformed"),
    ({"kind": "refusal"}, "refusal"),
    ({"kind": "ok", "content": {"tool_needs": []}}, "invalid"),
    ({"kind": "ok", "content": {"tool_needs": [{"user_intent": 3}]}}, "invalid"),
])
def test_rewrite_bad_output_falls_back_to_raw_query(server, client, index, behaviour, kind):
    server.default = behaviour
    other = "Olivia Davis 10th Oct 2023 appointment"
    queries, report = rewrite_with_llm([QUERY, other], index, client, progress=False)
    assert queries == [Query.from_text(QUERY), Query.from_text(other)]
    assert not queries[0].penalized
    assert report.failures == {kind: 2} and report.fallbacks == 2


LEAKY = [{"patient": "Olivia  davis"}, {"date": "10th Oct 2023"}]


@pytest.mark.parametrize("arguments", LEAKY)
def test_leaked_values_rejected_under_reject(server, client, index, arguments):
    server.default = {"kind": "ok", "content": {**GOOD_REWRITE, "extracted_arguments": arguments}}
    other = "Olivia Davis 10th Oct 2023 appointment"  # holds the same values
    queries, report = rewrite_with_llm([QUERY, other], index, client, progress=False, leaks="reject")
    assert queries == [Query.from_text(QUERY), Query.from_text(other)]
    assert report.failures == {"leaked_value": 2} and report.fallbacks == 2


@pytest.mark.parametrize("arguments", LEAKY)
def test_leaked_values_repaired_by_default(server, client, index, arguments):
    """The default keeps the needs and replaces the copied value by the role name."""
    server.default = {"kind": "ok", "content": {**GOOD_REWRITE, "extracted_arguments": arguments}}
    other = "Olivia Davis 10th Oct 2023 appointment"
    queries, report = rewrite_with_llm([QUERY, other], index, client, progress=False)
    (name,) = arguments
    for q in queries:
        assert q.arguments == {name: name} and q.needs[0].user_intent == GOOD_REWRITE["tool_needs"][0]["user_intent"]
        assert q.penalized
    assert report.fallbacks == 0 and report.field_fallbacks == {"argument": 2}
    assert "fields by rules: argument 2" in report.summary()


def test_leak_policy_is_checked(index, client):
    with pytest.raises(ValueError, match="leaks must be one of"):
        parse_rewrite(GOOD_REWRITE, QUERY, leaks="ignore")
    with pytest.raises(ValueError, match="leaks must be one of"):
        rewrite_with_llm([QUERY], index, client, progress=False, leaks="ignore")


def test_parse_rewrite_keeps_abstract_roles():
    q = parse_rewrite({"tool_needs": {"user_intent": "x"},
                       "extracted_arguments": {"n": "number of guests"}}, "table for 4 guests")
    assert q.arguments == {"n": "number of guests"} and q.needs[0].user_intent == "x"
    # Short descriptions (< 4 chars) are not treated as copied values.
    assert parse_rewrite({"tool_needs": [{"user_intent": "x"}],
                          "extracted_arguments": {"n": "int"}}, "print int 4").arguments == {"n": "int"}
    assert json.dumps(q.arguments)


def test_parse_rewrite_replaces_value_descriptions_by_the_role_name():
    """Seen with Qwen2.5-1.5B: {"date": "2023-04-21"} for "events of April 21st"."""
    q = parse_rewrite({"tool_needs": [{"user_intent": "x"}],
                       "extracted_arguments": {"event_date": "2023-04-21", "guestCount": "4",
                                               "amount": "$5.00", "city": "name of the city"}},
                      "events of April 21st")
    assert q.arguments == {"event_date": "event date", "guestCount": "guest Count",
                           "amount": "amount", "city": "name of the city"}


def test_parse_rewrite_non_string_descriptions():
    """Seen with Qwen2.5-1.5B: {"reminder_id": 123}, {"health_data": {"weight": 70}}."""
    data = {"tool_needs": [{"user_intent": "x"}],
            "extracted_arguments": {"reminder_id": 123, "health_data": {"weight": 70}, "note": ""}}
    repairs: list[str] = []
    q = parse_rewrite(data, "update reminder 123", repairs=repairs)
    assert q.arguments == {"reminder_id": "reminder id", "health_data": "health data", "note": "note"}
    assert repairs == ["reminder_id", "health_data", "note"]
    with pytest.raises(LLMError, match="'reminder_id' has no description"):
        parse_rewrite(data, "update reminder 123", leaks="reject")


def test_rewrite_dataset_round_trips_through_fold_format(server, client, tmp_path):
    from toolsift.adapters import load_queries
    from toolsift.evaluate import MftrDataset
    from toolsift.llm import rewrite_dataset, rewrite_records, with_rewrites

    from .conftest import dataset

    ds = MftrDataset.load(dataset("mftr-apibank"))
    server.responder = lambda body: GOOD_REWRITE
    queries, report = rewrite_dataset(ds, client, progress=False)
    assert report.items == len(ds.queries) and report.llm_ok + report.fallbacks == report.items
    assert report.calls + report.cache_hits == len(ds.queries)
    path = tmp_path / "rewrites.json"
    path.write_text(json.dumps(rewrite_records(ds, queries)))
    back = load_queries(path)
    assert [b.rewritten for b in back] == [Query(q.needs, q.arguments, text=q.text) for q in queries]
    ds2 = with_rewrites(ds, queries)
    assert [q.rewritten for q in ds2.queries] == queries and ds2.folds == ds.folds
