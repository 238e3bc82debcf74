"""Catalogue adapters, continued: bad path strings, and search over nested sub-parameters
(the public ToolIndex API on catalogues read by the adapters)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from toolsift import IndexConfig, ToolIndex
from toolsift.adapters import load_catalog, load_openapi
from toolsift.errors import CatalogFormatError
from toolsift.index.fields import field_documents
from toolsift.kernels.params import ScoringParams
from toolsift.schema import Catalog


# ------------------------------------------------------------ bad path strings


@pytest.mark.parametrize(("source", "match"), [
    ("\x00", "NUL byte"),
    ("tools\x00.json", "NUL byte"),
    ('{"tools": []}\x00', "looks like JSON text"),
    ('[{"name": "x", "parameters": {"type": "dict"}}]', "looks like JSON text"),
    ("", "empty"),
    ("   ", "empty"),
    ("x" * 5000, "cannot read the file"),
    ("\ud800.json", "not a usable file path"),
    (Path("a\x00b.json"), "NUL byte"),
])
@pytest.mark.parametrize("fmt", ["auto", "openapi", "mcp"])
def test_bad_path_strings_are_format_errors(source: Any, match: str, fmt: str) -> None:
    with pytest.raises(CatalogFormatError, match=match):
        load_catalog(source, format=fmt)


def test_bad_path_strings_in_openapi_loader() -> None:
    with pytest.raises(CatalogFormatError, match="NUL byte"):
        load_openapi("spec\x00.yaml")


def test_bytes_path_is_read(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([{"name": "book_flight", "parameters": {"type": "dict"}}]), encoding="utf-8")

    class BytesPath:
        def __fspath__(self) -> bytes:
            return bytes(path)

    catalog = load_catalog(BytesPath())  # type: ignore[arg-type]
    assert catalog.name == "tools.json" and catalog[0].name == "book_flight"


# ------------------------------------------------------------ search


SHOP_TOOLS = [
    {"name": "create_order", "description": "Create a new order in the web shop.",
     "parameters": {"type": "dict", "required": ["items"], "properties": {
         "items": {"type": "array", "items": {"type": "dict", "properties": {
             "sku": {"type": "string", "description": "Product code."},
             "quantity": {"type": "integer"}}}},
         "delivery": {"type": "dict", "description": "Delivery options.", "properties": {
             "gift_wrap_message": {"type": "string", "description": "Greeting printed on the gift wrapping paper."},
             "courier": {"type": "string", "enum": ["dhl", "ups"]}}}}}},
    {"name": "update_order", "description": "Change an existing order in the web shop.",
     "parameters": {"type": "dict", "properties": {
         "order_id": {"type": "string", "description": "The order to change."},
         "items": {"type": "array", "items": {"type": "dict", "properties": {
             "sku": {"type": "string"}, "quantity": {"type": "integer"}}}}}}},
    {"name": "cancel_order", "description": "Cancel an order in the web shop.",
     "parameters": {"type": "dict", "properties": {"order_id": {"type": "string"},
                                                   "reason": {"type": "string", "description": "Why."}}}},
    {"name": "send_card", "description": "Send a postcard.",
     "parameters": {"type": "dict", "properties": {"text": {"type": "string", "description": "Card text."}}}},
]


def top_level_only(catalog: Catalog) -> Catalog:
    return Catalog([replace(t, parameters=t.top_level_parameters) for t in catalog])


@pytest.mark.parametrize("query", [
    "order with a gift wrap message printed on the wrapping paper",
    {"tool_needs": [{"user_intent": "buy a present for my aunt", "tool_description": "place an order",
                     "expected_response": "the order confirmation"}],
     "extracted_arguments": {"gift_wrap_message": "greeting on the gift wrapping"}},
])
def test_nested_sub_parameter_words_find_the_tool(query: Any) -> None:
    catalog = load_catalog(SHOP_TOOLS)
    # The shipped weights give the parameters field no weight (trained on raw queries,
    # whose parameter words the description card already holds); weigh it here so the
    # ranking shows what matching a sub-parameter contributes.
    cfg = IndexConfig(params=ScoringParams(weights=(0.35, 0.25, 0.15, 0.25), param_max_share=1.0,
                                           w_req=0.0, w_opt=0.0))
    hits = ToolIndex.build(catalog, config=cfg).search(query, k=4, explain=True)
    assert hits[0].id == "create_order"
    assert hits[0].fields["parameters"] > 0
    assert hits[0].parameters["delivery.gift_wrap_message"][1] > 0
    # Control: the same catalogue without sub-parameters has nothing in its parameter
    # field for these words, so the match above comes from the flattened parameter.
    flat = ToolIndex.build(top_level_only(catalog), config=cfg).search(query, k=4, explain=True)
    flat_hit = next(h for h in flat if h.id == "create_order")
    assert flat_hit.fields["parameters"] < hits[0].fields["parameters"]


def test_sub_parameters_are_indexed_as_parameter_documents() -> None:
    catalog = load_catalog(SHOP_TOOLS)
    docs = field_documents(catalog, name_in_description=True, split_identifiers=True)["parameters"]
    mine = [t for t, g in zip(docs.texts, docs.groups) if g == 0]
    assert mine == [
        "items (array): ",
        "items[] sku (string): Product code.",  # the analyzer drops the brackets
        "items[] quantity (integer): ",
        "delivery (object): Delivery options.",
        "delivery gift wrap message (string): Greeting printed on the gift wrapping paper.",
        "delivery courier (string): One of: dhl, ups.",
    ]
    required = {p.name: p.required for p in catalog[0].parameters}
    # items is required but its objects list nothing as required; delivery is optional.
    assert required == {"items": True, "items[].sku": False, "items[].quantity": False,
                        "delivery": False, "delivery.gift_wrap_message": False, "delivery.courier": False}
