"""Every ```python block of README.md and docs/*.md runs as pasted.

The rule: a document's blocks run in order, in ONE fresh interpreter per document, whose
working directory is an empty temporary folder (the README asks a newcomer to create no
file). Nothing is defined for them: the driver below only executes each block, in one
namespace, compiled under the name ``DOC:LINE`` so a traceback names the block. So the
first block of a document must stand on its own and every later block either continues
it or starts over.

A block that needs an outside service says so on the line before it, with
``<!-- needs: NAME -->``, and runs against this project's local stand-in for it:

* ``llm``: a loopback server playing the model. The OpenAI and Anthropic SDKs find it
  through ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` (tests/chat_api_server.py), the
  toolsift LLM client through ``TOOLSIFT_LLM_BASE_URL`` (tests/llm_server.py).
* ``gateway``: ``toolsift serve`` over HTTP on a free port, its MCP URL in
  ``TOOLSIFT_GATEWAY_URL``.
* ``ray``: nothing to start: ``ray.init()`` without ``RAY_ADDRESS`` starts a local
  cluster inside the document's own process. Those documents are ``slow`` (a Ray start
  takes tens of seconds); every other document runs in the fast tier.

No block is skipped: an unknown ``needs`` or a ``<!-- skip`` comment fails the test.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests._procs import serving
from toolsift.adapters import demo_catalog_path

from .chat_api_server import ChatAPIServer, scripted_model
from .llm_server import FakeLLMServer

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(?:<!--\s*needs:\s*(?P<needs>[\w-]+)\s*-->\s*\n)?```python\n(?P<code>.*?)```", re.S)
STAND_INS = ("llm", "gateway", "ray")
SLOW = {"ray"}  # stand-ins that make a document's run slow

# Runs the blocks given as JSON on stdin, in order, in one namespace: no definitions of
# its own, so a block sees exactly what the blocks before it made.
DRIVER = """
import json, sys
ns = {"__name__": "__main__"}
for where, code in json.load(sys.stdin):
    exec(compile(code, where, "exec"), ns)
"""

# One answer for every toolsift.llm request: valid as a standardized doc and as a rewrite
# (each validator reads its own keys), so the example exercises the success path.
LLM_ANSWER = {
    "description": "Reserve a table at a restaurant for a party at a given time.",
    "parameters": [], "response": "The booking confirmation.", "examples": ["book a table for two"],
    "tool_needs": [{"user_intent": "Book a table for two tonight.",
                    "tool_description": "Reserve a table at a restaurant.",
                    "expected_response": "The booking confirmation."}],
    "extracted_arguments": {"party_size": "number of people"},
}


def _documents() -> dict[str, list[tuple[int, str | None, str]]]:
    docs: dict[str, list[tuple[int, str | None, str]]] = {}
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        blocks = [(text[: m.start("code")].count("\n") + 1, m.group("needs"), m.group("code"))
                  for m in BLOCK.finditer(text)]
        if blocks:
            docs[doc.relative_to(ROOT).as_posix()] = blocks
    return docs


DOCUMENTS = _documents()


def _params() -> list:
    params = []
    for name, blocks in DOCUMENTS.items():
        needs = {n for _, n, _ in blocks if n}
        marks = [pytest.mark.slow] if needs & SLOW else []
        params.append(pytest.param(name, id=name, marks=marks))
    return params


def test_blocks_are_found_and_marks_are_known():
    assert len([b for blocks in DOCUMENTS.values() for b in blocks]) >= 20
    assert {"README.md", "docs/gateway.md", "docs/batch.md", "docs/integrations.md"} <= set(DOCUMENTS)
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        assert "<!-- skip" not in text, f"{doc.name}: blocks are run, not skipped; use <!-- needs: ... -->"
        for needs in re.findall(r"<!--\s*needs:\s*([\w-]+)\s*-->", text):
            assert needs in STAND_INS, f"{doc.name}: no stand-in for needs: {needs}"
    joined = "\n".join(code for _, _, code in DOCUMENTS["docs/integrations.md"])
    for module in ("openai", "anthropic", "langchain", "langgraph", "llama_index"):
        assert f"toolsift.integrations.{module} import" in joined


@contextlib.contextmanager
def _gateway(log: Path):
    """``toolsift serve`` on the demo catalogue over HTTP; yields its MCP URL once it
    prints its ready line, and stops it however the block ends."""
    with serving(["--catalog", str(demo_catalog_path())], log) as (_, base):
        yield f"{base}/mcp"


@pytest.mark.parametrize("doc", _params())
def test_document_runs_as_pasted(doc, tmp_path):
    blocks = DOCUMENTS[doc]
    needs = {n for _, n, _ in blocks if n}
    work = tmp_path / "work"  # empty: the reader creates nothing before pasting
    work.mkdir()
    env = dict(os.environ, TOOLSIFT_LLM_CACHE_DIR=str(tmp_path / "llm-cache"))
    for name in ("RAY_ADDRESS", "TOOLSIFT_LLM_BASE_URL", "TOOLSIFT_GATEWAY_URL"):
        env.pop(name, None)
    with contextlib.ExitStack() as stack:
        if "llm" in needs:
            chat = stack.enter_context(ChatAPIServer(responder=scripted_model))
            llm = stack.enter_context(FakeLLMServer(responder=lambda body: LLM_ANSWER))
            env.update(OPENAI_BASE_URL=chat.url + "/v1", OPENAI_API_KEY="test",
                       ANTHROPIC_BASE_URL=chat.url, ANTHROPIC_API_KEY="test",
                       TOOLSIFT_LLM_BASE_URL=llm.base_url)
        if "gateway" in needs:
            env["TOOLSIFT_GATEWAY_URL"] = stack.enter_context(_gateway(tmp_path / "gateway.log"))
        program = [(f"{doc}:{line}", code) for line, _, code in blocks]
        run = subprocess.run([sys.executable, "-c", DRIVER], input=json.dumps(program), cwd=work, env=env,
                             capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{doc} failed as pasted:\n{run.stdout[-3000:]}\n{run.stderr[-6000:]}"
    assert "[]" not in run.stdout.splitlines(), f"{doc}: an example found nothing:\n{run.stdout}"
