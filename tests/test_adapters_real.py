"""Adapters for real-world catalogues: OpenAPI specs, Python callables, Gemini and
LangChain tools, and a live MCP server in a subprocess."""

from __future__ import annotations

import socket
import sys
import types
from pathlib import Path
from typing import Any, Literal, Optional

import anyio
import pytest
from pydantic import BaseModel, Field

from tests._procs import started

from toolsift.adapters.gemini import from_gemini
from toolsift.adapters.langchain import from_langchain
from toolsift.adapters.live_mcp import from_mcp_server, load_mcp_server
from toolsift.adapters.mcp import mcp_tool
from toolsift.adapters.openapi import from_openapi, load_openapi, read_openapi
from toolsift.adapters.python import from_callable, from_module, render_type
from toolsift.errors import CatalogFormatError, SchemaError
from toolsift.schema import Catalog, Tool

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "openapi"
WEATHER = Path(__file__).resolve().parent / "gateway_servers" / "weather.py"


def flags(tool: Tool) -> dict[str, bool]:
    return {p.name: p.required for p in tool.parameters}


def param(tool: Tool, name: str):
    return next(p for p in tool.parameters if p.name == name)


# ------------------------------------------------------------------ OpenAPI


def test_petstore_json_operations_and_flags() -> None:
    tools = {t.id: t for t in load_openapi(FIXTURES / "petstore.json")}
    assert list(tools) == ["listPets", "createPet", "GET /pets/{petId}", "deletePet", "updateVaccinations"]
    ls = tools["listPets"]
    assert ls.description == "List all pets. Returns the pets in the store, newest first, one page at a time."
    # Query params follow their own flag (OpenAPI default false); Accept is ignored; a
    # $ref'd header parameter is resolved.
    assert flags(ls) == {"limit": False, "species": False, "X-Trace-Id": False}
    assert param(ls, "limit").example == 20 and param(ls, "limit").type == "integer"
    assert "One of: cat, dog, bird." in param(ls, "species").description
    assert ls.response.startswith("A paged array of pets. Returns a list of objects, each with: name (string)")
    assert "id (string): Unique pet id" in ls.response  # allOf merged
    # Natural-language x-examples only: "42" is a value, not an intent.
    assert ls.examples == ("show me the cats you have for adoption", "which dogs are available?")
    assert ls.tags == ("pets",)

    create = tools["createPet"]
    # The $ref'd Owner object is flattened; an optional parent makes its fields optional.
    assert flags(create) == {"name": True, "species": True, "birthDate": False, "owner": False,
                             "owner.email": False}
    assert create.parent_of("owner.email") == "owner"
    assert param(create, "owner").type == "Owner"
    assert param(create, "owner").description == "The person responsible for the pet"
    assert create.examples == ("Register a two year old tabby cat called Miso",)

    get = tools["GET /pets/{petId}"]
    assert get.name == "get_pets_by_pet_id"
    assert flags(get) == {"petId": True}  # path-item parameter, always required

    delete = tools["deletePet"]
    assert flags(delete) == {"petId": True, "reason": True}
    assert "deprecated" in delete.tags and delete.response == "Pet removed."

    vacc = tools["updateVaccinations"]
    # Body without "required": the schema's list decides; a clashing name is kept apart.
    assert flags(vacc) == {"petId": True, "limit": False, "vaccines": True, "vet": False, "body.limit": False}
    assert param(vacc, "vet").type == "string|null"
    assert Catalog(list(tools.values())).get("listPets") is ls


def test_payments_yaml() -> None:
    tools = {t.id: t for t in load_openapi(FIXTURES / "payments.yaml")}
    assert list(tools) == ["create_payment", "list_payments", "POST /v2/payments/{payment_id}/refunds"]
    pay = tools["create_payment"]
    assert flags(pay) == {"Idempotency-Key": True, "amount": True, "currency": True, "customer_id": True,
                          "description": False, "metadata": False}
    assert param(pay, "amount").example == 2500
    assert param(pay, "currency").description == "ISO 4217 currency code"
    assert pay.response.startswith("The created payment. A payment. Returns an object with: id (string)")
    assert pay.examples[0] == "charge the customer 25 euros for the March invoice"
    listing = tools["list_payments"]
    assert flags(listing) == {"customer_id": False, "status": False}  # cookie parameter left out
    assert "data (array): The page of payments" in listing.response
    refund = tools["POST /v2/payments/{payment_id}/refunds"]
    assert refund.name == "post_v2_payments_by_payment_id_refunds"
    # requestBody.required: false makes every form field optional.
    assert flags(refund) == {"payment_id": True, "amount": False, "reason": False}


