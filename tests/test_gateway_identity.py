"""Client identity over HTTP cannot be made up (issue 37, item 1).

The real gateway (``toolsift serve --transport http``, a subprocess) with the weather
upstream and the demo catalogue, driven by a raw HTTP client (httpx) speaking MCP's
JSON-RPC. The usage log records who asked; learning counts distinct identities
(``LearnConfig.min_clients``, 5), so:

* forged ``X-Forwarded-For`` / ``X-Real-IP`` / ``Forwarded`` headers are one client
  (the TCP peer) and teach nothing, unless the operator names a trusted proxy;
* with named tokens (``auth_tokens``), the token's principal is the identity: four
  principals cannot move an unrelated tool into a query's top 10, five can.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._procs import serving
from tests.test_gateway_server import SERVERS
from toolsift import ToolIndex
from toolsift.adapters import demo_catalog_path
from toolsift.usage import UsageLog, attribute, learn

QUERY = "email the quarterly report to my manager"
VICTIM = "weather__get_forecast"
FORGED = [
    {"X-Forwarded-For": "203.0.113.1"},
    {"X-Forwarded-For": "198.51.100.7, 203.0.113.2"},
    {"X-Real-IP": "203.0.113.3"},
    {"Forwarded": "for=203.0.113.4;proto=http"},
    {"X-Forwarded-For": "203.0.113.5", "X-Real-IP": "203.0.113.6", "Forwarded": "for=203.0.113.7"},
]


def _config(path: Path, **extra: Any) -> Path:
    path.write_text(json.dumps({"upstreams": [{"name": "weather",
                                               "command": [sys.executable, str(SERVERS / "weather.py")]}],
                                **extra}), encoding="utf-8")
    return path


class _Mcp:
    """One MCP session over plain HTTP requests."""

    def __init__(self, client: httpx.Client, base: str, headers: dict[str, str]) -> None:
        self.client = client
        self.url = base + "/mcp"
        self.headers = {"accept": "application/json, text/event-stream", **headers}
        self.next_id = 1
        reply = self._post({"method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        self.headers["mcp-session-id"] = reply.headers["mcp-session-id"]
        self._post({"method": "notifications/initialized"}, notify=True)

    def _post(self, body: dict[str, Any], *, notify: bool = False) -> httpx.Response:
        body = {"jsonrpc": "2.0", **body}
        if not notify:
            body["id"] = self.next_id
            self.next_id += 1
        reply = self.client.post(self.url, json=body, headers=self.headers)
        assert reply.status_code < 300, reply.text
        return reply

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self._post({"method": "tools/call", "params": {"name": name, "arguments": arguments}}).json()
        assert "result" in result and not result["result"].get("isError"), result
        return result["result"]


def _promote(base: str, headers: dict[str, str]) -> None:
    """One colluding session: search for QUERY, then call the victim successfully."""
    with httpx.Client(timeout=60) as client:
        s = _Mcp(client, base, headers)
        s.call("find_tools", {"query": QUERY, "limit": 5})
        s.call(VICTIM, {"city": "Lisbon", "days": 1})


def _rank(index: ToolIndex, tool: str) -> int:
    return next(h.rank for h in index.search(QUERY, k=len(index.catalog)) if h.tool.id == tool)


def _serve(tmp_path: Path, name: str, **config: Any):
    return serving(["--config", str(_config(tmp_path / f"{name}.json", **config)),
                    "--catalog", str(demo_catalog_path()), "--usage", str(tmp_path / f"{name}.db"),
                    "--save-index", str(tmp_path / f"{name}-index")], tmp_path / f"{name}.log")


def test_forged_forwarding_headers_are_one_client(tmp_path):
    """Five sessions with five made-up client addresses in headers: one identity (the
    TCP peer), so learning moves nothing (before: five clients, and the victim rose)."""
    with _serve(tmp_path, "forged") as (_, base):
        for headers in FORGED:
            _promote(base, headers)
    index = ToolIndex.load(tmp_path / "forged-index")
    with UsageLog(tmp_path / "forged.db") as log:
        clients = {row.client for row in (*log.finds(), *log.uses())}
        assert clients == {"http:127.0.0.1"}
        assert len({f.session for f in log.finds()}) == len(FORGED)
        result = learn(index, log)
    assert result.added == {}
    assert _rank(result.index, VICTIM) == _rank(index, VICTIM) > 10


def test_trusted_proxy_is_the_only_source_of_forwarded_addresses(tmp_path):
    """With the operator's proxy named, its X-Forwarded-For is the client; X-Real-IP and
    Forwarded stay ignored (uvicorn reads X-Forwarded-For only)."""
    with _serve(tmp_path, "proxy", trusted_proxies=["127.0.0.1"]) as (_, base):
        for headers in FORGED:
            _promote(base, headers)
    with UsageLog(tmp_path / "proxy.db") as log:
        clients = sorted({f.client for f in log.finds()})
    assert clients == ["http:127.0.0.1", "http:203.0.113.1", "http:203.0.113.2", "http:203.0.113.5"]


def test_five_token_principals_needed_to_promote(tmp_path):
    """Identities are the principals of named tokens: 4 of them colluding leave the
    victim where it was; 5 (LearnConfig.min_clients) put it in the top 10. Forged
    headers beside a token change nothing."""
    tokens = {f"agent{i}": f"secret-token-{i}" for i in range(5)}
    with _serve(tmp_path, "tokens", auth_tokens=tokens) as (_, base):
        with httpx.Client(timeout=30) as client:
            assert client.post(base + "/mcp", json={}).status_code == 401
        for i, token in enumerate(tokens.values()):
            _promote(base, {"Authorization": f"Bearer {token}", **FORGED[i]})
    index = ToolIndex.load(tmp_path / "tokens-index")
    before = _rank(index, VICTIM)
    assert before > 10
    with UsageLog(tmp_path / "tokens.db") as log:
        finds, uses = list(log.finds()), list(log.uses())
    assert {f.client for f in finds} == {f"token:{name}" for name in tokens}
    four = {f"token:agent{i}" for i in range(4)}
    result = learn(index, attribute(([f for f in finds if f.client in four], [u for u in uses if u.client in four])))
    assert result.added == {} and _rank(result.index, VICTIM) == before
    result = learn(index, attribute((finds, uses)))
    assert VICTIM in result.added and _rank(result.index, VICTIM) <= 10


@pytest.mark.parametrize("bad", [{"trusted_proxies": ["proxy.example"]},
                                 {"auth_tokens": {"a": "same", "b": "same"}}])
def test_identity_settings_are_checked(bad):
    from toolsift.errors import ConfigError
    from toolsift.gateway.upstream import ServeConfig

    with pytest.raises(ConfigError):
        ServeConfig.from_dict(bad)


def test_each_stdio_gateway_run_is_one_client(tmp_path):
    """Over stdio the identity is the gateway process the host started for its client:
    two runs are two identities, and every session of one run is that one."""
    from tests.test_gateway_server import call, run, stdio_session

    db = tmp_path / "stdio.db"
    args = ["--catalog", str(demo_catalog_path()), "--usage", str(db)]

    async def one_run(n: int) -> None:
        async with stdio_session(args, tmp_path / f"stdio{n}.log") as s:
            for _ in range(2):
                is_error, _ = await call(s, "find_tools", {"query": QUERY, "limit": 3})
                assert not is_error

    for n in range(2):
        run(lambda n=n: one_run(n))
    with UsageLog(db) as log:
        finds = list(log.finds())
    assert len(finds) == 4
    clients = [f.client for f in finds]
    assert all(c.startswith("stdio:") for c in clients)
    assert clients[0] == clients[1] != clients[2] == clients[3]
