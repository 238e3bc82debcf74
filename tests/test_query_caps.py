"""Caps on a structured query's structure (issue 37, item 7): needs, arguments, nesting.

A 5 MB structured query with 200,000 ``tool_needs`` was accepted (the cap covered text
length only). Now the library (``Query``, ``ToolIndex.search``) and the gateway
(``find_tools``) refuse more than MAX_NEEDS needs, MAX_ARGUMENTS arguments or MAX_DEPTH
levels of nesting, with an error that names the cap; at the caps a query still works.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from toolsift import Query, ToolNeed
from toolsift.errors import QueryError
from toolsift.gateway import Gateway
from toolsift.gateway.errors import GatewayError
from toolsift.query_caps import MAX_ARGUMENTS, MAX_DEPTH, MAX_NEEDS

NEED = {"user_intent": "send an email", "tool_description": "sends an email message"}


def _query(needs: int = 1, arguments: int = 0) -> dict:
    return {"tool_needs": [dict(NEED) for _ in range(needs)],
            "extracted_arguments": {f"arg{i}": "a value" for i in range(arguments)}}


def test_caps_are_sane():
    assert (MAX_NEEDS, MAX_ARGUMENTS, MAX_DEPTH) == (64, 256, 4)


@pytest.mark.parametrize("needs, arguments, cap", [(MAX_NEEDS + 1, 0, "MAX_NEEDS"), (200_000, 0, "MAX_NEEDS"),
                                                   (1, MAX_ARGUMENTS + 1, "MAX_ARGUMENTS")])
def test_library_refuses_over_the_caps(demo_index, needs, arguments, cap):
    data = _query(needs, arguments)
    with pytest.raises(QueryError, match=cap):
        Query.from_dict(data)
    with pytest.raises(QueryError, match=cap):
        demo_index.search(data, k=3)
    if cap == "MAX_NEEDS":
        with pytest.raises(QueryError, match=cap):
            Query(needs=[ToolNeed("send an email")] * needs)
    else:
        with pytest.raises(QueryError, match=cap):
            Query(needs=[ToolNeed("send an email")], arguments=data["extracted_arguments"])


def test_library_refuses_deep_nesting_naming_the_cap():
    deep: object = "x"
    for _ in range(50):
        deep = [deep]
    with pytest.raises(QueryError, match="MAX_DEPTH"):
        Query.from_dict({"tool_needs": [{"user_intent": deep}]})


def test_at_the_caps_a_query_still_works(demo_index):
    hits = demo_index.search(_query(MAX_NEEDS, MAX_ARGUMENTS), k=3)
    assert len(hits) == 3


def _find(gw: Gateway, query) -> dict:
    return asyncio.run(gw.find_tools(query, limit=3))


@pytest.mark.parametrize("needs, arguments, detail", [(MAX_NEEDS + 1, 0, "MAX_NEEDS"), (200_000, 0, "MAX_NEEDS"),
                                                      (1, MAX_ARGUMENTS + 1, "MAX_ARGUMENTS")])
@pytest.mark.parametrize("as_text", [False, True])
def test_gateway_refuses_over_the_caps(demo_index, needs, arguments, detail, as_text):
    gw = Gateway(demo_index)
    data = _query(needs, arguments)
    with pytest.raises(GatewayError) as err:
        _find(gw, json.dumps(data) if as_text else data)
    assert err.value.code == "query_too_long" and detail in err.value.message, err.value
    assert err.value.details["max_tool_needs"] == MAX_NEEDS
    assert err.value.details["max_arguments"] == MAX_ARGUMENTS


def test_gateway_refuses_deep_nesting_and_survives_hostile_json(demo_index):
    gw = Gateway(demo_index)
    with pytest.raises(GatewayError) as err:
        _find(gw, {"tool_needs": [{"user_intent": [[["send"]]]}]})
    assert err.value.code == "query_too_long" and "MAX_DEPTH" in err.value.message
    hostile = '{"tool_needs": ' + "[" * 100_000 + "]" * 100_000 + "}"  # too deep for json to parse
    with pytest.raises(GatewayError) as err:
        _find(gw, hostile)
    assert err.value.code == "query_too_long"  # read as text: over max_query_chars
    at_cap = {"tool_needs": [{"user_intent": "send an email"}] * MAX_NEEDS}  # within max_query_chars too
    assert _find(gw, at_cap)["tools"]
