"""Python callables and modules to toolsift tools.

The signature gives the parameters (a default makes a parameter optional, and its value is
kept in ``source["defaults"]``, never as an example; ``*args`` and
``**kwargs`` are not named roles and are left out), type hints give rendered type names
(``list[str]``, ``int | None``), and the docstring, parsed by ``docstring-parser``
(Google, NumPy, reST or Epydoc style, detected automatically), gives the description,
the per-parameter descriptions and, from its Returns section, the response.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Any

from ..errors import SchemaError
from ..schema import Parameter, Tool
from ._common import located

__all__ = ["from_callable", "from_module", "render_type"]

_SCALARS = (str, int, float, bool, type(None))
_SKIPPED_KINDS = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def render_type(hint: Any) -> str:
    """A readable name for a type hint.

    Args:
        hint: An annotation object, a string annotation, or ``inspect.Parameter.empty``.

    Returns:
        e.g. ``"int"``, ``"list[str]"``, ``"str | None"``, ``"Literal['a', 'b']"``, or
        ``"any"`` when there is no hint.
    """
    if hint is inspect.Parameter.empty:
        return "any"
    if hint is typing.Any:
        return "Any"
    if hint is None or hint is type(None):
        return "None"
    if isinstance(hint, str):
        # Unresolvable postponed annotations may keep their source quotes: "'Foo'".
        return hint.strip().strip("'\"") or "any"
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        return " | ".join(render_type(a) for a in args)
    if origin is typing.Literal:
        return f"Literal[{', '.join(repr(a) for a in args)}]"
    if origin is typing.Annotated:
        return render_type(args[0])
    if origin is not None:
        base = getattr(origin, "__name__", None) or str(origin).replace("typing.", "")
        if args:
            return f"{base}[{', '.join('...' if a is Ellipsis else render_type(a) for a in args)}]"
        return base
    if isinstance(hint, type):
        return hint.__name__
    return str(hint).replace("typing.", "")


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:  # noqa: BLE001 - unresolvable forward refs: fall back to raw annotations
        return dict(getattr(fn, "__annotations__", None) or {})


def _parse_doc(doc: str) -> Any:
    import docstring_parser  # optional dependency: only Python callables need it

    try:
        return docstring_parser.parse(doc)
    except Exception:  # noqa: BLE001 - a docstring is free text; unparsable means "prose only"
        return None


def _json_default(default: Any) -> Any:
    return default if isinstance(default, _SCALARS) else None


def from_callable(fn: Callable[..., Any], *, name: str | None = None) -> Tool:
    """A tool describing one Python function or method.

    Args:
        fn: The callable; for a class, its ``__init__`` signature is read.
        name: Tool name and id; defaults to ``fn.__name__``.

    Returns:
        The tool. ``source`` records the qualified name and signature.

    Raises:
        SchemaError: If ``fn`` is not callable or has no readable signature (some
            builtins), naming the callable.
    """
    label = name or getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)[:80]
    where = f"callable {label!r}"
    if not callable(fn):
        raise SchemaError(where, f"expected a callable, got {type(fn).__name__}")
    try:
        try:
            # Resolves postponed annotations so the recorded signature reads like code.
            sig = inspect.signature(fn, eval_str=True)
        except Exception:  # noqa: BLE001 - unresolvable names: keep them as written
            sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise SchemaError(where, f"has no readable signature ({exc})") from None
    hints = _hints(fn.__init__ if inspect.isclass(fn) else fn)
    raw_doc = inspect.getdoc(fn) or ""
    if not isinstance(raw_doc, str):
        raw_doc = ""
    doc = _parse_doc(raw_doc) if raw_doc.strip() else None
    param_docs: dict[str, Any] = {p.arg_name: p for p in doc.params} if doc else {}
    params: list[Parameter] = []
    # A default is what the function does when the argument is left out, not an example
    # of a value a caller passes (``currency="EUR"`` says nothing about other calls):
    # JSON-scalar defaults are kept in ``source["defaults"]``, never as ``example``.
    defaults: dict[str, Any] = {}
    with located(where):
        for p in sig.parameters.values():
            if p.kind in _SKIPPED_KINDS:
                continue
            pdoc = param_docs.get(p.name)
            hint = hints.get(p.name, p.annotation)
            ptype = render_type(hint)
            if ptype == "any" and pdoc is not None and pdoc.type_name:
                ptype = pdoc.type_name
            has_default = p.default is not inspect.Parameter.empty
            if has_default and isinstance(p.default, _SCALARS):
                defaults[p.name] = _json_default(p.default)
            params.append(Parameter(
                name=p.name,
                type=ptype,
                description=(pdoc.description or "").strip() if pdoc else "",
                required=not has_default and not (pdoc is not None and pdoc.is_optional is True),
            ))
        tool_name = name or getattr(fn, "__name__", None) or type(fn).__name__
        return Tool(
            id=tool_name,
            name=tool_name,
            description=_description(doc, raw_doc),
            parameters=tuple(params),
            response=_response(doc, hints.get("return", sig.return_annotation)),
            source={
                "python": f"{getattr(fn, '__module__', '')}.{label}".lstrip("."),
                "signature": str(sig),
                "defaults": defaults,
            },
        )


def _description(doc: Any, raw: str) -> str:
    if doc is None:
        return raw.strip()
    parts = [doc.short_description or "", doc.long_description or ""]
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


def _response(doc: Any, hint: Any) -> str:
    returns = doc.returns if doc is not None else None
    rtype = render_type(hint)
    if rtype in ("any", "Any", "None") and returns is not None and returns.type_name:
        rtype = returns.type_name
    desc = (returns.description or "").strip() if returns is not None else ""
    if rtype in ("any", "None") and not desc:
        return ""
    head = f"Returns {rtype}" if rtype not in ("any", "None") else "Returns"
    return f"{head}: {desc}" if desc else f"{head}."


def from_module(module: types.ModuleType, *, include_private: bool = False) -> list[Tool]:
    """Tools for the functions a module defines.

    Functions listed in ``__all__`` are taken when the module has one; otherwise every
    function defined in the module itself (not imported into it), skipping names that
    start with ``_`` unless ``include_private`` is set.

    Args:
        module: The imported module.
        include_private: Also include ``_private`` functions.

    Returns:
        Tools in definition order.

    Raises:
        SchemaError: If ``module`` is not a module, or a function cannot be described.
    """
    if not isinstance(module, types.ModuleType):
        raise SchemaError("module", f"expected a module, got {type(module).__name__}")
    exported = getattr(module, "__all__", None)
    tools: list[Tool] = []
    for attr, obj in list(vars(module).items()):
        if not inspect.isfunction(obj):
            continue
        if exported is not None:
            if attr not in exported:
                continue
        elif obj.__module__ != module.__name__ or (attr.startswith("_") and not include_private):
            continue
        tools.append(from_callable(obj, name=attr))
    return tools
