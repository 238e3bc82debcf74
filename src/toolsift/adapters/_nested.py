"""Object schemas to parameters, with nested objects flattened into sub-parameters.

Retrieval matches a query's arguments against a tool's parameters one by one, so a
role buried inside an object parameter (the ``city`` of an ``address``) must be a
parameter of its own to be found. Every property of an object schema becomes a
:class:`~toolsift.schema.Parameter`, and so does every property of a nested object:

* naming: property ``city`` of object parameter ``address`` is ``address.city``;
  property ``name`` of the objects in array parameter ``stops`` is ``stops[].name``
  (one ``[]`` per array level: ``grid[][].x``). The ``[]`` says "of each element", so
  an array of objects never reads like a single object;
* required: a top-level parameter follows the rule in :mod:`toolsift.adapters._jsonschema`
  (required unless marked optional). A sub-parameter is required only when its parent is
  required **and** the nested object lists it in ``required`` (a nested object without
  ``required`` makes nothing required, as JSON Schema reads it; a draft-3 style
  ``"required": true`` on the property counts too), and it is not marked optional;
* where nested objects are found: ``properties`` of a schema whose type is absent or
  admits an object (``"dict"`` included), ``items`` of a schema whose type is absent or
  admits an array, the alternatives of ``allOf``/``anyOf``/``oneOf`` (the first one to
  define a name wins), and local references (``"$ref": "#/$defs/Address"``) resolved in
  the schema being read;
* bounds: sub-parameters are at most :data:`MAX_DEPTH` names deep (``a.b.c.d``), and one
  schema gives at most :data:`MAX_PARAMETERS` parameters. Top-level properties are always
  kept; sub-parameters are admitted breadth-first (every depth-2 one before any depth-3
  one), in schema order, until the budget is spent, and the rest are dropped. Nothing
  past the bounds is read (so nothing there is validated either), and no input, however
  deep or self-referencing, recurses without bound.

Parameters come out depth-first: each parameter followed by its sub-parameters. The
source schema itself is never modified.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from ..errors import SchemaError
from ..schema import Parameter
from ._common import relocate
from ._jsontypes import declared_types, description, example, is_required, param_type

__all__ = ["MAX_DEPTH", "MAX_PARAMETERS", "object_schema", "read_parameters"]

#: Deepest sub-parameter read: ``a.b.c.d`` (a top-level parameter has depth 1).
MAX_DEPTH = 4
#: Most parameters read from one schema (top-level ones are kept even past it).
MAX_PARAMETERS = 64
# Steps through $ref / items / allOf-anyOf-oneOf between two property levels. Real
# schemas need two or three; the bound stops reference cycles.
_MAX_HOPS = 16
_COMBINATORS = ("allOf", "anyOf", "oneOf")


@dataclass
class _Node:
    param: Parameter
    schema: Mapping[str, Any]
    at: str
    depth: int
    children: list[_Node] = field(default_factory=list)


def object_schema(schema: Any, where: str) -> Mapping[str, Any] | None:
    """``schema`` checked to be an object schema, or ``None`` when it is missing.

    ``"type": "dict"`` and the other object spellings of
    :data:`~toolsift.adapters._jsontypes.TYPE_ALIASES` count as objects.

    Raises:
        SchemaError: If ``schema`` is not a mapping, or its type is unknown or not an
            object type.
    """
    if schema is None:
        return None
    if not isinstance(schema, Mapping):
        raise SchemaError(where, f"expected a JSON Schema object, got {type(schema).__name__}")
    types = declared_types(schema, where)
    if types is not None and "object" not in types and "any" not in types:
        raise SchemaError(
            where, f'expected a schema with "type": "object", got "type": {schema["type"]!r}'
        )
    return schema


def _required_list(obj: Mapping[str, Any], at: str, *, nested: bool) -> list[str] | None:
    required = obj.get("required")
    if required is None or (nested and isinstance(required, bool)):
        # A bool here is draft-3 style, about the nested object itself as a property.
        return None
    if not (isinstance(required, list) and all(isinstance(r, str) for r in required)):
        raise SchemaError(at + ".required", "expected a list of property names")
    return required


def _properties(obj: Mapping[str, Any], at: str) -> Iterator[tuple[Any, Mapping[str, Any], str]]:
    # A generator: properties past the parameter budget are never looked at.
    props = obj.get("properties")
    if props is None:
        return
    if not isinstance(props, Mapping):
        raise SchemaError(
            at + ".properties", f"expected an object of property schemas, got {type(props).__name__}"
        )
    for key, prop in props.items():
        prop_at = f"{at}.properties[{key!r}]"
        if prop is True:
            prop = {}  # JSON Schema ``true``: anything goes
        if not isinstance(prop, Mapping):
            raise SchemaError(prop_at, f"expected a property schema object, got {type(prop).__name__}")
        yield key, prop, prop_at


def _parameter(name: Any, key: Any, prop: Mapping[str, Any], at: str, where: str,
               required: bool) -> Parameter:
    try:
        return Parameter(
            name=name,
            type=param_type(prop, at),
            description=description(prop, at, name=key if isinstance(key, str) else None),
            required=required,
            example=example(prop),
        )
    except SchemaError as exc:
        if exc.where.startswith(where):
            raise
        raise relocate(at, exc) from None


class _Reader:
    """One schema being read: its root (for ``$ref``) and the options."""

    def __init__(self, root: Mapping[str, Any], where: str, nullable_optional: bool) -> None:
        self.root = root
        self.where = where
        self.nullable_optional = nullable_optional

    def resolve(self, schema: Mapping[str, Any], at: str) -> tuple[Mapping[str, Any], str]:
        """``schema`` with local references followed (bounded), and its location."""
        for _ in range(_MAX_HOPS):
            ref = schema.get("$ref")
            if not (isinstance(ref, str) and ref.startswith("#")):
                break
            target = self._pointer(ref[1:])
            if not isinstance(target, Mapping):
                break  # a reference into nowhere is a leaf, as an unresolved one is
            schema, at = target, f"{self.where}{ref[1:].replace('/', '.')}"
        return schema, at

    def leaf(self, prop: Mapping[str, Any], at: str) -> Mapping[str, Any]:
        """``prop`` with a reference to a non-object schema (an enum or a scalar) merged
        in, so the parameter reads ``string`` and ``One of: metric, imperial`` rather than
        the definition's name. The target's ``title`` is left out: generators set it to a
        class name (pydantic's ``"Units"``), which is not a description."""
        if "$ref" not in prop:
            return prop
        target, _ = self.resolve(prop, at)
        if target is prop or "properties" in target or "$ref" in target:
            return prop
        merged = {k: target[k] for k in ("type", "enum", "description") if k in target}
        merged.update((k, v) for k, v in prop.items() if k != "$ref")
        return merged

    def _pointer(self, pointer: str) -> Any:
        node: Any = self.root
        if not pointer:
            return node
        if not pointer.startswith("/"):
            return None
        for raw in pointer[1:].split("/"):
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping):
                node = node.get(part)
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node

    def branches(self, schema: Mapping[str, Any], at: str) -> list[tuple[Mapping[str, Any], str, str]]:
        """The object schemas nested in a parameter's schema: ``(object, suffix, at)``,
        ``suffix`` being ``"[]"`` per array level crossed."""
        out = []
        queue: deque[tuple[Mapping[str, Any], str, str, int]] = deque([(schema, "", at, 0)])
        while queue:
            node, suffix, node_at, hops = queue.popleft()
            node, node_at = self.resolve(node, node_at)
            types = declared_types(node, node_at)
            if "properties" in node and (types is None or "object" in types or "any" in types):
                out.append((node, suffix, node_at))
            if hops >= _MAX_HOPS:
                continue
            items = node.get("items")
            if isinstance(items, Mapping) and (types is None or "array" in types or "any" in types):
                queue.append((items, suffix + "[]", node_at + ".items", hops + 1))
            for key in _COMBINATORS:
                alternatives = node.get(key)
                if isinstance(alternatives, list):
                    queue.extend((alt, suffix, f"{node_at}.{key}[{i}]", hops + 1)
                                 for i, alt in enumerate(alternatives) if isinstance(alt, Mapping))
        return out

    def children(self, node: _Node, used: set[str], budget: int) -> list[_Node]:
        """Up to ``budget`` sub-parameters of ``node``, names not in ``used``."""
        out: list[_Node] = []
        for obj, suffix, obj_at in self.branches(node.schema, node.at):
            required = _required_list(obj, obj_at, nested=True)
            for key, prop, prop_at in _properties(obj, obj_at):
                if len(out) >= budget:
                    return out
                if not isinstance(key, str) or not key.strip():
                    raise SchemaError(prop_at, "a property name must be a non-empty string")
                name = f"{node.param.name}{suffix}.{key}"
                if name in used:
                    continue
                if not node.param.required:
                    req = False
                elif required is None:
                    req = prop.get("required") is True
                else:
                    req = is_required(key, prop, required, self.nullable_optional)
                param = _parameter(name, key, self.leaf(prop, prop_at), prop_at, self.where, req)
                used.add(name)
                out.append(_Node(param, prop, prop_at, node.depth + 1))
        return out


