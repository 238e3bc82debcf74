"""Checks that a value can travel as JSON: nesting depth and UTF-8 encodability.

Used where tools and parameters are built (:mod:`toolsift.schema`), so a value that
could be indexed but never saved or sent is refused where it enters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import SchemaError

__all__ = ["MAX_NESTING", "check_json", "no_surrogates"]

#: Deepest nesting of objects and arrays accepted in a tool's ``source`` or a parameter's
#: ``example``. Real schemas stay far below it; deeper ones are mistakes or attacks, and
#: would fail later (on save, on JSON encoding) instead of here.
MAX_NESTING = 100


def no_surrogates(value: str, where: str, error: type[SchemaError] = SchemaError) -> None:
    """Raise ``error`` naming ``where`` if ``value`` holds a lone surrogate."""
    # A lone surrogate cannot be encoded as UTF-8, so such a tool could be indexed but
    # never saved or sent; refuse it where it enters.
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise error(where, f"contains a lone surrogate (U+{ord(value[exc.start]):04X}) at "
                               f"character {exc.start}; it cannot be encoded as UTF-8") from None


def _json_ok(value: Any) -> bool:
    """Fast pass of :func:`check_json` (no paths built): whether ``value`` is fine."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if isinstance(node, str):
            if not node.isascii() and not _utf8_ok(node):
                return False
        elif isinstance(node, Mapping):
            if depth >= MAX_NESTING:
                return False
            for k, v in node.items():
                if isinstance(k, str):
                    if not k.isascii() and not _utf8_ok(k):
                        return False
                elif not isinstance(k, (int, float, bool)) and k is not None:
                    return False  # JSON cannot encode the key
                if isinstance(v, (str, Mapping, list, tuple)):
                    push((v, depth + 1))
        elif isinstance(node, (list, tuple)):
            if depth >= MAX_NESTING:
                return False
            for v in node:
                if isinstance(v, (str, Mapping, list, tuple)):
                    push((v, depth + 1))
    return True


def _utf8_ok(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_json(value: Any, where: str) -> None:
    """Refuse nesting deeper than :data:`MAX_NESTING` and strings with lone surrogates."""
    if _json_ok(value):
        return
    # Slow pass only to name the place.
    stack: list[tuple[Any, int, str]] = [(value, 0, where)]
    while stack:
        node, depth, at = stack.pop()
        if isinstance(node, str):
            no_surrogates(node, at)
        elif isinstance(node, (Mapping, list, tuple)):
            if depth >= MAX_NESTING:
                raise SchemaError(at, f"nested more than {MAX_NESTING} levels deep")
            if isinstance(node, Mapping):
                for k, v in node.items():
                    if not isinstance(k, (str, int, float, bool)) and k is not None:
                        raise SchemaError(at, f"key {k!r} is a {type(k).__name__}; JSON keys are strings")
                    key = str(k)
                    no_surrogates(key, f"{at}.{key!a}")
                    stack.append((v, depth + 1, f"{at}.{key}"))
            else:
                stack.extend((v, depth + 1, f"{at}[{i}]") for i, v in enumerate(node))
