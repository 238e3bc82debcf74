"""Upstream results are refused as too large while they are read (issue 24, item 5).

A 50 MB result, or one with 300,000 items, used to end as ``upstream_timeout`` after
20-28 s (the SDK's stdio transport re-joined the growing line on every chunk, then
validated every item). Now the gateway's stdio transport counts the bytes as they
stream in and the items before validation, and answers ``result_too_large``; the
upstream keeps running.
"""

from __future__ import annotations

import json
import random
import sys

import pytest

from tests.test_gateway_server import SERVERS, Proc, _free_port, call, http_session, ok, run, serve_http
from toolsift.gateway.stdio_transport import _LineReader, count_items, top_level_id

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the capped transport is POSIX only")


@pytest.fixture(scope="module")
def bulky_gateway(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bulky")
    port = _free_port()
    over_http = Proc([sys.executable, str(SERVERS / "bulky.py"), "--http", "--port", str(port)], tmp / "http.log")
    try:
        over_http.wait_http(f"http://127.0.0.1:{port}/mcp")
        config = tmp / "gateway.json"
        # A call timeout far above what the refusal needs: a timeout is the old failure.
        config.write_text(json.dumps({"auth_token": "t0k", "upstreams": [
            {"name": "bulky", "command": [sys.executable, str(SERVERS / "bulky.py")], "timeout_s": 120},
            {"name": "bulkyh", "url": f"http://127.0.0.1:{port}/mcp", "timeout_s": 120}]}), encoding="utf-8")
        with serve_http(["--config", str(config)], tmp / "gateway.log") as base:
            yield base
    finally:
        over_http.stop()


@pytest.mark.parametrize("upstream", ["bulky", "bulkyh"], ids=["stdio", "http"])
def test_large_and_many_item_results_are_refused_while_read(bulky_gateway, upstream):
    async def scenario() -> None:
        async with http_session(bulky_gateway, token="t0k") as s:
            pid = (await ok(s, f"{upstream}__small"))["pid"]
            is_error, body = await call(s, f"{upstream}__blob", {"mb": 50})
            assert is_error and body["error"]["code"] == "result_too_large", body
            # stdio reads the line to its end (to find the next message); HTTP stops early.
            assert body["error"]["bytes"] > body["error"]["limit_bytes"], body
            assert body["error"]["limit_bytes"] < 50_000_000
            assert body["error"]["upstream"] == upstream  # refused by the transport, not after the fact
            is_error, body = await call(s, f"{upstream}__many", {"n": 300_000})
            assert is_error and body["error"]["code"] == "result_too_large", body
            assert body["error"]["limit_items"] == 100_000
            # Under the caps, results pass, and the same upstream process still serves.
            assert len((await ok(s, f"{upstream}__many", {"n": 1000}))["items"]) == 1000
            assert (await ok(s, f"{upstream}__small"))["pid"] == pid

    run(scenario)


def _messages(lines: list[bytes], chunk_sizes: list[int], max_bytes: int, max_items: int) -> list:
    data = b"".join(line + b"\n" for line in lines)
    reader, out, i = _LineReader(max_bytes, max_items), [], 0
    for size in chunk_sizes:
        out.extend(reader.feed(data[i:i + size]))
        i += size
    out.extend(reader.feed(data[i:]))
    return out


def test_line_reader_splits_and_refuses_like_whole_line_parsing():
    rng = random.Random(7)
    small = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi\\n"}]}}
    big = {"jsonrpc": "2.0", "result": {"id": 99, "content": [{"type": "text", "text": "y" * 5000}]}, "id": 2}
    wide = {"jsonrpc": "2.0", "id": "w", "result": {"structuredContent": {"v": [1] * 600}, "content": []}}
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "z" * 5000, "level": "info"}}
    lines = [json.dumps(m).encode() for m in (small, big, wide, note, small)]
    for _ in range(30):  # any chunking gives the same messages
        sizes = [rng.randint(1, 700) for _ in range(40)]
        got = _messages(lines, sizes, max_bytes=2000, max_items=500)
        assert len(got) == 4  # the oversized notification is dropped
        assert got[0].message.model_dump(by_alias=True, exclude_none=True)["result"] == small["result"]
        refused = [m.message.model_dump(by_alias=True, exclude_none=True) for m in got[1:3]]
        assert refused[0]["id"] == 2 and refused[0]["error"]["data"]["bytes"] == len(lines[1])  # not the nested id
        assert refused[1]["id"] == "w" and refused[1]["error"]["data"]["limit_items"] == 500
        assert got[3].message.model_dump(by_alias=True, exclude_none=True)["id"] == 1


def test_top_level_id_and_item_count_agree_with_json():
    rng = random.Random(3)
    for _ in range(200):
        inner = {rng.choice("abcid"): rng.choice([1, "s", [1, {"id": 5}], {"id": "x"}]) for _ in range(3)}
        msg_id = rng.choice([0, 17, "req-\"q\"", None])
        msg = {"jsonrpc": "2.0", "result": inner}
        if msg_id is not None:
            msg["id"] = msg_id
        keys = list(msg.items())
        rng.shuffle(keys)
        text = json.dumps(dict(keys)).encode()
        found, got, _ = top_level_id(text)
        assert found == (msg_id is not None) and (got == msg_id or msg_id is None), text

        def walk(v):
            if isinstance(v, dict):
                return len(v) + sum(walk(x) for x in v.values())
            if isinstance(v, list):
                return len(v) + sum(walk(x) for x in v)
            return 0

        assert count_items(inner, 10**9) == walk(inner)
