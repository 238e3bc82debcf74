"""End to end: ``toolsift serve`` in a subprocess, over stdio and over streamable HTTP,
driven by the official ``mcp`` ClientSession, aggregating two real upstream MCP servers
written for these tests (``tests/gateway_servers``: weather over stdio, CRM over HTTP).

Nothing is mocked. Every process is started here and stopped by its id at the end;
everything listens on loopback; every async scenario runs under a hard time limit.
"""

from __future__ import annotations


import json
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests import _leaks
from tests._procs import HANG_GUARD_S, PKG_ROOT, Proc, env, serving
from toolsift.gateway import _mcp

SERVERS = Path(__file__).resolve().parent / "gateway_servers"
TOKEN = "test-token-123"
MAX_BODY = 64 * 1024
WEATHER_TIMEOUT_S = 1.5
# A hang guard, not a speed bound: a scenario on a loaded machine may take long.
SCENARIO_LIMIT_S = HANG_GUARD_S
META = {"find_tools", "use_tool"}
WEATHER_PIDS: set[int] = set()  # upstream processes seen, killed at the end if still alive


# ----------------------------------------------------------------------- processes
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict[str, str]:
    return env()


class Crm:
    """The CRM upstream over HTTP; can be killed and brought back on the same port."""

    def __init__(self, tmp: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.tmp = tmp
        self.starts = 0
        self.start()

    def start(self) -> None:
        self.starts += 1
        proc = Proc([sys.executable, str(SERVERS / "crm.py"), "--http", "--port", str(self.port)],
                    self.tmp / f"crm{self.starts}.log")
        try:
            proc.wait_port("127.0.0.1", self.port)  # ready: its socket accepts
        except BaseException:
            proc.stop()  # a failed start must not leave it running
            raise
        self.proc = proc
        _leaks.fixture_owned(proc.pid)  # the module's fixture stops it, even when a test restarted it

    def kill(self) -> None:
        self.proc.p.kill()
        self.proc.p.wait()


def _kill_leftover_weather() -> None:
    for pid in WEATHER_PIDS:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"weather.py" in cmdline:  # the pid still belongs to our upstream, not a reuse
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("gateway")


@pytest.fixture(scope="module")
def crm(tmp):
    server = Crm(tmp)
    yield server
    server.proc.stop()
    _kill_leftover_weather()


def _write_config(path: Path, crm: Crm, **extra: Any) -> Path:
    config = {
        "upstreams": [
            {"name": "weather", "command": [sys.executable, str(SERVERS / "weather.py")],
             "timeout_s": WEATHER_TIMEOUT_S},
            {"name": "crm", "url": crm.url, "timeout_s": 5},
        ],
        "gateway": {"format": "mcp", "default_limit": 5, "max_limit": 20},
        "max_request_bytes": MAX_BODY,
        **extra,
    }
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def config_file(tmp, crm) -> Path:
    return _write_config(tmp / "gateway.json", crm, auth_token=TOKEN)


@contextmanager
def serve_http(args: list[str], log: Path):
    """Run ``toolsift serve ARGS --transport http --port 0``; yield its base URL once it
    prints its ready line (its signal; no deadline), and stop it on exit, pass or fail."""
    with serving(args, log) as (proc, base):
        # One ready line, with the URL to connect to. (With --workers it comes once all
        # of them serve.)
        ready = [line for line in proc.log.read_text(errors="replace").splitlines() if "gateway ready at" in line]
        assert ready == [f"toolsift: gateway ready at {base}/mcp (GET {base}/health for status; Ctrl-C stops)"], \
            proc.tail()
        yield base


@pytest.fixture(scope="module")
def http_gateway(tmp, config_file):
    with serve_http(["--config", str(config_file), "--log-level", "info"], tmp / "gateway-http.log") as base:
        yield base


# ------------------------------------------------------------------------ sessions
@asynccontextmanager
async def http_session(base: str, token: str = TOKEN) -> AsyncIterator[ClientSession]:
    client = _mcp.http_client(headers={"Authorization": f"Bearer {token}"}, timeout_s=30)
    async with _mcp.http_transport(base + "/mcp", client) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def stdio_session(args: list[str], errlog: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "toolsift", "serve", *args],
                                   env={"PYTHONPATH": PKG_ROOT})
    with open(errlog, "w") as log:  # noqa: ASYNC230 - a local log file, opened once
        async with stdio_client(params, errlog=log) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def run(scenario: Callable[[], Any]) -> None:
    async def bounded() -> None:
        with anyio.fail_after(SCENARIO_LIMIT_S):
            await scenario()

    anyio.run(bounded)


