"""Checking tool-call arguments against a tool's JSON Schema, in bounded time.

An upstream's schema is untrusted input to the gateway and so are a client's arguments:
together they can ask a backtracking regex engine for exponential work (``pattern:
"^(a+)+$"`` against ``"aaaa...!"``), and Python's ``re`` holds the GIL while it
backtracks, so neither a worker thread nor ``asyncio.wait_for`` could interrupt it. Every
regular expression a schema holds (``pattern``, ``patternProperties``, and the property
screening ``additionalProperties`` does with them) therefore runs on RE2, whose matching
time is linear in the input. Patterns RE2 cannot express (backreferences, lookaround)
are not checked by the gateway at all and are listed in
:attr:`ArgumentValidator.unchecked_patterns`; the upstream server, which validates its
own arguments, stays the authority on them. ``format: uri`` / ``uri-reference`` are
enforced (RFC 3986); other formats stay annotations, as JSON Schema 2020-12 defaults.

:class:`~toolsift.gateway.core.Gateway` runs :meth:`ArgumentValidator.errors` in a worker
thread with a deadline (``GatewayConfig.validation_timeout``), so even a large argument
never stalls the event loop that serves every other session.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from typing import Any

import re2
from jsonschema import Draft202012Validator, FormatChecker, ValidationError
from jsonschema.exceptions import SchemaError as JsonSchemaError
from jsonschema.validators import extend, validator_for
from rfc3986_validator import validate_rfc3986

from ..schema import Tool
from .errors import GatewayError
from .formats import input_schema

__all__ = ["ArgumentValidator", "check_arguments", "check_result_size"]

_REPORTED_ERRORS = 10

log = logging.getLogger(__name__)

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # an unsupported pattern is reported once, by us
_OPTIONS.never_capture = True  # only "does it match" is asked; groups cost time

_FORMATS = FormatChecker(formats=())


@_FORMATS.checks("uri")
def _is_uri(instance: object) -> bool:
    return not isinstance(instance, str) or bool(validate_rfc3986(instance, rule="URI"))


@_FORMATS.checks("uri-reference")
def _is_uri_reference(instance: object) -> bool:
    return not isinstance(instance, str) or bool(validate_rfc3986(instance, rule="URI_reference"))


class _Patterns:
    """RE2 compilations of one schema's patterns; ``None`` marks one RE2 cannot run."""

    def __init__(self) -> None:
        self.compiled: dict[str, Any] = {}

    def get(self, pattern: str) -> Any:
        try:
            return self.compiled[pattern]
        except KeyError:
            pass
        try:
            rx = re2.compile(pattern, options=_OPTIONS)
        except (re2.error, TypeError, ValueError):
            rx = None
        self.compiled[pattern] = rx
        return rx

    def unchecked(self) -> tuple[str, ...]:
        return tuple(p for p, rx in self.compiled.items() if rx is None)


