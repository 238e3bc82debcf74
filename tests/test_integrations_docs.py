"""Every Python example in docs/integrations.md runs, the SDK ones against a loopback server.

The OpenAI and Anthropic SDKs read their base URL from the environment, so the examples
run unchanged; the server plays a model that searches for the user's words, calls the
first tool found, then answers.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from .chat_api_server import ChatAPIServer, anthropic_reply, chat_reply, responses_reply

DOC = Path(__file__).resolve().parents[1] / "docs" / "integrations.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def _found(text):
    try:
        payload = json.loads(text)
    except (TypeError, ValueError):
        return None
    return payload.get("found") if isinstance(payload, dict) else None


def _model(path, body):
    """Search with the user's words, call the first tool found, then answer."""
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


def test_doc_has_an_example_per_integration():
    joined = "\n".join(BLOCKS)
    for module in ("openai", "anthropic", "langchain", "langgraph", "llama_index"):
        assert f"toolsift.integrations.{module} import" in joined


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_doc_example_runs(code, monkeypatch):
    with ChatAPIServer(responder=_model) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(DOC), "exec"), {"__name__": "__doc_example__"})
    printed = out.getvalue()
    assert printed.strip(), "every example prints its result"
    assert "[]" not in printed, "every example finds something"
    if "client.chat.completions" in code or "client.messages" in code:
        # The scripted model searched, called a found tool, then answered.
        assert printed.strip() == "Done." and len(srv.requests) == 3
    if "responses.create" in code:
        assert "lock_door" in printed
    if "make_retrieve_tools" in code:
        assert "['lock_door']" in printed
