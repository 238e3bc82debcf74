"""The one way configuration is validated.

Every configuration class of toolsift is either a frozen dataclass whose fields declare
their types and limits (``Annotated[int, Strict(ge=1)]``) and whose ``__post_init__``
calls :func:`check_fields`, or (the gateway's, read from files) a pydantic model
(:class:`toolsift.gateway.config.ConfigModel`). Both are checked by pydantic and report
a :class:`~toolsift.errors.ConfigError` through :func:`validation_message`, one line
naming each bad key (``learn.min_voters: Input should be greater than or equal to 1,
got 0``). Rules that tie several fields together stay in ``__post_init__``.

This module needs only pydantic, and imports it with the first check: configs of packages
that must not load the compiled core (:mod:`toolsift.usage`) use it too. Values toolsift
wrote or defines itself are made under :func:`trusted` -- a saved index's config (its
manifest's checksum verified) and module constants such as the default analyzer (checked
by ``tests/test_config_validation.py``) -- so importing toolsift and loading an index
import no pydantic (~70 ms of CPU) and build no validator; the rules that tie several
fields together still run.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Iterator, Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any, cast

from .errors import ConfigError

if TYPE_CHECKING:
    from pydantic import TypeAdapter, ValidationError

__all__ = ["Strict", "check_fields", "trusted", "validation_message"]

# Types and limits of configuration fields are declared on the fields (Annotated with
# pydantic constraints) and checked by pydantic, the one schema library of the package;
# rules across fields stay in __post_init__.

def _where(prefix: str, loc: tuple[Any, ...]) -> str:
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif "function-" in str(part) or "[" in str(part):  # validator names pydantic puts in loc
            continue
        else:
            out += f".{part}" if out else str(part)
    return out or "config"


def validation_message(exc: ValidationError, prefix: str) -> str:
    """pydantic's errors as one line, each problem naming its key under ``prefix``
    (``gateway.routing[0].pattern``, ``config.candidates``)."""
    lines = []
    for err in exc.errors(include_url=False):
        where = _where(prefix, tuple(err.get("loc", ())))
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if err.get("type") == "extra_forbidden":
            lines.append(f"{where}: unknown key")
            continue
        got = err.get("input")
        # Our own checks ("value_error") already say what is wrong with the value.
        shown = "" if err.get("type") in ("missing", "value_error") or isinstance(got, (Mapping, list)) \
            else f", got {got!r}"[:120]
        lines.append(f"{where}: {msg}{shown}")
    return "; ".join(lines)


_CHECKING: contextvars.ContextVar[bool] = contextvars.ContextVar("toolsift_config_checking", default=False)


_TRUSTED: contextvars.ContextVar[bool] = contextvars.ContextVar("toolsift_config_trusted", default=False)


@contextlib.contextmanager
def trusted() -> Iterator[None]:
    """Construct configs inside the block without checking their fields' types and
    limits: only for values toolsift wrote or defines itself (see the module docstring)."""
    token = _TRUSTED.set(True)
    try:
        yield
    finally:
        _TRUSTED.reset(token)


@functools.cache
def _adapter(cls: Any) -> TypeAdapter:
    from pydantic import TypeAdapter

    return TypeAdapter(cls)


def check_fields(obj: Any, where: str) -> None:
    """Validate a config dataclass's fields against their annotated types and limits.

    Raises:
        ConfigError: Naming each bad field as ``where.field``.
    """
    if _CHECKING.get() or _TRUSTED.get():  # the copy pydantic builds while validating; or trusted()
        return
    from pydantic import ValidationError

    token = _CHECKING.set(True)
    try:
        # Fields with init=False are derived state (caches, compiled helpers), not settings.
        _adapter(type(obj)).validate_python(  # type: ignore[arg-type]  # a class is hashable
            {f.name: getattr(obj, f.name) for f in fields(obj) if f.init})
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, where)) from None
    finally:
        _CHECKING.reset(token)


def Strict(**constraints: Any) -> Any:  # capitalised: it reads as a type annotation
    """``pydantic.Field(strict=True, **constraints)`` for a field's ``Annotated[...]``.
    Annotations are text (``from __future__ import annotations``) that pydantic evaluates
    when a class's validator is first built, so pydantic loads only then."""
    from pydantic import Field

    return Field(strict=True, **constraints)


class InstanceOf:
    """``pydantic.InstanceOf`` in a field annotation, resolved (and pydantic imported)
    when the annotation is evaluated, as :func:`Strict` is."""

    def __class_getitem__(cls, item: Any) -> Any:
        from pydantic import InstanceOf as _InstanceOf

        # Type checkers see InstanceOf as an alias of Annotated; at run time it is a class.
        return cast(Any, _InstanceOf)[item]
