"""A scriptable OpenAI-compatible chat server on loopback, for testing the LLM client.

Each request to ``POST /v1/chat/completions`` takes the next behaviour from the
script (then the default). Behaviours are dicts:

* ``{"kind": "ok", "content": dict | str}``: a 200 with that content (a dict is sent as
  JSON text); ``usage`` may override the token counts.
* ``{"kind": "slow", "delay": s, "content": ...}``: sleep, then answer like ``ok``.
* ``{"kind": "status", "status": 500, "retry_after": None}``: an error status.
* ``{"kind": "malformed"}``: a 200 whose content is not JSON.
* ``{"kind": "refusal"}``: a 200 whose content is a refusal sentence.
* ``{"kind": "reject_response_format"}``: 400 if the request has ``response_format``,
  else like ``ok``.

``responder`` (request body -> content) answers every request left unscripted, for
tests of standardization and rewriting. The server records request bodies, arrival
times and the highest number of requests in flight.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


class FakeLLMServer:
    """Start with ``with FakeLLMServer() as srv:``; ``srv.base_url`` is the root URL."""

    def __init__(self, *, default: dict[str, Any] | None = None,
                 responder: Callable[[dict], Any] | None = None) -> None:
        self.default = default or {"kind": "ok", "content": {"ok": True}}
        self.responder = responder
        self._script: deque[dict[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.times: list[float] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ control

    def script(self, *behaviours: dict[str, Any]) -> None:
        """Queue behaviours for the next requests, in order."""
        with self._lock:
            self._script.extend(behaviours)

    @property
    def count(self) -> int:
        """Requests received so far."""
        return len(self.requests)

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeLLMServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def do_GET(self) -> None:  # /v1/models, for readiness probes
                self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                    server.times.append(time.monotonic())
                    behaviour = server._script.popleft() if server._script else None
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    server._handle(self, body, behaviour)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and hung up: expected in timeout tests
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

        ThreadingHTTPServer.daemon_threads = True
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # shutdown() waits for serve_forever's next poll (0.5 s by default): a short
        # interval keeps each test's teardown from idling that long.
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----------------------------------------------------------- behaviours

    def _handle(self, h: Any, body: dict, behaviour: dict | None) -> None:
        if behaviour is None:
            behaviour = ({"kind": "ok", "content": self.responder(body)} if self.responder
                         else self.default)
        kind = behaviour["kind"]
        if kind == "slow":
            time.sleep(behaviour["delay"])
            kind = "ok"
        if kind == "status":
            headers = {}
            if behaviour.get("retry_after") is not None:
                headers["Retry-After"] = str(behaviour["retry_after"])
            h._send(behaviour["status"], {"error": {"message": f"scripted {behaviour['status']}"}},
                    headers)
            return
        if kind == "reject_response_format":
            if "response_format" in body:
                h._send(400, {"error": {"message": "response_format is not supported"}})
                return
            kind = "ok"
        if kind == "malformed":
            content: Any = '{"description": "cut off here'
        elif kind == "refusal":
            content = "I'm sorry, but I can't help with that request."
        else:
            content = behaviour.get("content", {"ok": True})
        if not isinstance(content, str):
            content = json.dumps(content)
        h._send(200, {
            "id": "chatcmpl-fake", "object": "chat.completion", "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": behaviour.get("usage", DEFAULT_USAGE),
        })