def read_parameters(
    schema: Any, *, where: str, nullable_optional: bool = False,
    max_depth: int = MAX_DEPTH, max_parameters: int = MAX_PARAMETERS,
) -> tuple[Parameter, ...]:
    """Parameters of an object schema, nested objects flattened (see the module docstring).

    Args:
        schema: A JSON Schema of an object type; ``None`` or ``{}`` means no parameters.
        where: Location of the schema for error messages, relative to the tool.
        nullable_optional: Treat a property whose type admits ``"null"`` as optional.
        max_depth: Deepest sub-parameter kept (1 = top-level properties only).
        max_parameters: Most parameters returned, unless the top level alone has more.

    Returns:
        Top-level properties in schema order, each followed by its sub-parameters.

    Raises:
        SchemaError: If the schema is not an object schema, or a property that is read is
            malformed or has an unknown type; the location names the property's path.
    """
    obj = object_schema(schema, where)
    if obj is None:
        return ()
    reader = _Reader(obj, where, nullable_optional)
    required = _required_list(obj, where, nested=False)
    top: list[_Node] = []
    for key, prop, prop_at in _properties(obj, where):
        req = is_required(key, prop, required, nullable_optional) if isinstance(key, str) else True
        param = _parameter(key, key, reader.leaf(prop, prop_at), prop_at, where, req)
        top.append(_Node(param, prop, prop_at, 1))
    used = {n.param.name for n in top}
    budget = max_parameters - len(top)
    queue = deque(top)
    while queue and budget > 0:
        node = queue.popleft()
        if node.depth >= max_depth:
            continue
        node.children = reader.children(node, used, budget)
        budget -= len(node.children)
        queue.extend(node.children)
    out: list[Parameter] = []
    stack = list(reversed(top))
    while stack:
        n = stack.pop()
        out.append(n.param)
        stack.extend(reversed(n.children))
    return tuple(out)
