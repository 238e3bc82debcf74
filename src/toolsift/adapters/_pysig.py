"""Python function stubs to parameters, for benchmarks that document tools as code.

ToolLink documents each tool as a ```python fenced stub whose body is often
mis-indented (``...`` followed by a deeper ``return``), so the whole stub rarely
parses. Only the ``def`` header is parsed; the last ``return`` line is read as text.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

__all__ = ["Signature", "parse_signature", "prose"]

_RETURN = re.compile(r"^\s*return\s+(.+?)\s*$")
# A multi-line header longer than this is not a header we can use.
_MAX_HEADER_LINES = 30


@dataclass(frozen=True, slots=True)
class Signature:
    """What a stub says about a function's interface.

    Attributes:
        name: The function's name.
        params: ``(name, annotation or "", has_default, default source or "")``.
        returns: The return annotation as source text, or ``""``.
        return_expr: The expression of the last ``return`` line, or ``""``.
    """

    name: str
    params: tuple[tuple[str, str, bool, str], ...]
    returns: str = ""
    return_expr: str = ""


def _strip_fences(code: str) -> list[str]:
    return [line for line in code.splitlines() if not line.strip().startswith("```")]


def _header(lines: list[str]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for i, line in enumerate(lines):
        if not line.lstrip().startswith(("def ", "async def ")):
            continue
        chunk: list[str] = []
        for cont in lines[i : i + _MAX_HEADER_LINES]:
            chunk.append(cont.strip())
            try:
                tree = ast.parse("\n".join(chunk) + "\n    pass\n")
            except SyntaxError:
                continue
            node = tree.body[0] if tree.body else None
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node
        return None
    return None


def _params(args: ast.arguments) -> tuple[tuple[str, str, bool, str], ...]:
    positional = [*args.posonlyargs, *args.args]
    # Defaults align with the *last* positional parameters.
    first_default = len(positional) - len(args.defaults)
    out: list[tuple[str, str, bool, str]] = []
    for i, a in enumerate(positional):
        if i == 0 and a.arg in ("self", "cls"):
            continue
        default = args.defaults[i - first_default] if i >= first_default else None
        out.append(_param(a, default))
    if args.vararg:
        out.append(_param(args.vararg, None, has_default=True))
    for a, default in zip(args.kwonlyargs, args.kw_defaults):
        out.append(_param(a, default))
    if args.kwarg:
        out.append(_param(args.kwarg, None, has_default=True))
    return tuple(out)


def _param(
    a: ast.arg, default: ast.expr | None, *, has_default: bool | None = None
) -> tuple[str, str, bool, str]:
    annotation = ast.unparse(a.annotation) if a.annotation is not None else ""
    has = default is not None if has_default is None else has_default
    return (a.arg, annotation, has, ast.unparse(default) if default is not None else "")


def prose(code: str) -> str:
    """The text of ``code`` outside fenced code blocks, whitespace-normalised."""
    kept: list[str] = []
    inside = False
    for line in code.splitlines():
        if line.strip().startswith("```"):
            inside = not inside
            continue
        if not inside and line.strip():
            kept.append(line.strip())
    return " ".join(kept)


def parse_signature(code: str) -> Signature | None:
    """Read the interface of the first function defined in ``code``.

    Args:
        code: A stub such as ``"```python\\ndef f(a, b=1):\\n    ...\\n```"``, or a bare
            parameter list such as ``"(image: str)"``.

    Returns:
        The signature, or ``None`` if no parsable ``def`` header is found.
    """
    lines = _strip_fences(code)
    stripped = "\n".join(lines).strip()
    if stripped.startswith("("):
        lines = [f"def _tool{stripped}:"]
    node = _header(lines)
    if node is None:
        return None
    return_expr = ""
    for line in lines:
        m = _RETURN.match(line)
        if m:
            return_expr = m.group(1)
    returns = ast.unparse(node.returns) if node.returns is not None else ""
    return Signature(
        name=node.name, params=_params(node.args), returns=returns, return_expr=return_expr
    )