async def call(session: ClientSession, name: str, args: dict[str, Any] | None = None, **kw: Any) -> tuple[bool, Any]:
    """``(is_error, structured content)`` of one tools/call."""
    result = _mcp.dump(await session.call_tool(name, args or {}, **kw))
    is_error = bool(result.get("isError"))
    if result.get("structuredContent") is None:
        return is_error, json.loads(result["content"][0]["text"])
    return is_error, result["structuredContent"]


async def ok(session: ClientSession, name: str, args: dict[str, Any] | None = None, **kw: Any) -> Any:
    is_error, body = await call(session, name, args, **kw)
    assert not is_error, body
    return body


async def error(session: ClientSession, name: str, args: dict[str, Any] | None, code: str, **kw: Any) -> dict:
    is_error, body = await call(session, name, args, **kw)
    assert is_error, body
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]


async def until_ok(session: ClientSession, name: str, args: dict[str, Any], *, tries: int = 200) -> Any:
    """The first successful result of repeating a call that fails with upstream_error
    while an upstream is being reconnected (at most ``tries`` calls, 0.1 s apart)."""
    for _ in range(tries):
        is_error, body = await call(session, name, args)
        if not is_error:
            return body
        assert body["error"]["code"] == "upstream_error", body
        await anyio.sleep(0.1)
    raise AssertionError(f"{name} still failing after {tries} calls: {body}")


async def forecast_pid(session: ClientSession) -> int:
    body = await ok(session, "weather__get_forecast", {"city": "Lisbon", "days": 2})
    assert body["city"] == "Lisbon" and len(body["days"]) == 2
    WEATHER_PIDS.add(body["pid"])
    return body["pid"]


async def find(session: ClientSession, query: Any, **kw: Any) -> list[dict]:
    return (await ok(session, "find_tools", {"query": query, **kw}))["tools"]


# ----------------------------------------------------------------------- scenarios
async def check_meta_only(s: ClientSession) -> None:
    listed = await s.list_tools()
    assert {t.name for t in listed.tools} == META
    find_schema = _mcp.dump(next(t for t in listed.tools if t.name == "find_tools"))["inputSchema"]
    assert {"query", "limit", "format", "token_budget", "complete"} <= set(find_schema["properties"])


async def check_formats(s: ClientSession) -> None:
    queries = {"mcp": "will it rain in Lisbon tomorrow?", "openai": "weather forecast for Porto this week",
               "anthropic": "temperature and chance of rain in Madrid"}
    for fmt, query in queries.items():
        tools = await find(s, query, limit=3, format=fmt)
        top = tools[0]
        assert top["name"] == "weather__get_forecast", (fmt, tools)
        schema = top["schema"]
        if fmt == "mcp":
            assert schema["name"] == top["name"]
            params = schema["inputSchema"]
        elif fmt == "openai":
            assert schema["type"] == "function" and schema["function"]["name"] == top["name"]
            params = schema["function"]["parameters"]
        else:
            assert schema["name"] == top["name"] and "inputSchema" not in schema
            params = schema["input_schema"]
        # The upstream's JSON Schema comes back as it wrote it.
        assert params["required"] == ["city"]
        assert params["properties"]["days"] == {"type": "integer", "minimum": 1, "maximum": 7,
                                                "description": "number of days to forecast"}
        assert top["requires_confirmation"] is False and top["score"] > 0 and top["etag"]
    # A token budget over the wire: full entries carry their tokens and fit together.
    tight = await find(s, "weather forecast and rain radar", limit=5, format="anthropic", token_budget=200)
    assert tight and sum(t.get("tokens", 0) for t in tight) <= 200
    assert all("tokens" in t or t.get("unchanged") for t in tight)
    await error(s, "find_tools", {"query": "rain", "token_budget": 0}, "bad_request")
    # Same session, same format: the schema is not sent twice.
    again = await find(s, queries["mcp"], limit=1, format="mcp")
    assert again[0] == {"name": "weather__get_forecast", "etag": again[0]["etag"], "unchanged": True}
    # complete= over the wire: a tool set, at most limit; a non-boolean is a bad request.
    completed = await find(s, "weather forecast for Porto this week", limit=3, format="openai", complete=True)
    assert 1 <= len(completed) <= 3
    await error(s, "find_tools", {"query": "rain", "complete": "yes"}, "bad_request")


async def check_namespacing(s: ClientSession) -> None:
    crm_hits = [t["name"] for t in await find(s, "search customers in the CRM by name or email", limit=3)]
    wx_hits = [t["name"] for t in await find(s, "search weather stations by place name", limit=3)]
    assert crm_hits[0] == "crm__search" and wx_hits[0] == "weather__search", (crm_hits, wx_hits)
    assert (await ok(s, "crm__search", {"query": "ada"}))["customers"][0]["id"] == 4411
    assert (await ok(s, "weather__search", {"query": "Lisbon"}))["stations"] == ["WX-LIS-1"]
    tagged = await find(s, "search", limit=5, tags=["server:crm"])
    assert tagged and all(t["name"].startswith("crm__") for t in tagged)


