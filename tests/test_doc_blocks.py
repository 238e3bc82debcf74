"""Every ```python block in README.md and docs/*.md runs as written.

Blocks of one document run in order in one namespace (a later block may use an earlier
block's ``index``), in a temporary directory holding the files the prose assumes
(``tools.json`` is the bundled demo catalogue). A per-document preamble below defines
the few names the prose introduces in words (the user's message, a backend to call);
top-level ``await`` runs as in an asyncio REPL. A block that needs something a test
cannot have (a network service, an LLM server, a cluster) is preceded in the document
by ``<!-- skip: REASON -->`` and is skipped with that reason. docs/integrations.md has
its own runner against a loopback model server (test_integrations_docs.py).
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
import shutil
from pathlib import Path

import pytest

from toolsift.adapters import demo_catalog_path

from .chat_api_server import ChatAPIServer
from .test_integrations_docs import _model

# Index builds with dense embeddings and a loopback model server: about a minute.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OWN_RUNNER = {"integrations.md": "tests/test_integrations_docs.py"}
BLOCK = re.compile(r"(?:<!--\s*skip:\s*(?P<skip>.*?)\s*-->\s*\n)?```python\n(?P<code>.*?)```", re.S)

_DEMO_INDEX = """
from toolsift import ToolIndex, load_catalog
from toolsift.adapters import demo_catalog_path
catalog = load_catalog(demo_catalog_path())
index = ToolIndex.build(catalog)
"""

PREAMBLES = {
    "README.md": """
from openai import OpenAI
user_message = "email the quarterly report to my manager"
messages = [{"role": "user", "content": user_message}]
from langchain_core.tools import tool as _lc_tool

@_lc_tool
def send_email(to: str, subject: str) -> str:
    \"\"\"Send an email to a recipient with a subject line.\"\"\"
    return "sent"

@_lc_tool
def get_weather(city: str) -> str:
    \"\"\"Current weather for a city.\"\"\"
    return "sunny"

langchain_tools = [send_email, get_weather]
""" + _DEMO_INDEX.replace("index = ToolIndex.build(catalog)\n", ""),
    "batch.md": _DEMO_INDEX + """
import pyarrow as pa
import pyarrow.parquet as pq
index.save("index/")
pairs_table = pa.table({"query": ["send an email to Bob", "weather in Paris"],
                        "tool_id": ["send_email", "get_current_weather"]})
pq.write_table(pairs_table, "pairs.parquet")
queries_table = pa.table({"query": ["send an email to Bob", "weather in Paris"]})
""",
    "decompose.md": _DEMO_INDEX,
    "graph.md": "from toolsift import ToolIndex\nfrom toolsift.adapters import load_openapi\n",
    "usage-learning.md": _DEMO_INDEX + """
async def run_tool(tool, arguments):
    return {"ok": True}
""",
    "gateway.md": """
class _Backend:
    async def call(self, name, arguments):
        return {"tool": name, "arguments": arguments}

my_backend = _Backend()
""",
}

# Repository files a document names by relative path, copied into its directory.
FILES = {
    "graph.md": ["tests/fixtures/openapi/shop.json"],
}

# Objects a document starts that must be stopped afterwards (threads, signal handlers).
TEARDOWN = {
    "usage-learning.md": "relearner.stop(); recorder.close()",
}


def _blocks() -> list:
    params = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            line = text[: m.start("code")].count("\n")
            marks = []
            if doc.name in OWN_RUNNER:
                marks.append(pytest.mark.skip(reason=f"run by {OWN_RUNNER[doc.name]}"))
            elif m.group("skip"):
                marks.append(pytest.mark.skip(reason=m.group("skip")))
            params.append(pytest.param(doc.name, line, m.group("code"), marks=marks, id=f"{doc.name}:{line}"))
    return params


def _run(code: str, ns: dict, where: str) -> None:
    compiled = compile(code, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(compiled, ns)  # the repository's own documentation
    if inspect.iscoroutine(result):
        asyncio.run(result)


@pytest.fixture(scope="module")
def doc_state(tmp_path_factory):
    """Per document: its working directory and namespace, shared by its blocks."""
    states: dict[str, dict] = {}
    yield states
    for name, state in states.items():
        if name in TEARDOWN and state.get("ns"):
            try:
                _run(TEARDOWN[name], state["ns"], f"{name}:teardown")
            except NameError:
                pass  # the block that starts it failed; its own test reports that


BLOCKS = _blocks()


def test_every_doc_has_its_blocks_found():
    assert len(BLOCKS) >= 20
    assert {p.values[0] for p in BLOCKS} >= {"README.md", "gateway.md", "batch.md"}


@pytest.mark.parametrize("doc, line, code", BLOCKS)
def test_doc_block_runs(doc, line, code, doc_state, tmp_path_factory, monkeypatch):
    state = doc_state.get(doc)
    if state is None:
        work = tmp_path_factory.mktemp(doc.replace(".", "_"))
        shutil.copy(demo_catalog_path(), work / "tools.json")
        for rel in FILES.get(doc, ()):
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / rel, work / rel)
        state = doc_state[doc] = {"dir": work, "ns": {"__name__": "__doc__"}}
        monkeypatch.chdir(work)
        if doc in PREAMBLES:
            _run(PREAMBLES[doc], state["ns"], f"{doc}:preamble")
    monkeypatch.chdir(state["dir"])
    # OpenAI / Anthropic clients talk to a loopback server playing the model (the same
    # scripted model as the integrations doc test); nothing leaves the machine.
    with ChatAPIServer(responder=_model) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        # A block may use names an earlier block of its doc made. Under pytest-xdist the
        # earlier blocks can run in another worker: run any this worker has not, in order.
        done = state.setdefault("done", set())
        for p in BLOCKS:
            d, ln, earlier = p.values
            if d == doc and ln < line and ln not in done and not any(m.name == "skip" for m in p.marks):
                _run(earlier, state["ns"], f"{doc}:{ln}")
                done.add(ln)
        _run(code, state["ns"], f"{doc}:{line}")
        done.add(line)
