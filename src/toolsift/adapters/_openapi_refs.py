"""Local ``$ref`` resolution and schema normalisation for :mod:`.openapi`.

A reference met again inside its own expansion is left as a bare ``$ref`` (named by its
last segment), so circular schemas terminate; expansion is bounded in depth and size.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from ..errors import SchemaError
from ._jsonschema import type_name

# Expansion deeper than this only feeds nested shapes that retrieval never reads, and
# bounds the work on specs that share one schema thousands of times.
_MAX_DEPTH = 6
# Specs like Stripe's share big schemas everywhere; retrieval needs only the top levels.
_MAX_NODES = 5000


class _Resolver:
    """Local JSON-pointer ``$ref`` resolution against one document."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.doc = doc

    def lookup(self, ref: Any, where: str) -> Any:
        if not isinstance(ref, str):
            raise SchemaError(where + ".$ref", f"expected a string, got {type(ref).__name__}")
        if not ref.startswith("#"):
            raise SchemaError(where + ".$ref", f"external reference {ref[:120]!r} is not supported")
        node: Any = self.doc
        pointer = unquote(ref[1:])
        if pointer and not pointer.startswith("/"):
            raise SchemaError(where + ".$ref", f"malformed reference {ref[:120]!r}")
        for raw in pointer.split("/")[1:] if pointer else []:
            key = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise SchemaError(where + ".$ref", f"cannot resolve {ref[:120]!r}")
        return node

    def deref(self, node: Any, where: str) -> Any:
        """Follow a chain of ``$ref`` objects to a non-reference node."""
        seen: list[str] = []
        while isinstance(node, Mapping) and "$ref" in node:
            ref = node["$ref"]
            if ref in seen:
                raise SchemaError(where + ".$ref", f"reference cycle {' -> '.join(seen + [ref])}"[:300])
            seen.append(ref)
            node = self.lookup(ref, where)
        return node

    def expand(self, schema: Any, where: str) -> Any:
        """A copy of ``schema`` with references resolved, cut at cycles, depth and size."""
        self.budget = _MAX_NODES
        return self._expand(schema, where, (), 0)

    def _expand(self, schema: Any, where: str, stack: tuple[str, ...], depth: int) -> Any:
        self.budget -= 1
        if self.budget < 0:
            depth = _MAX_DEPTH + 1  # out of budget: keep scalars and bare references only
        if isinstance(schema, list):
            return [self._expand(s, where, stack, depth + 1) for s in schema[:200]]
        if not isinstance(schema, Mapping):
            return schema
        if "$ref" in schema:
            ref = schema["$ref"]
            if not isinstance(ref, str) or ref in stack or depth > _MAX_DEPTH:
                # The cut keeps the reference's own scalar siblings (its description).
                cut = {k: v for k, v in schema.items() if isinstance(v, (str, int, float, bool))}
                return {**cut, "$ref": ref if isinstance(ref, str) else "?"}
            target = self.lookup(ref, where)
            if not isinstance(target, Mapping):
                raise SchemaError(where + ".$ref", f"{ref[:120]!r} does not point to a schema object")
            # 3.1 allows siblings next to $ref (a description overriding the target's).
            merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
            out = self._expand(merged, where, stack + (ref,), depth + 1)
            out.setdefault("x-ref-name", ref.rstrip("/").rsplit("/", 1)[-1])
            return out
        if depth > _MAX_DEPTH:
            return {k: v for k, v in schema.items() if not isinstance(v, (Mapping, list))}
        out = {k: self._expand(v, where, stack, depth + 1) for k, v in schema.items()}
        return _merge_all_of(_nullable(out))


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    # OpenAPI 3.0 spells "may be null" as a flag; 3.1 (JSON Schema) as a type list.
    if schema.get("nullable") is True and isinstance(schema.get("type"), str):
        schema["type"] = [schema["type"], "null"]
    return schema


def _merge_all_of(schema: dict[str, Any]) -> dict[str, Any]:
    parts = schema.get("allOf")
    if not isinstance(parts, list) or not all(isinstance(p, Mapping) for p in parts):
        return schema
    props: dict[str, Any] = {}
    required: list[str] = []
    has_required = False
    merged: dict[str, Any] = {}
    for part in [*parts, schema]:
        for k, v in part.items():
            if k == "properties" and isinstance(v, Mapping):
                props.update(v)
            elif k == "required" and isinstance(v, list):
                has_required = True
                required.extend(r for r in v if isinstance(r, str) and r not in required)
            elif k not in ("allOf", "x-ref-name"):
                merged.setdefault(k, v)
    merged.pop("properties", None)
    if props:
        merged["properties"] = props
        merged.setdefault("type", "object")
    if has_required:
        merged["required"] = required
    else:
        merged.pop("required", None)
    return merged


def _type(schema: Mapping[str, Any]) -> str:
    """Type label that names a referenced model (``Pet``) rather than ``object``."""
    ref = schema.get("x-ref-name")
    t = schema.get("type")
    if isinstance(ref, str) and ref and t in (None, "object"):
        return ref
    return type_name(schema)
