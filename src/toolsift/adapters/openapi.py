"""OpenAPI 3.0 / 3.1 documents (JSON or YAML) to toolsift tools: one tool per operation.

Mapping of an operation under ``paths[path][method]``:

* ``id``: the ``operationId``, or ``"METHOD /path"``; ``name``: the ``operationId``, or
  a snake_case name made from method and path (``GET /pets/{id}`` → ``get_pets_by_id``).
* ``description``: ``summary`` and ``description`` joined.
* ``parameters``: path, query and header parameters (path-item parameters merged with
  the operation's, the operation winning), then the top-level properties of the JSON (or
  form) request body. Path parameters are always required; query and header parameters
  follow their ``required`` flag, whose documented OpenAPI default is ``false``. Body
  properties follow the body schema's ``required`` list (no list: all required, the rule
  of :mod:`toolsift.adapters._jsonschema`) and become optional together when the body is
  marked ``"required": false``. ``Accept``, ``Content-Type`` and ``Authorization``
  headers are ignored, as OpenAPI itself specifies.
* ``response``: the first 2xx response's description and JSON schema, as a sentence.
* ``examples``: natural-language intents only (``x-examples`` / ``x-toolsift-examples``
  on the operation, ``summary`` of Example objects, sentence-like string example values);
  nothing is invented.
* ``tags``: the operation's ``tags``, plus ``"deprecated"``.

Local ``$ref`` (``#/components/...``) are resolved; a reference met again inside its own
expansion is left as a bare ``$ref`` (named by its last segment), so circular schemas
terminate. External references are reported as errors.

Reference resolution lives in :mod:`._openapi_refs` and the mapping of one operation in
:mod:`._openapi_operation`; this module walks the document.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..errors import CatalogFormatError, SchemaError
from ..schema import Tool
from ._common import parse_json_text, read_bytes
from ._openapi_operation import _mapping, _Operation
from ._openapi_refs import _Resolver
from ._yaml import load_yaml

__all__ = ["from_openapi", "read_openapi", "load_openapi", "openapi_tools"]

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _check_document(spec: Any) -> Mapping[str, Any]:
    if not isinstance(spec, Mapping):
        raise CatalogFormatError(f"openapi: expected an OpenAPI document object, got {type(spec).__name__}")
    if "swagger" in spec:
        raise CatalogFormatError("openapi: Swagger 2.0 documents are not supported; convert to OpenAPI 3")
    version = spec.get("openapi")
    if not isinstance(version, str) or not version.startswith("3."):
        raise CatalogFormatError(
            f"openapi: expected an 'openapi' version field '3.x', got {str(version)[:40]!r}"
        )
    return spec


def openapi_tools(spec: Any) -> list[Tool]:
    """One tool per operation of an OpenAPI 3.0/3.1 document.

    Args:
        spec: The parsed document (``{"openapi": "3.x", "paths": {...}, ...}``).

    Returns:
        Tools in document order (paths, then methods in spec order).

    Raises:
        CatalogFormatError: If ``spec`` is not an OpenAPI 3 document.
        SchemaError: Naming the place, e.g.
            ``"paths['/pets/{id}'].get.parameters[0].name: ..."``, for a malformed
            operation, an unresolvable ``$ref`` or two operations with the same id.
    """
    doc = _check_document(spec)
    resolver = _Resolver(doc)
    paths = doc.get("paths")
    if paths is None:
        return []
    paths = _mapping(paths, "paths")
    tools: list[Tool] = []
    seen: dict[str, str] = {}
    for path, item in paths.items():
        pw = f"paths[{path!r}]"
        if not isinstance(path, str):
            raise SchemaError(pw, "path keys must be strings")
        item = _mapping(resolver.deref(item, pw), pw, "a path item object")
        shared = item.get("parameters", [])
        if not isinstance(shared, list):
            raise SchemaError(pw + ".parameters", f"expected a list, got {type(shared).__name__}")
        for method, op in item.items():
            if not isinstance(method, str) or method.lower() not in _METHODS:
                continue
            where = f"{pw}.{method}"
            op = _mapping(op, where, "an operation object")
            operation = _Operation(resolver, path, method.lower(), op, shared, where)
            # Shared parameters are located on the path item, not the operation.
            operation.shared = shared
            tool = _relabel_shared(operation, pw)
            if tool.id in seen:
                raise SchemaError(where, f"duplicate operation id {tool.id!r} (also at {seen[tool.id]})")
            seen[tool.id] = where
            tools.append(tool)
    return tools


def _relabel_shared(operation: _Operation, path_where: str) -> Tool:
    try:
        return operation.tool()
    except SchemaError as exc:
        if exc.where.startswith("<path-item>"):
            raise SchemaError(path_where + exc.where[len("<path-item>"):],
                              str(exc)[len(exc.where) + 2:]) from None
        raise


def from_openapi(payload: Any) -> list[Tool]:
    """Catalogue reader for :func:`toolsift.adapters.load_catalog` (``format="openapi"``).

    Args:
        payload: A parsed OpenAPI 3 document.

    Returns:
        One tool per operation.

    Raises:
        CatalogFormatError: If ``payload`` is not an OpenAPI 3 document.
        SchemaError: See :func:`openapi_tools`.
    """
    return openapi_tools(payload)


def read_openapi(path: str | os.PathLike[str]) -> Any:
    """Parse an OpenAPI file, JSON or YAML (chosen by extension, else by content).

    Args:
        path: The ``.json``, ``.yaml`` or ``.yml`` file.

    Returns:
        The parsed document.

    Raises:
        CatalogFormatError: Naming the file, and the line and column of a syntax error.
    """
    p, raw = read_bytes(path)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CatalogFormatError(f"{p}: not UTF-8 text (invalid byte at offset {exc.start})") from None
    if p.suffix.lower() == ".json" or (p.suffix.lower() not in (".yaml", ".yml")
                                       and text.lstrip().startswith("{")):
        return parse_json_text(text, p)
    return load_yaml(text, str(p))


def load_openapi(source: str | os.PathLike[str] | Mapping[str, Any]) -> list[Tool]:
    """Tools from an OpenAPI file or an already-parsed document.

    Args:
        source: Path to a JSON/YAML spec, or the parsed document.

    Returns:
        One tool per operation.

    Raises:
        CatalogFormatError: If the file cannot be read or is not OpenAPI 3.
        SchemaError: See :func:`openapi_tools`; for files the message starts with the
            file name.
    """
    if isinstance(source, Mapping):
        return openapi_tools(source)
    label = os.fspath(source)
    spec = read_openapi(source)
    try:
        return openapi_tools(spec)
    except CatalogFormatError as exc:
        raise CatalogFormatError(f"{label}: {exc}") from None
    except SchemaError as exc:
        raise type(exc)(label, str(exc)) from None
