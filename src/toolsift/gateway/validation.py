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

import copy
import logging
from collections.abc import Iterator, Mapping
from typing import Any

import re2
from jsonschema import Draft202012Validator, FormatChecker, ValidationError
from jsonschema.validators import extend, validator_for
from rfc3986_validator import validate_rfc3986

__all__ = ["ArgumentValidator"]

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
