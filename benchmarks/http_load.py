"""A lightweight MCP load generator: raw HTTP/1.1 keep-alive connections, one thread each.

No MCP SDK on the client side, so the client costs little next to the server it
measures (it still shares the machine's cores with it). Each connection performs the
MCP handshake (``initialize``, ``notifications/initialized``), keeps the session id the
server gives (none in stateless mode), then sends ``tools/call`` requests back to back.
Server CPU is read from ``/proc`` (user + system time of the server process and its
children, e.g. workers) around the measured window.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_TICK = os.sysconf("SC_CLK_TCK")


def process_tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its live descendants (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        child = int(entry)
        children.setdefault(int(fields[1]), []).append(child)
        times[child] = (int(fields[11]) + int(fields[12])) / _TICK
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += times.get(p, 0.0)
        todo.extend(children.get(p, ()))
    return total


@dataclass
class LoadResult:
    """What one load run measured."""

    requests: int
    errors: int
    wall_s: float
    server_cpu_s: float
    pids: frozenset[str]
    response_bytes: int = 0  # bodies of the counted requests

    @property
    def bytes_per_response(self) -> float:
        return self.response_bytes / self.requests if self.requests else 0.0

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.wall_s if self.wall_s else 0.0

    @property
    def cpu_ms_per_request(self) -> float:
        return 1e3 * self.server_cpu_s / self.requests if self.requests else float("nan")


class _Client:
    """One keep-alive connection speaking MCP over plain HTTP."""

    def __init__(self, host: str, port: int, token: str | None) -> None:
        self.conn = http.client.HTTPConnection(host, port, timeout=60)
        self.headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if token:
            self.headers["authorization"] = f"Bearer {token}"
        self.next_id = 0

    def post(self, message: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        self.conn.request("POST", "/mcp", body=json.dumps(message).encode(), headers=self.headers)
        response = self.conn.getresponse()
        body = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body

    def handshake(self) -> None:
        status, headers, body = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "toolsift-load", "version": "1"}}})
        if status != 200:
            raise RuntimeError(f"initialize failed: {status} {body[:200]!r}")
        version = json.loads(body)["result"]["protocolVersion"]
        self.headers["mcp-protocol-version"] = version
        if "mcp-session-id" in headers:
            self.headers["mcp-session-id"] = headers["mcp-session-id"]
        status, _, body = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if status not in (200, 202):
            raise RuntimeError(f"notifications/initialized failed: {status} {body[:200]!r}")

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any] | None, int]:
        """``(succeeded, result, response body bytes)``."""
        self.next_id += 1
        status, _, body = self.post({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                                     "params": {"name": name, "arguments": arguments}})
        if status != 200:
            return False, None, len(body)
        result = json.loads(body).get("result") or {}
        return not result.get("isError", True), result, len(body)

    def close(self) -> None:
        self.conn.close()


def run_load(host: str, port: int, *, server_pid: int, tool: str,
             arguments: Callable[[int], dict[str, Any]], connections: int = 4, duration_s: float = 10.0,
             warmup_s: float = 1.0, token: str | None = None,
             pid_of: Callable[[dict[str, Any]], str | None] = lambda r: None) -> LoadResult:
    """Drive ``connections`` keep-alive connections calling ``tool`` for ``duration_s``.

    Args:
        server_pid: The server process; its CPU (with its children's) is measured.
        arguments: The call's arguments for request number ``i``.
        warmup_s: Calls made before the measured window starts (not counted).
        pid_of: Reads the serving process id from a result, when it carries one.
    """
    clients = [_Client(host, port, token) for _ in range(connections)]
    for c in clients:
        c.handshake()
    lock = threading.Lock()
    counts = {"ok": 0, "errors": 0, "bytes": 0}
    pids: set[str] = set()
    phase = {"measure": False, "stop": False}

    def worker(k: int, client: _Client) -> None:
        i = k
        while not phase["stop"]:
            ok, result, size = client.call(tool, arguments(i))
            i += connections
            if phase["measure"] and not phase["stop"]:
                with lock:
                    counts["ok" if ok else "errors"] += 1
                    counts["bytes"] += size
                    pid = pid_of(result) if result else None
                    if pid:
                        pids.add(pid)

    threads = [threading.Thread(target=worker, args=(k, c), daemon=True) for k, c in enumerate(clients)]
    for t in threads:
        t.start()
    time.sleep(warmup_s)
    cpu0, t0 = process_tree_cpu_s(server_pid), time.perf_counter()
    phase["measure"] = True
    time.sleep(duration_s)
    with lock:
        phase["stop"] = True
        done = dict(counts)
    cpu1, t1 = process_tree_cpu_s(server_pid), time.perf_counter()
    for t in threads:
        t.join(timeout=60)
    for c in clients:
        c.close()
    return LoadResult(requests=done["ok"] + done["errors"], errors=done["errors"], wall_s=t1 - t0,
                      server_cpu_s=cpu1 - cpu0, pids=frozenset(pids), response_bytes=done["bytes"])


def queries() -> Sequence[str]:
    """Varied find_tools queries (the same ones as the SDK-client load benchmark)."""
    return ("email the quarterly report to my manager", "will it rain in Lisbon tomorrow?",
            "refund the last payment from customer 4411", "open a bug about the login page crashing",
            "book a meeting with the design team next Tuesday", "convert 100 dollars to euros",
            "translate this paragraph into German", "what is on my calendar today",
            "send a slack message to the ops channel", "find flights from Paris to Tokyo",
            "create an invoice for ACME", "summarise this pdf", "look up the stock price of NVIDIA",
            "set a reminder to call mum at 6pm", "upload the file to cloud storage", "search the web for news")
