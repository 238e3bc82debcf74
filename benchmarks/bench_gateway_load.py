"""Load: 1,000 concurrent ``find_tools`` calls over streamable HTTP against ``toolsift serve``.

Run with ``PYTHONPATH=src python -m pytest benchmarks/bench_gateway_load.py``. The
gateway runs in a subprocess on loopback (bearer auth on, the bundled demo catalogue);
the client is the official ``mcp`` ClientSession: ``SESSIONS`` sessions each fire their
share of the 1,000 requests at once, as one batch under a total time limit. Every
request must succeed; per-request latency p50/p99 (from the moment the batch is fired,
so it includes queueing behind the other 999) goes to ``benchmark.extra_info`` and the
summary. Client and server share the machine, so this measures the whole stack.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import numpy as np
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

import toolsift

from .conftest import report

REQUESTS = 1000
SESSIONS = 20
TOTAL_LIMIT_S = 180
TOKEN = "bench-token"
PKG_ROOT = str(Path(toolsift.__file__).resolve().parent.parent)
QUERIES = [
    "email the quarterly report to my manager", "will it rain in Lisbon tomorrow?",
    "refund the last payment from customer 4411", "open a bug about the login page crashing",
    "book a meeting with the design team next Tuesday", "convert 100 dollars to euros",
    "translate this paragraph into German", "what is on my calendar today",
    "send a slack message to the ops channel", "find flights from Paris to Tokyo",
    "create an invoice for ACME", "summarise this pdf", "look up the stock price of NVIDIA",
    "set a reminder to call mum at 6pm", "upload the file to cloud storage", "search the web for news",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_gateway(log: Path) -> tuple[subprocess.Popen, str]:
    from toolsift.adapters import demo_catalog_path

    config = log.with_suffix(".json")
    config.write_text(json.dumps({"auth_token": TOKEN, "gateway": {"max_limit": 20}}), encoding="utf-8")
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (PKG_ROOT, os.environ.get("PYTHONPATH")) if p)}
    out = open(log, "wb")  # noqa: SIM115 - the server's log, open while it runs
    proc = subprocess.Popen([sys.executable, "-m", "toolsift", "serve", "--catalog", str(demo_catalog_path()),
                             "--config", str(config), "--transport", "http", "--port", str(port)],
                            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, log.read_text(errors="replace")
        try:
            if httpx2.get(base + "/health", timeout=1).status_code == 200:
                return proc, base
        except httpx2.HTTPError:
            pass
        assert time.monotonic() < deadline, "gateway did not start:\n" + log.read_text(errors="replace")
        time.sleep(0.1)


async def _one_session(base: str, n: int, offset: int, latencies: list[float], errors: list[str],
                       ready: anyio.Event, go: anyio.Event, t0: list[float]) -> None:
    limits = httpx2.Limits(max_connections=n, max_keepalive_connections=n)
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=httpx2.Timeout(120),
                                limits=limits)
    async with client, streamable_http_client(base + "/mcp", http_client=client) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("find_tools", {"query": "warm up"})
        ready.set()
        await go.wait()

        async def one(i: int) -> None:
            try:
                result = await session.call_tool("find_tools", {"query": QUERIES[(offset + i) % len(QUERIES)],
                                                                "limit": 5})
                # An empty list is a valid answer (no tool matches), not an error.
                if result.is_error or "tools" not in (result.structured_content or {}):
                    errors.append(str(result.structured_content)[:200])
            except Exception as exc:  # noqa: BLE001 - counted, the assertion reports them
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
            latencies.append(time.perf_counter() - t0[0])

        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(one, i)


async def _batch(base: str) -> tuple[list[float], list[str], float]:
    latencies: list[float] = []
    errors: list[str] = []
    go = anyio.Event()
    t0 = [0.0]
    per = REQUESTS // SESSIONS
    with anyio.fail_after(TOTAL_LIMIT_S):
        async with anyio.create_task_group() as tg:
            readies = []
            for k in range(SESSIONS):
                ready = anyio.Event()
                readies.append(ready)
                tg.start_soon(_one_session, base, per, k * per, latencies, errors, ready, go, t0)
            for ready in readies:  # sessions are opened before the clock starts
                await ready.wait()
            t0[0] = time.perf_counter()
            go.set()
    return latencies, errors, time.perf_counter() - t0[0]


def test_gateway_http_1000_concurrent_find_tools(benchmark, tmp_path):
    proc, base = _start_gateway(tmp_path / "gateway.log")
    try:
        got: dict = {}

        def fire() -> None:
            got["latencies"], got["errors"], got["wall"] = anyio.run(_batch, base)

        benchmark.pedantic(fire, rounds=1, iterations=1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    lat = np.asarray(got["latencies"]) * 1e3
    errors = got["errors"]
    p50, p99 = float(np.percentile(lat, 50)), float(np.percentile(lat, 99))
    rps = len(lat) / got["wall"]
    benchmark.extra_info.update({"requests": len(lat), "errors": len(errors), "sessions": SESSIONS,
                                 "p50_ms": p50, "p99_ms": p99, "wall_s": got["wall"], "requests_per_s": rps})
    line = (f"gateway HTTP load: {len(lat)} concurrent find_tools ({SESSIONS} MCP sessions), {len(errors)} errors, "
            f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, {rps:,.0f} req/s, wall {got['wall']:.2f} s")
    print("\n" + line)
    report(line)
    assert len(lat) == REQUESTS
    assert not errors, errors[:5]
