"""Opt-in integration test against a real OpenAI-compatible server.

Runs only when TOOLSIFT_LLM_BASE_URL is set (e.g. after ``scripts/llama_server.sh start``):
that variable is the explicit opt-in. CI does not set it, so CI covers the error paths
with tests/llm_server.py instead (tests/test_llm.py).
"""

from __future__ import annotations

import os

import pytest

from toolsift.llm import LLMClient, rewrite_with_llm, standardize_with_llm

pytestmark = pytest.mark.skipif(
    not os.environ.get("TOOLSIFT_LLM_BASE_URL"),
    reason="opt-in: set TOOLSIFT_LLM_BASE_URL to a real OpenAI-compatible server",
)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    # A fresh cache: the point is to talk to the server, not to replay old answers.
    return LLMClient(timeout=300, max_retries=1, concurrency=1,
                     cache_dir=tmp_path_factory.mktemp("llm-cache"))


def test_real_server_answers_json(client):
    out = client.complete_json([
        {"role": "system", "content": "Answer with a JSON object only."},
        {"role": "user", "content": 'Return {"capital": <the capital of France>}.'},
    ])
    assert isinstance(out, dict) and "paris" in str(out).lower()
    assert client.usage.calls == 1 and client.usage.prompt_tokens > 0


def test_real_rewrite_and_standardize(client, demo_catalog):
    from toolsift import ToolIndex
    from toolsift.schema import Catalog

    small = Catalog(list(demo_catalog)[:2], name="demo-head")
    std, s_report = standardize_with_llm(small, client, progress=False)
    assert len(std) == 2 and s_report.items == 2
    assert all(t.description for t in std)

    index = ToolIndex.build(demo_catalog)
    queries, r_report = rewrite_with_llm(["Send a text message to my landlord saying the rent is paid"],
                                         index, client, progress=False)
    assert r_report.items == 1 and len(queries) == 1
    # A small model may still produce an invalid rewrite; then the fallback must hold.
    if r_report.fallbacks == 0:
        assert queries[0].needs and all(n.user_intent or n.tool_description for n in queries[0].needs)
    else:
        assert queries[0].arguments == {}
    print(s_report.summary())
    print(r_report.summary())
