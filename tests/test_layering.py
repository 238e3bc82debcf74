"""Import layering: lower layers never import higher ones.

data model (schema) < adapters < gateway; batch < distributed < CLI. Checked on the
source's import statements (including imports inside functions) and, for the data
model, on what importing it actually loads.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import toolsift

PKG = Path(toolsift.__file__).resolve().parent


def _imports(path: Path) -> set[str]:
    """Absolute module names imported anywhere in ``path`` (relative imports resolved)."""
    rel = path.relative_to(PKG.parent).with_suffix("")
    package = list(rel.parts)[:-1]  # a module's package; for __init__, the package itself
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def _modules(sub: str) -> list[Path]:
    return sorted((PKG / sub).glob("*.py")) if (PKG / sub).is_dir() else [PKG / f"{sub}.py"]


def test_importing_the_data_model_loads_no_adapter_or_writer():
    code = ("import sys, toolsift.schema; "
            "print(sorted(m for m in sys.modules if m.startswith(('toolsift.adapters', 'toolsift.gateway'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_schema_source_imports_no_higher_layer():
    imported = _imports(PKG / "schema.py")
    # Tool.to_openai() & co. delegate to the writers lazily, by design (a convenience
    # on the data model); nothing else of the adapters, and nothing of the gateway.
    allowed = {"toolsift.adapters.openai", "toolsift.adapters.anthropic", "toolsift.adapters.mcp",
               "toolsift.adapters.writers"}
    higher = {m for m in imported if m.startswith(("toolsift.adapters", "toolsift.gateway", "toolsift.integrations"))}
    assert {m.rsplit(".", 1)[0] if m.rsplit(".", 1)[0] in allowed else m for m in higher} <= allowed


def test_adapters_do_not_import_the_gateway():
    for path in _modules("adapters"):
        bad = {m for m in _imports(path) if m.startswith("toolsift.gateway")}
        assert not bad, f"{path.name} imports {sorted(bad)}"


def test_only_the_gateway_imports_its_private_modules():
    for path in PKG.rglob("*.py"):
        if "gateway" in path.relative_to(PKG).parts:
            continue
        bad = {m for m in _imports(path) if m.startswith("toolsift.gateway._")}
        assert not bad, f"{path.relative_to(PKG)} imports {sorted(bad)}"


def test_batch_does_not_import_distributed():
    for path in _modules("batch"):
        bad = {m for m in _imports(path) if m.startswith(("toolsift.distributed", "toolsift.cli"))}
        assert not bad, f"{path.name} imports {sorted(bad)}"
