"""No import cycle among the modules of src/toolsift: layers only point down.

The rule, read from the source with ``ast`` (nothing is imported):

* Every ``import`` / ``from ... import`` of a toolsift module is an edge: at module level
  and inside functions alike (a lazy import inside a function is still a dependency; it
  only moves the cost to the first call). A package's lazy exports
  (``toolsift.lazy.lazy_exports(__name__, {name: module}, ...)``, e.g. ``toolsift.ToolIndex``)
  count too: one edge to each module of the mapping.
* Not an edge: imports under ``if TYPE_CHECKING:`` (annotations only, never run).
* ``from A import B`` points at module ``A.B`` when B is a submodule (a ``.py`` file, or
  a name A's ``__init__`` does not define, such as the compiled ``_core``), else at ``A``.
  ``import A.B.C`` points at ``A.B.C`` alone: a package's ``__init__`` runs first, but a
  package importing its own submodules is the package's job, not a layer pointing up.

A cycle is a strongly connected component of more than one module; the test names each
with its edges.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "src"
PACKAGE = ROOT / "toolsift"


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in PACKAGE.rglob("*.py")}
TREES = {m: ast.parse(p.read_text(encoding="utf-8"), str(p)) for m, p in MODULES.items()}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree`` outside ``if TYPE_CHECKING:`` blocks."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _defined(package: str) -> set[str]:
    """Names a package's ``__init__`` binds at module level or lists in ``__all__``."""
    names: set[str] = set()
    for node in TREES[package].body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
                try:
                    names.update(ast.literal_eval(node.value))
                except ValueError:
                    pass
    return names


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "toolsift"]
    if node.level:
        base = module.split(".")
        if MODULES[module].name != "__init__.py":
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    if source.split(".")[0] != "toolsift":
        return []
    out = []
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        is_package = source in MODULES and MODULES[source].name == "__init__.py"
        if sub in MODULES or (is_package and alias.name not in _defined(source)):
            out.append(sub)
        else:
            out.append(source)
    return out


def _lazy_targets(module: str, tree: ast.Module) -> list[str]:
    """The modules a package's ``lazy_exports(__name__, mapping, ...)`` call resolves names
    from (the mapping a dict literal or a module-level name bound to one)."""
    bound = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "lazy_exports"):
            continue
        mapping = node.args[1]
        if isinstance(mapping, ast.Name):
            mapping = bound[mapping.id]
        base = module.split(".")
        if MODULES[module].name != "__init__.py":
            base = base[:-1]  # a plain module's names resolve in its package, as a relative import
        for name in ast.literal_eval(mapping).values():
            level = max(1, len(name) - len(name.lstrip(".")))
            out.append(".".join(base[: len(base) - (level - 1)] + [name.lstrip(".")]))
    return out


def import_graph() -> dict[str, set[str]]:
    """``{module: modules it imports}`` under the rule above."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, tree in TREES.items():
        targets = [t for node in _imports(tree) for t in _targets(module, node)]
        for target in targets + _lazy_targets(module, tree):
            if target != module:
                graph[module].add(target)
                graph.setdefault(target, set())
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_walk_finds_a_cycle_it_is_shown():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    graph = import_graph()
    assert "toolsift.toolindex" in graph["toolsift"]  # the facade's lazy exports count
    assert "toolsift.usage.store" in graph["toolsift.usage"]
    assert "toolsift.kernels.reference" in graph["toolsift.kernels"]
    assert "toolsift.no_match" in graph["toolsift.search.query"]  # "..no_match" from a plain module
    assert "toolsift._core" in graph["toolsift.analyze"]  # the compiled core is a module


def test_no_import_cycle():
    graph = import_graph()
    report = [f"{' <-> '.join(c)}: " + "; ".join(f"{m} -> {sorted(graph[m] & set(c))}" for m in c)
              for c in cycles(graph)]
    assert not report, "import cycles:\n" + "\n".join(report)


def test_modules_that_were_in_cycles_import_alone():
    """Each module once in a cycle imports first, in a fresh interpreter (a circle made
    ``import toolsift.evaluate.ultratool_data`` on its own raise ImportError)."""
    import subprocess
    import sys

    for module in ("toolsift.evaluate.ultratool_data", "toolsift.evaluate.stress", "toolsift.adapters.writers",
                   "toolsift.encoders.models", "toolsift.gateway.http_caps"):
        run = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, f"import {module}:\n{run.stderr[-2000:]}"