def _walk_patterns(schema: Any) -> Iterator[str]:
    """Every regular expression a schema holds (``pattern`` values, ``patternProperties`` keys)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            pat = node.get("pattern")
            if isinstance(pat, str):
                yield pat
            pp = node.get("patternProperties")
            if isinstance(pp, Mapping):
                yield from (k for k in pp if isinstance(k, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _strip_key(schema: Any, key: str) -> Any:
    """A copy of ``schema`` without ``key`` at any depth."""
    if isinstance(schema, Mapping):
        return {k: _strip_key(v, key) for k, v in schema.items() if k != key}
    if isinstance(schema, list):
        return [_strip_key(v, key) for v in schema]
    return schema


def _validator_class(base: type, patterns: _Patterns) -> type:
    def search(pattern: str, text: str) -> bool | None:
        rx = patterns.get(pattern)
        return None if rx is None else rx.search(text) is not None

    def pattern(validator, patrn, instance, schema):
        if validator.is_type(instance, "string") and search(patrn, instance) is False:
            yield ValidationError(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(validator, pprops, instance, schema):
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in pprops.items():
            for k, v in instance.items():
                if search(patrn, k):
                    yield from validator.descend(v, subschema, path=k, schema_path=patrn)

    def additional_properties(validator, ap, instance, schema):
        if not validator.is_type(instance, "object"):
            return
        props = schema.get("properties", {})
        pats = list(schema.get("patternProperties", {}))
        # An uncheckable pattern counts as matching: the gateway never refuses what it
        # cannot decide; the upstream does.
        extras = [k for k in instance
                  if k not in props and not any(search(p, k) is not False for p in pats)]
        if validator.is_type(ap, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], ap, path=extra)
        elif not ap and extras:
            shown = ", ".join(repr(e) for e in sorted(extras, key=str))
            if pats:
                yield ValidationError(f"{shown} do(es) not match any of the regexes: "
                                      f"{', '.join(repr(p) for p in sorted(pats))}")
            else:
                yield ValidationError(f"Additional properties are not allowed ({shown} unexpected)")

    def unique_items(validator, unique, instance, schema):
        # jsonschema compares unsortable items pairwise (quadratic in a client's array).
        if unique and validator.is_type(instance, "array"):
            seen: set[Any] = set()
            for item in instance:
                key = _frozen(item)
                if key in seen:
                    yield ValidationError(f"{instance!r} has non-unique elements"[:300])
                    return
                seen.add(key)

    return extend(base, {"pattern": pattern, "patternProperties": pattern_properties,
                         "additionalProperties": additional_properties, "uniqueItems": unique_items})


def _frozen(value: Any) -> Any:
    """A hashable key equal for JSON-equal values (1 == 1.0, but true != 1)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", value)
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, Mapping):
        return ("o", frozenset((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("a", tuple(_frozen(v) for v in value))
    return ("x", repr(value))


class ArgumentValidator:
    """Validates arguments against one tool's input schema with linear-time regexes.

    Args:
        schema: The tool's input JSON Schema (its ``$schema`` picks the draft; 2020-12
            otherwise).

    Raises:
        jsonschema.exceptions.SchemaError: The schema itself is not valid JSON Schema.

    Attributes:
        unchecked_patterns: Patterns of the schema RE2 cannot run (backreferences,
            lookaround); arguments are not checked against them here.
    """

    def __init__(self, schema: Mapping[str, Any]) -> None:
        base = validator_for(schema, default=Draft202012Validator)
        base.check_schema(schema)
        self._patterns = _Patterns()
        for p in _walk_patterns(schema):
            self._patterns.get(p)
        if "unevaluatedProperties" in _keys(schema) and "patternProperties" in _keys(schema):
            # jsonschema's unevaluatedProperties re-runs patternProperties with Python's
            # backtracking re; rather than let it, the gateway leaves that keyword to the
            # upstream.
            log.warning("schema uses unevaluatedProperties with patternProperties; the gateway "
                        "does not check unevaluatedProperties for it")
            schema = _strip_key(copy.deepcopy(dict(schema)), "unevaluatedProperties")
        self._validator = _validator_class(base, self._patterns)(schema, format_checker=_FORMATS)
        self.unchecked_patterns: tuple[str, ...] = self._patterns.unchecked()
        if self.unchecked_patterns:
            log.warning("the gateway cannot check pattern(s) %s in linear time; the upstream validates them",
                        ", ".join(map(repr, self.unchecked_patterns)))

    def errors(self, arguments: Any) -> list[ValidationError]:
        """Every validation error of ``arguments`` (empty when they are valid)."""
        return list(self._validator.iter_errors(arguments))


def _keys(schema: Any) -> set[str]:
    out: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            out.update(k for k in node if isinstance(k, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


# ---------------------------------------------------------------- gateway checks
def _validator(cache: MutableMapping[str, ArgumentValidator], tool: Tool) -> ArgumentValidator:
    validator = cache.get(tool.id)
    if validator is None:
        try:
            validator = ArgumentValidator(input_schema(tool))
        except JsonSchemaError as exc:
            raise GatewayError("upstream_error", f"the input schema of {tool.name!r} is not valid "
                               f"JSON Schema: {exc.message}", tool=tool.name) from None
        # Concurrent fills build equal validators; the last one wins, no lock needed.
        cache[tool.id] = validator
    return validator


def _errors(cache: MutableMapping[str, ArgumentValidator], tool: Tool, args: Any) -> list[ValidationError]:
    validator = _validator(cache, tool)
    try:
        return validator.errors(args)
    except Exception as exc:  # e.g. an unresolvable remote $ref in the tool's schema  # noqa: BLE001
        raise GatewayError("upstream_error", f"cannot validate arguments for {tool.name!r}: {exc}",
                           tool=tool.name) from None


async def check_arguments(cache: MutableMapping[str, ArgumentValidator], tool: Tool, args: Mapping[str, Any],
                          *, timeout: float) -> None:
    """Validate ``args`` for ``tool`` in a worker thread, waiting at most ``timeout`` seconds.

    Args:
        cache: Validators by tool id, filled on first use (one per index state).
        tool: The tool being called.
        args: Its arguments.
        timeout: Seconds to wait for the check.

    Raises:
        GatewayError: ``invalid_params`` (with ``path``, ``errors`` and the tool's
            ``input_schema``; or ``reason: "validation_timeout"``), or ``upstream_error``
            for a schema that is not valid JSON Schema.
    """
    # Off the event loop and under a deadline: a large argument must never stall the
    # sessions this loop serves.
    try:
        raw = await asyncio.wait_for(asyncio.to_thread(_errors, cache, tool, args), timeout)
    except TimeoutError:
        raise GatewayError("invalid_params", f"the arguments for {tool.name!r} could not be checked "
                           f"within {timeout:g} s; send smaller arguments", tool=tool.name,
                           reason="validation_timeout") from None
    if not raw:
        return
    errors: dict[str, str] = {}
    for err in raw:
        parts = list(err.absolute_path)
        if err.validator == "required" and isinstance(err.instance, Mapping):
            # Point at the missing property itself, not at its parent object.
            for prop in err.validator_value:
                if prop not in err.instance:
                    errors.setdefault(json_path([*parts, prop]), "required property is missing")
        else:
            errors.setdefault(json_path(parts), err.message)
    listed = [{"path": p, "message": m} for p, m in sorted(errors.items())[:_REPORTED_ERRORS]]
    first = listed[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    raise GatewayError(
        "invalid_params",
        f"invalid arguments for {tool.name!r}: {first['path']}: {first['message']}{more}",
        tool=tool.name, path=first["path"], errors=listed, input_schema=input_schema(tool),
    )


def check_result_size(tool: Tool, result: Any, limit: int) -> None:
    """Refuse a result larger than ``limit`` bytes as UTF-8 JSON (``max_result_bytes``).

    Raises:
        GatewayError: ``result_too_large`` with ``bytes`` and ``limit_bytes``.
    """
    text = json.dumps(result, ensure_ascii=False, default=str)
    if len(text) * 4 <= limit:  # UTF-8 needs at most 4 bytes a character
        return
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise GatewayError("result_too_large", f"{tool.name!r} returned {size:,} bytes; the gateway passes "
                           f"on at most {limit:,} (max_result_bytes); ask for less (a filter, a page, "
                           "fewer fields)", tool=tool.name, bytes=size, limit_bytes=limit)


def json_path(parts: Sequence[Any]) -> str:
    """A JSONPath like ``$.items[2].name`` for a jsonschema error path."""
    out = "$"
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif isinstance(p, str) and p.isidentifier():
            out += f".{p}"
        else:
            out += f"[{json.dumps(p)}]"
    return out
