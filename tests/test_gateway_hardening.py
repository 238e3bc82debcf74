"""Gateway hardening (issue 13): ReDoS-proof argument validation on a real HTTP server,
result-size caps, ``format: uri``, and ``toolsift serve`` with no answering upstream.

Servers are real subprocesses on loopback; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
import pytest

from tests.test_gateway_server import _env, _free_port, call, http_session, serve_http
from toolsift.gateway import Gateway, GatewayConfig, GatewayError
from toolsift.schema import Parameter, Tool
from toolsift.toolindex import ToolIndex

EVIL = "^(a+)+$"
EVIL_INPUT = "a" * 28 + "!"  # about 2**28 backtracking steps for a backtracking engine


def _tool(name: str, properties: dict, required: list[str]) -> dict:
    return {"name": name, "description": f"{name}: look up a record by its code",
            "inputSchema": {"type": "object", "properties": properties, "required": required}}


# ------------------------------------------------------------------- ReDoS, end to end
@pytest.fixture(scope="module")
def evil_gateway(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("redos")
    catalog = tmp / "tools.json"
    catalog.write_text(json.dumps({"tools": [
        _tool("lookup_code", {"code": {"type": "string", "pattern": EVIL}}, ["code"]),
    ]}), encoding="utf-8")
    with serve_http(["--catalog", str(catalog), "--catalog-format", "mcp"], tmp / "gateway.log") as base:
        yield base


def test_catastrophic_pattern_neither_hangs_nor_blocks_health(evil_gateway):
    health_ms: list[float] = []
    outcome: dict = {}

    async def scenario() -> None:
        async with http_session(evil_gateway) as s:
            async def evil_call() -> None:
                t0 = time.perf_counter()
                outcome["body"] = await call(s, "lookup_code", {"code": EVIL_INPUT})
                outcome["s"] = time.perf_counter() - t0

            async with anyio.create_task_group() as tg:
                tg.start_soon(evil_call)
                async with httpx.AsyncClient(timeout=2.0) as client:
                    for _ in range(5):
                        t0 = time.perf_counter()
                        r = await client.get(evil_gateway + "/health")
                        health_ms.append((time.perf_counter() - t0) * 1000)
                        assert r.status_code == 200
                        await anyio.sleep(0.02)

    async def bounded() -> None:
        with anyio.fail_after(20):  # a backtracking engine needs ~40 s here
            await scenario()

    anyio.run(bounded)
    is_error, body = outcome["body"]
    assert is_error and body["error"]["code"] == "invalid_params", body
    assert body["error"]["path"] == "$.code"
    # /health answered every time while the call was in flight (no latency threshold:
    # a busy machine must not fail this; the in-process tests below show no
    # backtracking engine ever runs such a pattern).
    assert len(health_ms) == 5


@contextlib.contextmanager
def _no_backtracking_engine():
    """Fails the test if Python's (backtracking) ``re`` matches anything inside the block."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"a backtracking regex engine ran: {args[:1]}")

    with pytest.MonkeyPatch.context() as mp:
        for name in ("search", "match", "fullmatch"):
            mp.setattr(re, name, refuse)
        yield


def test_pattern_checks_agree_with_python_re_on_safe_patterns():
    from toolsift.gateway.validation import ArgumentValidator

    # The linear-time engine must accept and refuse exactly what a backtracking engine
    # does on ordinary patterns (the independent reference is Python's re).
    cases = [(r"^[a-z]{2}-\d{3}$", ["ab-123", "AB-123", "ab-12", "xab-123"]),
             (r"\bfoo", ["foo", "a foo", "afoo"]),
             (r"^(?:\+?\d{1,3})?[ -]?\d{6,10}$", ["+351 912345678", "912345678", "12"]),
             (r"é+", ["café", "cafe"])]
    for pattern, values in cases:
        v = ArgumentValidator({"type": "object", "properties": {"x": {"type": "string", "pattern": pattern}}})
        for value in values:
            assert (not v.errors({"x": value})) == bool(re.search(pattern, value)), (pattern, value)


def test_pattern_properties_use_the_linear_engine_too():
    from toolsift.gateway.validation import ArgumentValidator

    v = ArgumentValidator({"type": "object", "patternProperties": {EVIL: {"type": "integer"}}})
    with _no_backtracking_engine():
        assert v.errors({EVIL_INPUT: "x", "aaa": 1}) == []
        assert v.errors({"aaa": "x"})


def test_unsupported_pattern_is_not_run_by_a_backtracking_engine():
    from toolsift.gateway.validation import ArgumentValidator

    # Backreferences cannot be matched in linear time: the gateway leaves them to the
    # upstream (which validates too) instead of running them on the event loop.
    v = ArgumentValidator({"type": "object", "properties": {"x": {"type": "string", "pattern": r"^(a+)+\1$"}}})
    with _no_backtracking_engine():
        assert v.errors({"x": EVIL_INPUT}) == []
    assert v.unchecked_patterns == (r"^(a+)+\1$",)