def test_circular_refs_terminate() -> None:
    tools = {t.id: t for t in load_openapi(FIXTURES / "circular.json")}
    emp = tools["getEmployee"]
    assert "manager (Employee): Direct manager" in emp.response
    upd = tools["updateEmployee"]
    assert flags(upd) == {"id": True, "name": True, "manager": False, "reports": False}
    assert upd.response.startswith("Updated employee.")
    assert flags(tools["createFolder"]) == {"title": True, "children": True}


def test_yaml_and_json_parse_alike(tmp_path: Path) -> None:
    import json

    import yaml

    spec = read_openapi(FIXTURES / "payments.yaml")
    (tmp_path / "p.json").write_text(json.dumps(spec, default=str))
    (tmp_path / "p.yml").write_text(yaml.safe_dump(spec, sort_keys=False))
    a, b = load_openapi(tmp_path / "p.json"), load_openapi(tmp_path / "p.yml")
    assert [t.to_dict() | {"source": None} for t in a] == [t.to_dict() | {"source": None} for t in b]


@pytest.mark.parametrize("name, error, fragment", [
    ("bad_ref.json", SchemaError, "bad_ref.json: paths['/pets/{id}'].get.parameters[0].$ref: cannot resolve"),
    ("nameless_param.json", SchemaError, "paths['/pets/{id}'].get.parameters[0].name:"),
    ("swagger2.json", CatalogFormatError, "Swagger 2.0"),
    ("bad_syntax.yaml", CatalogFormatError, "invalid YAML at line 8"),
    ("duplicate_ids.yaml", SchemaError, "paths['/b'].get: duplicate operation id 'fetch' (also at paths['/a'].get)"),
    ("external_ref.yaml", SchemaError, "external reference 'schemas.yaml#/Upload'"),
])
def test_broken_specs(name: str, error: type[Exception], fragment: str) -> None:
    with pytest.raises(error) as info:
        load_openapi(FIXTURES / "broken" / name)
    assert fragment in str(info.value)


@pytest.mark.parametrize("spec, fragment", [
    ({"paths": {}}, "expected an 'openapi' version field"),
    ([], "expected an OpenAPI document object"),
    ({"openapi": "3.0.0", "paths": {"/a": {"get": "oops"}}}, "paths['/a'].get: expected an operation object"),
    ({"openapi": "3.0.0", "paths": {"/a": {"parameters": [{"name": "x"}], "get": {}}}},
     "paths['/a'].parameters[0].in:"),
    ({"openapi": "3.0.0", "paths": {"/a": {"get": {"parameters": [{"name": "x", "in": "query",
                                                                   "required": "yes"}]}}}},
     "paths['/a'].get.parameters[0].required: expected a bool"),
    ({"openapi": "3.0.0", "paths": {"/a": {"post": {"requestBody": {"content": {"application/json": {
        "schema": {"type": "object", "properties": {"x": 3}}}}}}}}},
     "paths['/a'].post.requestBody.content['application/json'].schema.properties['x']"),
    ({"openapi": "3.0.0", "paths": {"/a": {"$ref": "#/components/pathItems/A"}}, "components": {}},
     "paths['/a'].$ref: cannot resolve"),
])
def test_malformed_documents(spec: Any, fragment: str | None) -> None:
    with pytest.raises((SchemaError, CatalogFormatError)) as info:
        from_openapi(spec)
    if fragment:
        assert fragment in str(info.value)


def test_missing_file() -> None:
    with pytest.raises(CatalogFormatError, match="no such file"):
        load_openapi(FIXTURES / "nope.yaml")


# ------------------------------------------------------------------ Python callables


def send_invoice(customer_id: str, amount: float, currency: str = "EUR",
                 due_days: Optional[int] = None, *extra: Any, **options: Any) -> dict[str, Any]:
    """Send an invoice to a customer by email.

    The PDF is generated from the customer's billing profile.

    Args:
        customer_id: Id of the customer to bill.
        amount: Total amount, in major units.
        currency: ISO 4217 code.
        due_days: Days until payment is due.

    Returns:
        The invoice id and its public URL.
    """
    return {}


def resize_image(path, width: int, height: int = 0, mode: Literal["fit", "fill"] = "fit") -> list[str]:
    """Resize an image file.

    Parameters
    ----------
    path : str
        File to resize.
    width : int
        Target width in pixels.
    height : int, optional
        Target height; keeps the aspect ratio when 0.
    mode : str
        How to fit the box.

    Returns
    -------
    list of str
        Paths of the written files.
    """
    return []


def translate(text: str, target: str) -> str:
    """Translate text into another language.

    :param text: The text to translate.
    :param target: Target language code, e.g. ``pt``.
    :returns: The translated text.
    """
    return text


