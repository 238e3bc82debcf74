"""End to end: ``toolsift serve --usage`` in a subprocess over streamable HTTP, with the
real weather upstream (tests/gateway_servers), driven by the official MCP client: usage
is logged per MCP session, and SIGHUP makes the running gateway relearn and swap.

Every process is started here and stopped by its id.
"""

from __future__ import annotations

import json
import signal
import sys
import time


from tests.test_gateway_server import SERVERS, Proc, _free_port, call, http_session, run
from toolsift.usage import UsageLog, attribute

QUERY = "will I need an umbrella in Lisbon over the next days"


def test_serve_records_usage_and_relearns_on_sighup(tmp_path):
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"upstreams": [{"name": "weather", "command": [sys.executable,
                                                                                str(SERVERS / "weather.py")]}],
                                  "auth_token": "tok"}), encoding="utf-8")
    db = tmp_path / "usage.db"
    port = _free_port()
    proc = Proc([sys.executable, "-m", "toolsift", "serve", "--config", str(config), "--transport", "http",
                 "--port", str(port), "--usage", str(db), "--log-level", "info"], tmp_path / "serve.log")
    base = f"http://127.0.0.1:{port}"
    try:
        proc.wait_http(base + "/health", timeout=60)

        async def agent(use: bool) -> list[str]:
            async with http_session(base, token="tok") as s:
                _, found = await call(s, "find_tools", {"query": QUERY, "limit": 3})
                names = [t["name"] for t in found["tools"]]
                if use:
                    forecast = next(n for n in names if n.endswith("get_forecast"))
                    is_error, _ = await call(s, forecast, {"city": "Lisbon", "days": 2})
                    assert not is_error
                    await call(s, forecast, {"city": 7})  # invalid: logged, never counts
                return names

        async def scenario() -> None:
            await agent(True)
            await agent(True)

        run(scenario)
        proc.p.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 60
        while "relearned learned-000001" not in proc.tail() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "relearned learned-000001" in proc.tail(), proc.tail()

        async def after() -> None:
            await agent(False)

        run(after)
    finally:
        proc.stop()
    with UsageLog(db) as log:
        finds = list(log.finds())
        uses = list(log.uses())
    assert len(finds) == 3 and len({f.session for f in finds}) == 3
    assert all(f.session.startswith("http:") for f in finds)
    # The client identity is filled in over HTTP (the peer address), so voter="client"
    # and LearnConfig.min_clients act there too.
    assert {f.client for f in finds} == {u.client for u in uses} == {"http:127.0.0.1"}
    assert finds[-1].index_version == "learned-000001" != finds[0].index_version
    assert sorted(u.outcome for u in uses) == ["invalid_params", "invalid_params", "success", "success"]
    ev = attribute((finds, uses))
    (tool,) = ev.intents[QUERY.casefold()].positives
    assert tool.endswith("get_forecast") and len(ev.intents[QUERY.casefold()].positives[tool]) == 2