def test_validation_has_a_hard_time_limit():
    # Huge arguments make even a linear-time check slow; the gateway stops waiting.
    index = ToolIndex.build([Tool(id="bulk", name="bulk", description="store many records",
                                  parameters=(Parameter("rows", "array"),),
                                  source={"name": "bulk", "inputSchema": {
                                      "type": "object",
                                      "properties": {"rows": {"type": "array", "items": {
                                          "type": "object", "properties": {"i": {"type": "integer"}}}}}}})])

    async def executor(tool, args):
        return {"ok": True}

    gw = Gateway(index, executor=executor, config=GatewayConfig(validation_timeout=0.05))
    rows = [{"i": i} for i in range(60_000)]

    async def timed() -> None:
        # The gateway stopped waiting: the deadline path, not a finished check, answered.
        with pytest.raises(GatewayError) as info:
            await gw.call_tool("bulk", {"rows": rows})
        assert info.value.code == "invalid_params" and "0.05" in info.value.message
        assert info.value.details["reason"] == "validation_timeout"

    asyncio.run(timed())


def test_unique_items_is_checked_in_linear_time_and_agrees_with_jsonschema():
    from jsonschema import Draft202012Validator

    from toolsift.gateway.validation import ArgumentValidator

    schema = {"type": "object", "properties": {"x": {"type": "array", "uniqueItems": True}}}
    ours, ref = ArgumentValidator(schema), Draft202012Validator(schema)
    for arr in ([1, 1.0], [1, True], [0, False], [{"a": 1}, {"a": 1.0}], [{"a": [1]}, {"a": [2]}],
                [[1, "a"], [1, "a"]], ["a", "b"], [None, None], [{}, []]):
        assert bool(ours.errors({"x": arr})) == bool(list(ref.iter_errors({"x": arr}))), arr
    # This thread's CPU time, not wall time and not the process's: a quadratic check costs
    # tens of CPU seconds here, a linear one tens of milliseconds; neither a busy machine
    # nor threads other tests left running (a timed-out validation) may count.
    t0 = time.thread_time()
    assert ours.errors({"x": [{"i": i} for i in range(20_000)]}) == []
    assert time.thread_time() - t0 < 1.0


def test_routing_patterns_match_queries_in_linear_time():
    from toolsift.gateway import RoutingRule

    rule = RoutingRule(EVIL, ("x",))
    t0 = time.thread_time()  # this thread's CPU: a backtracking engine burns seconds, RE2 microseconds
    assert not rule.matches(EVIL_INPUT)
    assert rule.matches("AAAA")  # still case-insensitive
    assert time.thread_time() - t0 < 1.0
    assert RoutingRule(r"\border", ("c",)).matches("my ORDER") and not RoutingRule(r"\border", ("c",)).matches("bordering")


# ------------------------------------------------------------------ format and size
def _gateway(properties: dict, result, **config) -> Gateway:
    source = _tool("fetch_page", properties, list(properties))
    tool = Tool(id="fetch_page", name="fetch_page", description="fetch a web page",
                parameters=tuple(Parameter(k, "string") for k in properties), source=source)

    async def executor(tool, args):
        return result

    return Gateway(ToolIndex.build([tool]), executor=executor, config=GatewayConfig(**config))


def test_format_uri_is_enforced():
    gw = _gateway({"url": {"type": "string", "format": "uri"}}, {"ok": True})
    for bad in ("not a uri", "example.com/page", "http://exa mple.com/"):
        with pytest.raises(GatewayError) as info:
            asyncio.run(gw.call_tool("fetch_page", {"url": bad}))
        assert info.value.code == "invalid_params" and info.value.details["path"] == "$.url", bad
    assert asyncio.run(gw.call_tool("fetch_page", {"url": "https://example.com/a?b=c#d"}))["result"] == {"ok": True}


def test_oversized_results_become_a_structured_error():
    big = {"content": [{"type": "text", "text": "x" * 200_000}]}
    gw = _gateway({"url": {"type": "string"}}, big, max_result_bytes=100_000)
    with pytest.raises(GatewayError) as info:
        asyncio.run(gw.call_tool("fetch_page", {"url": "u"}))
    err = info.value
    assert err.code == "result_too_large" and err.details["limit_bytes"] == 100_000
    assert err.details["bytes"] > 200_000
    ok = _gateway({"url": {"type": "string"}}, big, max_result_bytes=300_000)
    assert asyncio.run(ok.call_tool("fetch_page", {"url": "u"}))["result"] == big
    assert GatewayConfig().max_result_bytes == 4 * 1024 * 1024
    assert GatewayConfig.from_dict({"max_result_bytes": 5000}).max_result_bytes == 5000


# ------------------------------------------------------------- no upstream answering
@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_serve_without_an_answering_upstream_prints_one_line(tmp_path, transport):
    dead = f"http://127.0.0.1:{_free_port()}/mcp"  # nothing listens there
    cfg = tmp_path / "dead.json"
    cfg.write_text(json.dumps({"upstreams": [{"name": "dead", "url": dead, "timeout_s": 2}]}), encoding="utf-8")
    args = [sys.executable, "-m", "toolsift", "serve", "--config", str(cfg), "--transport", transport]
    if transport == "http":
        args += ["--port", str(_free_port())]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, env=_env(), stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("toolsift: error: no tools to serve") and "dead" in lines[-1], proc.stderr
    assert not [line for line in lines[:-1] if "ERROR" in line or "error:" in line], proc.stderr


def test_docs_name_the_serve_exit_code():
    doc = (Path(__file__).resolve().parent.parent / "docs" / "gateway.md").read_text(encoding="utf-8")
    assert "exit status 2" in doc and "no tools to serve" in doc
