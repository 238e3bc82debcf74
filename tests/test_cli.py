"""The toolsift command line, run as a real subprocess through the installed entry point
where available (python -m toolsift otherwise); the follow-up cases of a test run
through the CLI's entry in this process (tests/_cli.py), one interpreter start fewer each."""

from __future__ import annotations

import json
import subprocess

import pytest

from ._cli import run
from .conftest import dataset


def _run(*args: str, check: bool = True, real: bool = True) -> subprocess.CompletedProcess:
    proc = run(*args, real=real)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_demo_prints_ranked_tables():
    out = _run("demo").stdout
    assert "toolsift demo:" in out
    # The obvious tool wins the obvious queries.
    lines = out.splitlines()
    first = {}
    for i, line in enumerate(lines):
        if line.startswith("query: "):
            first[line.split("   (")[0][7:]] = lines[i + 2].split()[1]
    assert first["email the quarterly report to my manager"] == "send_email"
    assert first["refund the last payment from customer 4411"] == "refund_payment"
    # The index is the hybrid default and the demo says so, with a match BM25 alone misses.
    assert 'index: preset "hybrid" (the default): BM25 + MiniLM document vectors' in out
    semantic = next(line for line in lines if line.startswith("semantic match: "))
    assert "rank 1 in this index" in semantic and "by BM25 alone" in semantic


def test_demo_json():
    data = json.loads(_run("demo", "--json", "--query", "turn off the kitchen lights", "-k", "2").stdout)
    assert data[0]["hits"][0]["name"] == "control_lights"
    assert set(data[0]["hits"][0]["fields"]) == {"description", "parameters", "response", "examples"}


def test_index_then_search(tmp_path):
    src = dataset("mftr-apibank") / "dataset/augmented_tools/apibank/gpt-4o-mini_tools.json"
    out = _run("index", str(src), str(tmp_path / "idx"), "--quiet").stdout
    assert "indexed 101 tools" in out
    table = _run("search", str(tmp_path / "idx"), "get the weather forecast for tomorrow").stdout
    assert "desc" in table and "why" in table
    res = json.loads(_run("search", str(tmp_path / "idx"), "schedule a doctor appointment", "--json", "-k", "3",
                          real=False).stdout)
    assert len(res["hits"]) == 3 and res["hits"][0]["rank"] == 1
    q = {"tool_needs": [{"user_intent": "add an alarm at 7am", "tool_description": "Add an alarm clock at a time",
                         "expected_response": "status"}], "extracted_arguments": {"time": "alarm time"}}
    qfile = tmp_path / "q.json"
    qfile.write_text(json.dumps(q))
    res = json.loads(_run("search", str(tmp_path / "idx"), str(qfile), "--structured", "--json", real=False).stdout)
    assert "alarm" in res["hits"][0]["name"].lower()


def test_errors_are_one_line_with_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"tools": [ {"name": "x", ')
    proc = _run("index", str(bad), str(tmp_path / "idx"), check=False)
    assert proc.returncode == 2 and "bad.json" in proc.stderr and "Traceback" not in proc.stderr
    proc = _run("search", str(tmp_path / "missing"), "hello", check=False, real=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    _run("index", str(dataset("mftr-apibank") / "dataset/from_toolret/apibank/tools.json"), str(tmp_path / "i2"),
         real=False)
    proc = _run("search", str(tmp_path / "i2"), "   ", check=False, real=False)
    assert proc.returncode == 2 and "empty" in proc.stderr


def test_index_help_names_the_default_preset_and_every_format(capsys):
    """`toolsift index --help` says which preset an index gets and which formats it reads."""
    from toolsift.adapters import FORMATS
    from toolsift.cli import CATALOG_FORMATS, main
    from toolsift.presets import default_preset

    assert set(CATALOG_FORMATS) == set(FORMATS)
    with pytest.raises(SystemExit):
        main(["index", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"default: {default_preset()}" in text
    for name in FORMATS:
        assert name in text
    for shown in ("OpenAPI", "OpenAI", "Anthropic", "Gemini", "LangChain", "MCP", "ToolRet", "MFTR", "native"):
        assert shown in text