async def check_calls_and_errors(s: ClientSession) -> None:
    await forecast_pid(s)
    body = await ok(s, "crm__get_customer", {"customer_id": 4411})
    assert body["customer"]["name"] == "Ada Lovelace"

    err = await error(s, "crm__get_custmer", {"customer_id": 4411}, "unknown_tool")
    assert "crm__get_customer" in err["did_you_mean"]
    await ok(s, "crm__get_customer", {"customer_id": 4411})

    err = await error(s, "weather__get_forecast", {"city": 42}, "invalid_params")
    assert err["path"] == "$.city"
    err = await error(s, "weather__get_forecast", {}, "invalid_params")
    assert err["path"] == "$.city"
    await forecast_pid(s)

    await error(s, "find_tools", {"query": "   "}, "empty_query")
    assert await find(s, "will it rain in Lisbon?", limit=1)
    await error(s, "find_tools", {"query": "rain", "limit": 999}, "limit_out_of_range")
    await error(s, "find_tools", {"querry": "rain"}, "bad_request")

    # An upstream that dies in the middle of a call: structured error, then a fresh process.
    before = await forecast_pid(s)
    err = await error(s, "weather__crash_station", {"reason": "test"}, "upstream_error")
    assert err["upstream"] == "weather"
    after = await forecast_pid(s)
    assert after != before

    # A call that hangs: timeout (never before the configured time; no upper bound, which
    # a busy machine could break), and the (still responsive) upstream keeps serving.
    t0 = time.monotonic()
    err = await error(s, "weather__climate_report", {"region": "Alentejo"}, "upstream_timeout")
    assert time.monotonic() - t0 >= WEATHER_TIMEOUT_S
    assert await forecast_pid(s) == after


async def check_list_changed(s: ClientSession) -> None:
    query = "precipitation radar image of rain and snow clouds"
    assert "weather__radar_image" not in [t["name"] for t in await find(s, query, limit=3)]
    await ok(s, "weather__enable_radar", {})
    # Until the re-list lands (no deadline of its own: the scenario's hang guard ends a
    # gateway that never re-lists).
    while "weather__radar_image" not in [t["name"] for t in await find(s, query, limit=3)]:
        await anyio.sleep(0.1)
    assert (await ok(s, "weather__radar_image", {"city": "Porto"}))["image"] == "radar.png"


async def full_scenario(s: ClientSession) -> None:
    await check_meta_only(s)
    await check_formats(s)
    await check_namespacing(s)
    await check_calls_and_errors(s)
    await check_list_changed(s)


# --------------------------------------------------------------------------- tests
@pytest.mark.slow  # end to end with real upstream processes (~5 s); the HTTP end-to-end test stays fast
def test_stdio_gateway_end_to_end(tmp, config_file):
    async def scenario() -> None:
        async with stdio_session(["--config", str(config_file)], tmp / "gateway-stdio.log") as s:
            await full_scenario(s)

    run(scenario)
    # No SDK warning per proxied call (mcp 1.x's call_tool decorator warned on every call
    # of a tool it had not listed itself).
    log = (tmp / "gateway-stdio.log").read_text(errors="replace")
    assert not [line for line in log.splitlines() if " WARNING mcp" in line], log[-3000:]


def test_http_gateway_end_to_end(http_gateway):
    async def scenario() -> None:
        async with http_session(http_gateway) as s:
            await full_scenario(s)

    run(scenario)


def test_http_auth_size_limit_and_health(http_gateway):
    mcp_url = http_gateway + "/mcp"
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    r = httpx.post(mcp_url, json=init, headers=headers, timeout=10)
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    assert r.json()["error"]["code"] == "unauthorized"
    r = httpx.post(mcp_url, json=init, headers={**headers, "Authorization": "Bearer wrong"}, timeout=10)
    assert r.status_code == 401
    r = httpx.post(mcp_url, json=init, headers={**headers, "Authorization": f"Bearer {TOKEN}"}, timeout=10)
    assert r.status_code == 200 and r.json()["result"]["serverInfo"]["name"] == "toolsift"

    big = json.dumps({**init, "params": {**init["params"], "pad": "x" * (MAX_BODY + 1)}})
    r = httpx.post(mcp_url, content=big, headers={**headers, "Authorization": f"Bearer {TOKEN}"}, timeout=10)
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"

    public = httpx.get(http_gateway + "/health", timeout=10)
    assert public.status_code == 200
    body = public.json()
    assert body["status"] == "ok" and body["tools"] >= 10 and body["upstreams"]["ready"] == 2
    assert "upstream_status" not in body  # no internals without the token
    private = httpx.get(http_gateway + "/health", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10).json()
    states = {u["name"]: (u["state"], u["transport"]) for u in private["upstream_status"]}
    assert states == {"weather": ("ready", "stdio"), "crm": ("ready", "http")}


