"""The gateway with the MCP SDK major that is installed (1.x or 2.x): a user's own
high-level server (FastMCP / MCPServer) as an upstream, and a clear, typed error naming
the cause when an upstream cannot start.

Real SDK, real subprocesses over stdio; run under both majors (docs/gateway.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from toolsift.errors import ToolsiftError
from toolsift.gateway import Gateway, UpstreamStartError
from toolsift.gateway._mcp import MCP_MAJOR
from toolsift.gateway.upstream import Upstreams, UpstreamSpec

SERVERS = Path(__file__).resolve().parent / "gateway_servers"


def _spec(name: str, *command: str, **kw) -> UpstreamSpec:
    return UpstreamSpec(name=name, command=(sys.executable, *command), connect_timeout_s=kw.pop("timeout", 60), **kw)


def _serve_and_call(spec: UpstreamSpec) -> tuple[dict, dict]:
    out: dict = {}

    async def scenario() -> None:
        with anyio.fail_after(300):  # a loaded CI machine: index build and first JIT
            async with Upstreams([spec]) as ups:
                gateway = Gateway(ups.index, executor=ups.execute)
                ups.attach(gateway)
                out["found"] = await gateway.find_tools("search my personal notes for coffee", limit=2)
                out["done"] = await gateway.call_tool("notes__search_notes", {"query": "coffee"})

    anyio.run(scenario)
    return out["found"], out["done"]


def test_high_level_sdk_server_is_served_through_the_gateway():
    found, done = _serve_and_call(_spec("notes", str(SERVERS / "notes.py")))
    assert found["tools"][0]["name"] == "notes__search_notes", found
    assert {t["name"] for t in found["tools"]} <= {"notes__search_notes", "notes__read_note"}
    assert not done["result"].get("isError"), done
    assert "groceries" in json.dumps(done["result"]), done


def _start_failure(spec: UpstreamSpec) -> tuple[Upstreams, ToolsiftError, UpstreamStartError]:
    box: dict = {}

    async def scenario() -> None:
        async with Upstreams([spec]) as ups:
            box["ups"] = ups
            with pytest.raises(ToolsiftError) as info:
                ups.index  # noqa: B018 - no upstream answered
            box["err"] = info.value
            # A call (in the restart back-off, or restarting) raises the typed error.
            with pytest.raises(UpstreamStartError) as info:
                await ups._ups[spec.name].connection()
            box["typed"] = info.value

    anyio.run(scenario)
    return box["ups"], box["err"], box["typed"]


def test_upstream_that_exits_at_start_names_the_cause():
    spec = _spec("broken", "-c", "import sys; print('starting', file=sys.stderr); import toolsift_no_such_module")
    ups, err, typed = _start_failure(spec)
    cause = "ModuleNotFoundError: No module named 'toolsift_no_such_module'"
    assert f"upstream 'broken' exited during start-up: {cause}" in str(err)
    assert f"upstream 'broken' exited during start-up: {cause}" in str(typed)
    assert typed.code == "upstream_error" and typed.details["upstream"] == "broken"
    assert typed.stderr_tail[0] == "starting" and typed.stderr_tail[-1] == cause
    status = ups.status()[0]
    assert status["last_error"] == f"upstream 'broken' exited during start-up: {cause}"
    assert status["state"] == "down"
    assert "Connection closed" not in str(err)


def test_missing_command_and_silent_exit_are_named():
    _, err, typed = _start_failure(UpstreamSpec(name="ghost", command=("toolsift-no-such-command",)))
    assert "cannot start upstream 'ghost'" in str(typed) and "toolsift-no-such-command" in str(typed)
    assert isinstance(typed, UpstreamStartError)
    _, err, typed = _start_failure(_spec("mute", "-c", "raise SystemExit(3)"))
    assert "upstream 'mute' exited during start-up: it printed nothing on stderr" in str(typed)


def test_v1_fastmcp_server_under_the_installed_sdk():
    """The issue's case: v1 code importing ``mcp.server.fastmcp``. Served under 1.x; under
    2.x (which removed FastMCP) the start fails with the SDK's own message, not
    "Connection closed"."""
    spec = _spec("notes", str(SERVERS / "notes.py"), "--v1-only")
    if MCP_MAJOR < 2:
        found, done = _serve_and_call(spec)
        assert found["tools"][0]["name"] == "notes__search_notes"
        assert "groceries" in json.dumps(done["result"])
        return
    _, err, typed = _start_failure(spec)
    assert "upstream 'notes' exited during start-up: ModuleNotFoundError: No module named " \
           "'mcp.server.fastmcp'" in str(typed), str(typed)


def test_serve_cli_prints_the_cause(tmp_path, capsys):
    from toolsift.cli import main

    config = tmp_path / "serve.json"
    config.write_text(json.dumps({"upstreams": [
        {"name": "broken", "command": [sys.executable, "-c", "import toolsift_no_such_module"]}]}))
    assert main(["serve", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "toolsift: error: no tools to serve" in err
    assert "upstream 'broken' exited during start-up: ModuleNotFoundError: No module named " \
           "'toolsift_no_such_module'" in err
