"""Check that a test run imported every module of the toolsift package it ran against.

Run the tests with ``TOOLSIFT_IMPORTED_MODULES=DIR`` (tests/conftest.py then writes, per
test process, the toolsift modules that process imported), then::

    python scripts/check_fast_tier_modules.py DIR

Exits 1 naming each module of the imported toolsift package (the installed one in CI's
run) that neither a test process nor a Python the tests started (the CLI, gateway
servers; a child killed by a signal records nothing) imported.
"""

from __future__ import annotations

import sys
from pathlib import Path

def package_modules(root: Path) -> set[str]:
    """Dotted names of the package's Python and extension modules."""
    names = set()
    for path in root.rglob("*"):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        rel = path.relative_to(root.parent)
        if path.suffix == ".py":
            parts = rel.with_suffix("").parts
        elif path.suffix in (".so", ".pyd"):
            parts = (*rel.parts[:-1], path.name.split(".")[0])
        else:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.add(".".join(parts))
    return names


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: check_fast_tier_modules.py DIR", file=sys.stderr)
        return 2
    files = sorted(Path(argv[0]).glob("*.txt"))
    if not files:
        print(f"{argv[0]}: no module lists (run pytest with TOOLSIFT_IMPORTED_MODULES={argv[0]})", file=sys.stderr)
        return 2
    imported = {line for f in files for line in f.read_text().split()}
    import toolsift

    expected = package_modules(Path(toolsift.__file__).resolve().parent)
    missing = sorted(expected - imported)
    tests = sum(not f.name.startswith("sub-") for f in files)
    print(f"{len(expected & imported)} of {len(expected)} toolsift modules imported by the tests "
          f"({tests} test processes, {len(files) - tests} Pythons they started)")
    for name in missing:
        print(f"not imported by any test: {name}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