def test_google_docstring() -> None:
    tool = from_callable(send_invoice)
    assert tool.id == tool.name == "send_invoice"
    assert tool.description == ("Send an invoice to a customer by email.\n\n"
                                "The PDF is generated from the customer's billing profile.")
    assert flags(tool) == {"customer_id": True, "amount": True, "currency": False, "due_days": False}
    assert [p.type for p in tool.parameters] == ["str", "float", "str", "int | None"]
    # A Python default is not an example value: it is kept as the default, in source.
    assert all(p.example is None for p in tool.parameters)
    assert tool.source["defaults"] == {"currency": "EUR", "due_days": None}
    assert param(tool, "amount").description == "Total amount, in major units."
    assert tool.response == "Returns dict[str, Any]: The invoice id and its public URL."
    assert tool.source["signature"].startswith("(customer_id: str")


def test_numpy_and_rest_docstrings() -> None:
    tool = from_callable(resize_image)
    assert flags(tool) == {"path": True, "width": True, "height": False, "mode": False}
    assert param(tool, "path").type == "str"  # from the docstring: no hint
    assert param(tool, "mode").type == "Literal['fit', 'fill']"
    assert param(tool, "height").description == "Target height; keeps the aspect ratio when 0."
    assert tool.response == "Returns list[str]: Paths of the written files."
    rest = from_callable(translate)
    assert param(rest, "target").description == "Target language code, e.g. ``pt``."
    assert rest.response == "Returns str: The translated text."
    assert rest.description == "Translate text into another language."


def test_undocumented_and_odd_callables() -> None:
    tool = from_callable(lambda a, b=2: None, name="adder")
    assert tool.name == "adder" and flags(tool) == {"a": True, "b": False}
    assert tool.description == "" and tool.response == ""

    def weird(x: "NotDefinedAnywhere") -> "Nope":  # noqa: F821 - unresolvable on purpose
        """Just prose, no sections at all: :param broken"""

    w = from_callable(weird)
    assert param(w, "x").type == "NotDefinedAnywhere"
    with pytest.raises(SchemaError, match="expected a callable"):
        from_callable(42)  # type: ignore[arg-type]


def test_from_module() -> None:
    mod = types.ModuleType("billing")
    exec(
        "import os\n"
        "from os.path import join\n"
        "def charge(card: str, cents: int = 0) -> bool:\n"
        "    '''Charge a card.\n\n    Args:\n        card: Card token.\n    '''\n"
        "def _helper(): pass\n"
        "class NotAFunction: pass\n",
        mod.__dict__,
    )
    tools = from_module(mod)
    assert [t.name for t in tools] == ["charge"]  # imported join and _helper left out
    assert flags(tools[0]) == {"card": True, "cents": False}
    assert tools[0].response == "Returns bool."
    mod.__all__ = ["_helper"]
    assert [t.name for t in from_module(mod)] == ["_helper"]
    with pytest.raises(SchemaError):
        from_module("billing")  # type: ignore[arg-type]


def test_render_type() -> None:
    assert render_type(dict[str, list[int]]) == "dict[str, list[int]]"
    assert render_type(Optional[str]) == "str | None"
    assert render_type(tuple[int, ...]) == "tuple[int, ...]"


# ------------------------------------------------------------------ Gemini


GEMINI_DECL = {
    "name": "find_flights",
    "description": "Search direct flights between two airports.",
    "parameters": {
        "type": "OBJECT",
        "properties": {
            "origin": {"type": "STRING", "description": "IATA code of the departure airport"},
            "destination": {"type": "STRING", "description": "IATA code of the arrival airport"},
            "date": {"type": "STRING", "format": "date", "nullable": True},
            "cabin": {"type": "STRING", "enum": ["economy", "business"]},
        },
        "required": ["origin", "destination"],
    },
    "response": {"type": "OBJECT", "properties": {"flights": {"type": "ARRAY", "description": "matches"}}},
}


def test_gemini_shapes() -> None:
    plain = from_gemini([GEMINI_DECL])
    wrapped = from_gemini({"functionDeclarations": [GEMINI_DECL]})
    tools_obj = from_gemini({"tools": [{"googleSearch": {}}, {"function_declarations": [GEMINI_DECL]}]})
    for tools in (plain, wrapped, tools_obj):
        (tool,) = tools
        assert flags(tool) == {"origin": True, "destination": True, "date": False, "cabin": False}
        assert param(tool, "date").type == "string|null"
        assert tool.response == "Returns an object with: flights (array): matches."
    json_schema = dict(GEMINI_DECL, name="x")
    json_schema["parametersJsonSchema"] = json_schema.pop("parameters")
    assert flags(from_gemini([json_schema])[0])["origin"] is True


