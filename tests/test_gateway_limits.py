"""HTTP gateway limits and workers, over real sockets on 127.0.0.1 (issue 24, items 5 and 9).

* A client that trickles its request head, or its body, is cut off after
  ``header_timeout_s`` / ``body_timeout_s`` instead of being held open indefinitely.
* Connections beyond ``max_connections`` are answered 503 and closed at once.
* ``serve --workers 2``: both worker processes answer find_tools, from one saved index
  that both memory-map.

Every wait is a bounded loop; the bounds ("closed within N s") are generous so they
hold on a loaded machine, and nothing is asserted about speed beyond them.
"""

from __future__ import annotations

import http.client
import json
import socket
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests._cli import run as run_cli
from tests.test_gateway_server import serve_http
from toolsift.adapters import demo_catalog_path
from toolsift.errors import ConfigError
from toolsift.gateway.upstream import ServeConfig

# Far above the configured 1 s timeouts: the server must act, but may be slow to.
CLOSED_WITHIN_S = 30.0
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def _config(tmp_path: Path, **limits) -> Path:
    path = tmp_path / "limits.json"
    path.write_text(json.dumps(limits), encoding="utf-8")
    return path


def _serve(tmp_path: Path, *extra: str, **limits):
    return serve_http(["--catalog", str(demo_catalog_path()), "--config", str(_config(tmp_path, **limits)), *extra],
                      tmp_path / "gateway.log")


def _connect(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    return sock


def _closed_by_server(sock: socket.socket, *, trickle: bytes = b"", within_s: float = CLOSED_WITHIN_S) -> bytes:
    """Trickle ``trickle`` a byte at a time (if given) until the server closes the
    connection; return what it sent. Fails if it is still open after ``within_s``."""
    sock.settimeout(0.25)
    got = b""
    deadline = time.monotonic() + within_s
    i = 0
    while time.monotonic() < deadline:
        if i < len(trickle):
            try:
                sock.sendall(trickle[i:i + 1])
            except OSError:
                return got  # closed under our write
            i += 1
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            return got  # reset
        if not chunk:
            return got
        got += chunk
    raise AssertionError(f"connection still open after {within_s}s (received {got[:200]!r})")


def test_limits_are_validated():
    assert ServeConfig.from_dict({}).header_timeout_s == 10.0
    for key, bad in (("header_timeout_s", 0), ("body_timeout_s", -1), ("keep_alive_s", "5"),
                     ("max_connections", 0)):
        with pytest.raises(ConfigError, match=key):
            ServeConfig.from_dict({key: bad})


def test_trickled_request_heads_are_closed(tmp_path):
    # Today's code held such connections open indefinitely; a slow trickle (a byte every
    # 0.25 s) never completes its head, so only the header deadline can end it.
    head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Slow: " + b"a" * 4000
    with _serve(tmp_path, header_timeout_s=1.0, keep_alive_s=1.0) as base:
        socks = [_connect(base) for _ in range(20)]
        try:
            idle = socks.pop()  # one that never sends a byte is closed too
            for s in socks:
                s.sendall(head[:10])
            _closed_by_server(socks[0], trickle=head[10:])
            for s in socks[1:]:
                _closed_by_server(s)
            _closed_by_server(idle)
            assert httpx.get(base + "/health", timeout=10).status_code == 200
        finally:
            for s in socks + [idle]:
                s.close()


def test_trickled_body_gets_408_and_is_closed(tmp_path):
    with _serve(tmp_path, body_timeout_s=1.0) as base:
        sock = _connect(base)
        try:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 5000\r\n\r\n{")
            got = _closed_by_server(sock, trickle=b" " * 4000)
        finally:
            sock.close()
        status, _, body = got.partition(b"\r\n\r\n")
        assert status.startswith(b"HTTP/1.1 408"), got[:300]
        assert json.loads(body)["error"]["code"] == "request_timeout"


def test_connections_over_the_cap_are_refused_at_once(tmp_path):
    with _serve(tmp_path, max_connections=4, header_timeout_s=60.0) as base:
        held = [_connect(base) for _ in range(4)]
        try:
            time.sleep(0.5)  # the server has registered them
            extra = _connect(base)
            try:
                got = _closed_by_server(extra, within_s=CLOSED_WITHIN_S)
            finally:
                extra.close()
            head, _, body = got.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 503"), got[:200]
            length = [int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")]
            assert length == [len(body)] and json.loads(body)["error"]["code"] == "too_many_connections"
        finally:
            for s in held:
                s.close()
        # Room again once the held connections are gone.
        deadline = time.monotonic() + CLOSED_WITHIN_S
        while True:
            try:
                if httpx.get(base + "/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the gateway did not accept connections again"
            time.sleep(0.2)


def _find_tools(base: str, query: str) -> dict:
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("POST", "/mcp", body=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "find_tools", "arguments": {"query": query, "limit": 3}}}), headers=HEADERS)
        response = conn.getresponse()
        assert response.status == 200, response.read()[:300]
        return json.loads(response.read())["result"]
    finally:
        conn.close()


def _mapped_files(pid: int) -> set[str]:
    with open(f"/proc/{pid}/maps", encoding="utf-8") as f:
        return {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/maps")
def test_two_workers_serve_from_one_memory_mapped_index(tmp_path):
    from toolsift.adapters import load_catalog
    from toolsift.toolindex import ToolIndex

    query = "weather forecast for Lisbon"
    expected = [h.tool.name for h in ToolIndex.build(load_catalog(demo_catalog_path())).search(query, k=3)]
    with _serve(tmp_path, "--workers", "2") as base:
        pids: set[int] = set()
        for i in range(400):  # bounded: the kernel hands fresh connections to either worker
            result = _find_tools(base, query)
            assert not result["isError"], result
            assert [t["name"] for t in result["structuredContent"]["tools"]] == expected
            pids.add(result["_meta"]["toolsift/worker_pid"])
            if len(pids) == 2 and i >= 20:
                break
        assert len(pids) == 2, f"only worker(s) {pids} answered in {i + 1} requests"
        # Both map the same saved index files (one copy in the page cache), which live in
        # the supervisor's private folder.
        mapped = [{p for p in _mapped_files(pid) if "toolsift-serve-" in p} for pid in pids]
        assert mapped[0] and mapped[0] == mapped[1], mapped
    # Stopping the supervisor (SIGTERM) stops its workers.
    deadline = time.monotonic() + CLOSED_WITHIN_S
    while any(_is_worker(pid) for pid in pids):
        assert time.monotonic() < deadline, "workers outlived their supervisor"
        time.sleep(0.2)


def _is_worker(pid: int) -> bool:
    try:
        return b"toolsift.gateway.workers" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@pytest.mark.parametrize("extra, message", [
    (["--workers", "0", "--transport", "http"], "--workers must be from 1 to 64"),
    (["--workers", "2"], "--workers needs --transport http"),
])
def test_bad_workers_option_is_one_line(extra, message):
    # In this process: test_gateway_stop runs a bad --workers as a real process.
    done = run_cli("serve", "--catalog", str(demo_catalog_path()), *extra)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr
