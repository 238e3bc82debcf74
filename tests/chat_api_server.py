"""A loopback HTTP server that answers the OpenAI and Anthropic APIs with scripted JSON.

The wrapper tests talk to it through the real SDKs, so what it records is what the SDK
actually put on the wire. ``tests/llm_server.py`` answers only plain chat text; these
tests need tool calls in three API shapes, so each scripted reply is the whole JSON body.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ChatAPIServer:
    """``with ChatAPIServer() as srv:``; ``srv.script(body, ...)`` queues reply bodies.

    Every request is recorded as ``{"path", "body"}`` in :attr:`requests`. A request with
    nothing scripted is answered by ``responder(path, body)`` if given, else with a 500,
    so a test that expected fewer model calls fails loudly.
    """

    def __init__(self, *, responder: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None) -> None:
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self._script: deque[dict[str, Any]] = deque()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    def script(self, *bodies: dict[str, Any]) -> None:
        """Queue reply bodies for the next requests, in order."""
        with self._lock:
            self._script.extend(bodies)

    @property
    def url(self) -> str:
        """Root URL, e.g. ``http://127.0.0.1:PORT``."""
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The recorded request bodies."""
        return [r["body"] for r in self.requests]

    def __enter__(self) -> ChatAPIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server._lock:
                    server.requests.append({"path": self.path, "body": json.loads(raw or b"{}")})
                    reply = server._script.popleft() if server._script else None
                if reply is None and server.responder is not None:
                    reply = server.responder(self.path, server.requests[-1]["body"])
                status = 200 if reply is not None else 500
                out = json.dumps(reply if reply is not None else
                                 {"error": {"type": "api_error", "message": "nothing scripted"}}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        # shutdown() waits for serve_forever's next poll (0.5 s by default): a short
        # interval keeps each test's teardown from idling that long.
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None


# ------------------------------------------------------------------ reply builders
def chat_reply(*, content: str | None = None, calls: list[tuple[str, str, Any]] = ()) -> dict[str, Any]:
    """A Chat Completions body; ``calls`` are ``(id, name, arguments)``."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function",
             "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
            for cid, name, args in calls]
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "test-model",
            "choices": [{"index": 0, "finish_reason": "tool_calls" if calls else "stop", "message": message}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def anthropic_reply(*blocks: dict[str, Any]) -> dict[str, Any]:
    """A Messages API body with the given content blocks."""
    tool_use = any(b["type"] == "tool_use" for b in blocks)
    return {"id": "msg_test", "type": "message", "role": "assistant", "model": "test-model",
            "content": list(blocks), "stop_reason": "tool_use" if tool_use else "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}


def responses_reply(*items: dict[str, Any], rid: str = "resp_test") -> dict[str, Any]:
    """A Responses API body with the given output items."""
    return {"id": rid, "object": "response", "created_at": 0, "model": "test-model", "status": "completed",
            "output": list(items), "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}


def _found(text: Any) -> Any:
    try:
        payload = json.loads(text)
    except (TypeError, ValueError):
        return None
    return payload.get("found") if isinstance(payload, dict) else None


def scripted_model(path: str, body: dict[str, Any]) -> dict[str, Any]:
    """A model for the wrapper examples: search with the user's words, call the first
    tool found, then answer (Chat Completions, Messages and Responses APIs)."""
    if path.endswith("/chat/completions"):
        last = body["messages"][-1]
        if last["role"] == "user":
            return chat_reply(calls=[("c1", "tool_search", {"query": last["content"]})])
        found = _found(last.get("content"))
        return chat_reply(calls=[("c2", found[0]["name"], {})]) if found else chat_reply(content="Done.")
    if path.endswith("/messages"):
        content = body["messages"][-1]["content"]
        if isinstance(content, str):
            return anthropic_reply({"type": "tool_use", "id": "t1", "name": "tool_search",
                                    "input": {"query": content}})
        found = _found(content[0].get("content"))
        if found:
            return anthropic_reply({"type": "tool_use", "id": "t2", "name": found[0]["name"], "input": {}})
        return anthropic_reply({"type": "text", "text": "Done."})
    if path.endswith("/responses"):
        last = body["input"][-1]
        if last.get("role") == "user":
            return responses_reply({"type": "function_call", "id": "f1", "call_id": "c1",
                                    "name": "tool_search", "status": "completed",
                                    "arguments": json.dumps({"query": last["content"]})})
        found = _found(last.get("output"))
        if found:
            return responses_reply({"type": "function_call", "id": "f2", "call_id": "c2",
                                    "name": found[0]["name"], "arguments": "{}", "status": "completed"})
    raise AssertionError(f"unexpected request to {path}")
