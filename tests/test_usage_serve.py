"""End to end: ``toolsift serve --usage`` in a subprocess over streamable HTTP, with the
real weather upstream (tests/gateway_servers), driven by the official MCP client: usage
is logged per MCP session, and SIGHUP makes the running gateway relearn and swap.

Every process is started here and stopped by its id, pass or fail; readiness and
relearning are awaited by the lines the gateway prints, not by deadlines.
"""

from __future__ import annotations

import json
import signal
import sys


from tests._procs import serving
from tests.test_gateway_server import SERVERS, call, http_session, run
from toolsift.usage import UsageLog, attribute

QUERY = "will I need an umbrella in Lisbon over the next days"


def test_serve_records_usage_and_relearns_on_sighup(tmp_path):
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"upstreams": [{"name": "weather", "command": [sys.executable,
                                                                                str(SERVERS / "weather.py")]}],
                                  "auth_token": "tok"}), encoding="utf-8")
    db = tmp_path / "usage.db"
    with serving(["--config", str(config), "--usage", str(db), "--log-level", "info"],
                 tmp_path / "serve.log") as (proc, base):

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
        proc.wait_line("relearned learned-000001")  # its signal, however long relearning takes

        async def after() -> None:
            await agent(False)

        run(after)
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
