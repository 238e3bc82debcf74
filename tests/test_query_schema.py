"""The structured query is defined once (StructuredQuery); the JSON Schema find_tools
advertises is generated from it, and accepts what the rewriter and real data produce."""

from __future__ import annotations

import json
from dataclasses import asdict

import jsonschema
import pytest

from toolsift.llm.prompts import REWRITE_SHAPE
from toolsift.query_schema import StructuredQuery, structured_query_schema
from toolsift.schema import Query


def _advertised(gateway_format: str = "mcp") -> dict:
    from toolsift import ToolIndex, load_catalog
    from toolsift.adapters import demo_catalog_path
    from toolsift.gateway import Gateway

    gateway = Gateway(ToolIndex.build(load_catalog(demo_catalog_path())))
    find = next(t for t in gateway.meta_tools(gateway_format) if t.get("name") == "find_tools")
    return find["inputSchema"]["properties"]["query"]


def test_find_tools_advertises_the_generated_schema():
    query = _advertised()
    text, structured = query["anyOf"]
    assert text["type"] == "string"
    assert structured == structured_query_schema()
    # Self-contained (no $ref hosts may not resolve) and complete.
    assert "$ref" not in json.dumps(structured) and "$defs" not in structured
    assert structured["required"] == ["tool_needs"]
    assert set(structured["properties"]["tool_needs"]["items"]["properties"]) == \
        {"user_intent", "tool_description", "expected_response"}
    assert structured["properties"]["extracted_arguments"]["additionalProperties"] == {"type": "string"}
    jsonschema.Draft202012Validator.check_schema(structured)


def _examples() -> list[dict]:
    return [
        json.loads(REWRITE_SHAPE),  # the shape the LLM rewriter asks for
        {"tool_needs": [{"user_intent": "book a table for two tonight"}]},
        {"tool_needs": [{"user_intent": "convert 100 euros to dollars",
                         "tool_description": "Converts an amount between currencies.",
                         "expected_response": "the converted amount"},
                        {"user_intent": "email the result to my accountant"}],
         "extracted_arguments": {"amount": "amount of money", "recipient_email": "email address"}},
    ]


@pytest.mark.parametrize("example", _examples())
def test_schema_model_and_query_agree_on_valid_examples(example):
    jsonschema.validate(example, structured_query_schema())
    model = StructuredQuery.model_validate(example)
    q = Query.from_dict(model.model_dump())
    assert len(q.needs) == len(example["tool_needs"])
    assert dict(q.arguments) == example.get("extracted_arguments", {})


def test_schema_states_the_query_caps():
    """A client reads the caps the library and gateway enforce (toolsift.query_caps)
    from the schema itself, and the schema refuses what the caps refuse."""
    from toolsift.errors import QueryError
    from toolsift.query_caps import MAX_ARGUMENTS, MAX_NEEDS

    schema = structured_query_schema()
    assert schema["properties"]["tool_needs"]["maxItems"] == MAX_NEEDS
    assert schema["properties"]["extracted_arguments"]["maxProperties"] == MAX_ARGUMENTS
    need = {"user_intent": "x"}
    at_caps = {"tool_needs": [need] * MAX_NEEDS,
               "extracted_arguments": {f"a{i}": "y" for i in range(MAX_ARGUMENTS)}}
    jsonschema.validate(at_caps, schema)
    Query.from_dict(at_caps)
    for over in ({"tool_needs": [need] * (MAX_NEEDS + 1)},
                 {"tool_needs": [need], "extracted_arguments": {f"a{i}": "y" for i in range(MAX_ARGUMENTS + 1)}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(over, schema)
        with pytest.raises(QueryError):
            Query.from_dict(over)


@pytest.mark.parametrize("bad", [
    {},                                                   # no tool_needs
    {"tool_needs": []},                                   # empty
    {"tool_needs": "book a table"},                       # not a list
    {"tool_needs": [{"user_intent": 3}]},                 # not a string
    {"tool_needs": [{"user_intent": "x"}], "extracted_arguments": {"date": 5}},
])
def test_schema_rejects_what_the_model_rejects(bad):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, structured_query_schema())
    with pytest.raises(ValueError):
        StructuredQuery.model_validate(bad, strict=True)


def test_real_rewritten_queries_validate():
    """Every LLM-rewritten query of a shared benchmark, in wire form, fits the schema."""
    from tests.conftest import dataset
    from toolsift.evaluate import MftrDataset

    ds = MftrDataset.load(dataset("mftr-apibank"))
    validator = jsonschema.Draft202012Validator(structured_query_schema())
    checked = 0
    for q in ds.queries:
        if q.rewritten is None:
            continue
        wire = {"tool_needs": [asdict(n) for n in q.rewritten.needs],
                "extracted_arguments": dict(q.rewritten.arguments), "request": q.text}
        assert wire == q.rewritten.to_dict()
        errors = list(validator.iter_errors(wire))
        assert not errors, (q.id, errors[0].message)
        StructuredQuery.model_validate(wire)
        assert Query.from_dict(wire) == q.rewritten
        checked += 1
    assert checked >= 50


def test_the_request_round_trips_and_counts_toward_the_length_limit():
    """``request`` is Query.text on the wire (``text``, the attribute's name, is read too);
    to_dict writes it only when there is one; the gateway's length limit counts it."""
    from toolsift.gateway.request_parsing import _structured_texts

    base = {"tool_needs": [{"user_intent": "book a table", "tool_description": "Reserve a table",
                            "expected_response": "a booking"}], "extracted_arguments": {}}
    q = Query.from_dict({**base, "request": "a table for two tonight"})
    assert q.text == "a table for two tonight"
    assert q.to_dict() == {**base, "request": "a table for two tonight"}
    assert Query.from_dict({**base, "text": "a table for two tonight"}) == q
    assert Query.from_dict(base).to_dict() == base
    assert StructuredQuery.model_validate({**base, "request": "x"}).request == "x"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**base, "request": 3}, structured_query_schema())
    assert "a table for two tonight" in _structured_texts({**base, "request": "a table for two tonight"})[0]