def test_gemini_errors() -> None:
    bad = dict(GEMINI_DECL, parameters={"type": "STRING"})
    with pytest.raises(SchemaError, match=r"^tools\[0\]\.functionDeclarations\[0\] \(name='find_flights'\)\.parameters"):
        from_gemini({"tools": [{"functionDeclarations": [bad]}]})
    with pytest.raises(CatalogFormatError):
        from_gemini({"functionDeclarations": "nope"})
    with pytest.raises(SchemaError, match=r"tools\[1\]"):
        from_gemini([GEMINI_DECL, 3])


# ------------------------------------------------------------------ LangChain


class WeatherArgs(BaseModel):
    city: str = Field(description="City to look up")
    units: str = Field("metric", description="metric or imperial")


class FakeTool:
    """Duck-typed like a LangChain BaseTool, without importing LangChain."""

    name = "get_weather"
    description = "Current weather for a city."
    args_schema = WeatherArgs


def test_langchain_shapes() -> None:
    from_obj, from_schema_dict, from_args = from_langchain([
        FakeTool(),
        {"name": "w2", "description": "d", "args_schema": WeatherArgs.model_json_schema()},
        {"name": "w3", "args": WeatherArgs.model_json_schema()["properties"]},
    ])
    for tool in (from_obj, from_schema_dict, from_args):
        assert flags(tool) == {"city": True, "units": False}
    assert from_obj.description == "Current weather for a city."
    assert param(from_obj, "city").description == "City to look up"
    assert from_obj.source["args_schema"]["required"] == ["city"]
    assert from_langchain({"tools": [{"name": "bare"}]})[0].parameters == ()


def test_langchain_errors() -> None:
    class Broken:
        name = "broken"

        class args_schema:  # noqa: N801 - mimics a model class whose schema fails
            @staticmethod
            def model_json_schema() -> Any:
                raise RuntimeError("boom")

    with pytest.raises(SchemaError, match=r"tools\[0\] \(name='broken'\)\.args_schema: model_json_schema\(\) failed"):
        from_langchain([Broken()])
    with pytest.raises(SchemaError, match=r"tools\[0\]"):
        from_langchain(["not a tool"])
    with pytest.raises(CatalogFormatError):
        from_langchain({"functions": []})


# ------------------------------------------------------------------ live MCP


async def _reference_listing(args: list[str]) -> list[dict[str, Any]]:
    """The server's own tools/list, read with the bare SDK."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=args[0], args=args[1:])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.list_tools()
        return [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in result.tools]


def _assert_same_as(tools: list[Tool], reference: list[dict[str, Any]]) -> None:
    assert [t.name for t in tools] == [r["name"] for r in reference]
    for tool, ref in zip(tools, reference):
        assert tool.description == ref["description"]
        assert flags(tool) == {k: k in ref["inputSchema"]["required"] for k in ref["inputSchema"]["properties"]}
        assert tool.to_dict() == mcp_tool(ref).to_dict()


def test_live_mcp_stdio_matches_tools_list() -> None:
    args = [sys.executable, str(WEATHER)]
    reference = anyio.run(_reference_listing, args)
    assert len(reference) == 6
    _assert_same_as(load_mcp_server(args, timeout=30), reference)
    assert flags(load_mcp_server(f"{sys.executable} {WEATHER}")[0]) == {"city": True, "days": False}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_live_mcp_http(tmp_path: Path) -> None:
    port = _free_port()
    with started([sys.executable, str(WEATHER), "--http", "--port", str(port)], tmp_path / "server.log") as proc:
        proc.wait_port("127.0.0.1", port)  # ready when its socket accepts; ended however the test ends
        reference = anyio.run(_reference_listing, [sys.executable, str(WEATHER)])
        tools = anyio.run(lambda: from_mcp_server(url=f"http://127.0.0.1:{port}/mcp", timeout=30))
        _assert_same_as(tools, reference)


@pytest.mark.slow  # starts failing MCP servers (~4 s)
def test_live_mcp_failures() -> None:
    with pytest.raises(CatalogFormatError, match="no such file|FileNotFoundError"):
        load_mcp_server(["/nonexistent/mcp-server"], timeout=10)
    with pytest.raises(CatalogFormatError, match="within 2 s"):
        load_mcp_server([sys.executable, "-c", "import time; time.sleep(60)"], timeout=2)
    with pytest.raises(CatalogFormatError, match="exactly one"):
        load_mcp_server()
    with pytest.raises(CatalogFormatError, match="mcp server 'http://127.0.0.1:1/mcp'"):
        load_mcp_server(url="http://127.0.0.1:1/mcp", timeout=10)