def test_http_use_tool_and_confirmation(http_gateway):
    async def scenario() -> None:
        async with http_session(http_gateway) as s:
            done = await ok(s, "use_tool", {"query": "create a new contact in the CRM",
                                            "params": {"name": "Grace Hopper", "email": "grace@example.com"}})
            assert done["tool"] == "crm__create_contact"
            assert done["result"]["structuredContent"]["created"]["name"] == "Grace Hopper"

            refund = {"customer_id": 4411, "amount": 12.5}
            [hit] = await find(s, "refund a payment to a customer", limit=1)
            assert hit["name"] == "crm__refund_payment" and hit["requires_confirmation"] is True
            err = await error(s, "crm__refund_payment", refund, "confirmation_required")
            assert err["how_to_confirm"] == {"_meta": {"toolsift/confirm": True}}
            assert (await ok(s, "crm__refund_payment", refund, meta={"toolsift/confirm": True}))["refunded"] == 12.5
            await error(s, "use_tool", {"query": "refund a payment to a customer", "params": refund},
                        "confirmation_required")
            done = await ok(s, "use_tool", {"query": "refund a payment to a customer", "params": refund,
                                            "confirm": True})
            assert done["tool"] == "crm__refund_payment"

    run(scenario)


@pytest.mark.slow  # end to end with real upstream processes (~5 s); the HTTP end-to-end test stays fast
def test_http_upstream_kill_freeze_and_reconnect(http_gateway, crm):
    async def scenario() -> None:
        async with http_session(http_gateway) as s:
            # Killed from outside while idle: restarted transparently on the next call.
            pid = await forecast_pid(s)
            os.kill(pid, signal.SIGKILL)
            await anyio.sleep(0.2)
            assert await forecast_pid(s) != pid

            # The whole process freezes (not even ping answers): timeout, then a new process.
            pid = await forecast_pid(s)
            await error(s, "weather__freeze_station", {"seconds": 60}, "upstream_timeout")
            assert await forecast_pid(s) != pid

            # The HTTP upstream goes away: structured error; back on its port: reconnected.
            await ok(s, "crm__get_customer", {"customer_id": 4411})
            crm.kill()
            err = await error(s, "crm__get_customer", {"customer_id": 4411}, "upstream_error")
            assert err["upstream"] == "crm"
            assert await find(s, "will it rain in Lisbon?", limit=1)  # the gateway keeps serving
            await forecast_pid(s)
            crm.start()
            # Reconnected once the restart back-off has passed: poll (bounded) instead of
            # sleeping a guessed time, so a slow machine cannot fail it.
            body = await until_ok(s, "crm__get_customer", {"customer_id": 4411})
            assert body["customer"]["id"] == 4411

    run(scenario)


def _valid_args(schema: dict) -> dict:
    """Arguments satisfying a flat object schema's required properties."""
    samples = {"string": "x", "integer": 1, "number": 1.5, "boolean": True, "array": [], "object": {}}
    props = schema.get("properties", {})
    return {name: props[name]["enum"][0] if "enum" in props[name] else samples[props[name].get("type", "string")]
            for name in schema.get("required", [])}


def test_catalog_only_gateway_has_no_executor(tmp):
    from toolsift.adapters import demo_catalog_path

    config = tmp / "catalog-gateway.json"
    config.write_text(json.dumps({"gateway": {"format": "anthropic"}}), encoding="utf-8")

    async def scenario() -> None:
        args = ["--catalog", str(demo_catalog_path()), "--config", str(config)]
        async with stdio_session(args, tmp / "gateway-catalog.log") as s:
            assert {t.name for t in (await s.list_tools()).tools} == META
            tools = await find(s, "will it rain in Lisbon tomorrow?", limit=2)
            assert "input_schema" in tools[0]["schema"]  # the configured default format
            err = await error(s, tools[0]["name"], _valid_args(tools[0]["schema"]["input_schema"]),
                              "upstream_error")
            assert "no executor" in err["message"]

    run(scenario)


def test_serve_cli_errors(tmp, capsys):
    from toolsift.cli import main

    assert main(["serve"]) == 2
    assert "--config" in capsys.readouterr().err
    bad = tmp / "bad.json"
    bad.write_text(json.dumps({"upstreams": [{"name": "a__b", "command": ["x"]}]}), encoding="utf-8")
    assert main(["serve", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "upstream name" in err and f"{bad}: upstreams[0].name:" in err  # the file and the key
    bad.write_text(json.dumps({"upstreams": [{"name": "a", "command": ["x"], "url": "http://h/mcp"}]}))
    assert main(["serve", "--config", str(bad)]) == 2
    assert "exactly one of" in capsys.readouterr().err
