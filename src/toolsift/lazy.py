"""Names a package exports but imports on first use (PEP 562), defined once.

The command line imports several packages only to register their subcommands; their
public names live in modules that pull in the compiled core, Numba or pyarrow. Each such
package maps name -> module and takes its ``__getattr__``/``__dir__`` from here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, where: Mapping[str, str],
                 namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the module ``package`` (its ``__name__``): ``where`` maps
    each exported name to the module that defines it, written as in a relative ``from``
    import from that module (``"store"`` or ``".store"``: a sibling in its package;
    ``"..no_match"``: one level up); a resolved name is cached in ``namespace`` (the
    module's ``globals()``)."""
    anchor = namespace.get("__package__") or package

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module if module.startswith(".") else f".{module}", anchor),
                        name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(where))

    return __getattr__, __dir__
