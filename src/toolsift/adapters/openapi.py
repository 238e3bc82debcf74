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
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from ..errors import CatalogFormatError, SchemaError
from ..schema import Parameter, Tool
from ._common import located, parse_json_text, read_bytes, text_or_empty
from ._yaml import load_yaml
from ._jsonschema import describe_output, parameters_from_schema, type_name

__all__ = ["from_openapi", "read_openapi", "load_openapi", "openapi_tools"]

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_IN = ("path", "query", "header")
_IGNORED_HEADERS = {"accept", "content-type", "authorization"}
# Expansion deeper than this only feeds nested shapes that retrieval never reads, and
# bounds the work on specs that share one schema thousands of times.
_MAX_DEPTH = 6
# Specs like Stripe's share big schemas everywhere; retrieval needs only the top levels.
_MAX_NODES = 5000
_EXAMPLE_KEYS = ("x-examples", "x-toolsift-examples")


# ------------------------------------------------------------------ $ref handling


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


# ------------------------------------------------------------------ small helpers


def _name_from(method: str, path: str) -> str:
    parts = [method]
    for seg in path.strip("/").split("/"):
        m = re.fullmatch(r"\{(.+)\}", seg)
        parts.append(f"by_{m.group(1)}" if m else seg)
    name = re.sub(r"[^0-9A-Za-z]+", "_", "_".join(parts))
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    return re.sub(r"_+", "_", name).strip("_") or method


def _sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text.endswith((".", "!", "?", ":")) else text + "."


def _natural(text: Any, *, min_words: int = 3) -> bool:
    """Whether ``text`` reads as a sentence a user could say, not a value or identifier."""
    if not isinstance(text, str) or len(text) > 500:
        return False
    words = text.split()
    if len(words) < min_words or re.search(r"[{}\[\]<>]|://|^\s*[-+]?\d", text):
        return False
    letters = sum(c.isalpha() or c.isspace() for c in text)
    return letters >= 0.8 * len(text)


def _mapping(value: Any, where: str, what: str = "an object") -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SchemaError(where, f"expected {what}, got {type(value).__name__}")
    return value


def _example_summaries(examples: Any) -> list[str]:
    """Natural-language ``summary`` lines of an OpenAPI ``examples`` map."""
    out: list[str] = []
    if isinstance(examples, Mapping):
        for ex in examples.values():
            if isinstance(ex, Mapping) and _natural(ex.get("summary")):
                out.append(ex["summary"].strip())
    return out


def _param_example(param: Mapping[str, Any], schema: Mapping[str, Any]) -> Any:
    if "example" in param:
        return param["example"]
    examples = param.get("examples")
    if isinstance(examples, Mapping):
        for ex in examples.values():
            if isinstance(ex, Mapping) and "value" in ex:
                return ex["value"]
    for key in ("examples", "example", "default"):
        value = schema.get(key)
        if key == "examples" and isinstance(value, list):
            if value:
                return value[0]
            continue
        if value is not None:
            return value
    return None


# ------------------------------------------------------------------ one operation


class _Operation:
    def __init__(self, resolver: _Resolver, path: str, method: str, op: Mapping[str, Any],
                 shared: list[Any], where: str) -> None:
        self.r = resolver
        self.path = path
        self.method = method
        self.op = op
        self.shared = shared
        self.where = where
        self.intents: list[str] = []

    def parameters(self) -> list[Parameter]:
        merged: dict[tuple[str, str], tuple[Mapping[str, Any], str]] = {}
        own = self.op.get("parameters", [])
        if not isinstance(own, list):
            raise SchemaError(f"{self.where}.parameters", f"expected a list, got {type(own).__name__}")
        for prefix, items in (("<path-item>", self.shared), ("", own)):
            for i, raw in enumerate(items):
                at = f"{prefix or self.where}.parameters[{i}]"
                p = _mapping(self.r.deref(raw, at), at, "a parameter object")
                name, loc = p.get("name"), p.get("in")
                if not isinstance(name, str) or not name.strip():
                    raise SchemaError(at + ".name", "a parameter needs a non-empty string name")
                if not isinstance(loc, str):
                    raise SchemaError(at + ".in", "expected one of path, query, header, cookie")
                merged[(name, loc)] = (p, at)
        out: list[Parameter] = []
        for (name, loc), (p, at) in merged.items():
            if loc not in _IN or (loc == "header" and name.lower() in _IGNORED_HEADERS):
                continue
            out.append(self._parameter(name, loc, p, at))
        return out

    def _parameter(self, name: str, loc: str, p: Mapping[str, Any], at: str) -> Parameter:
        schema = p.get("schema")
        if schema is None and isinstance(p.get("content"), Mapping):
            # A parameter may carry its schema inside a one-entry ``content`` map instead.
            media = next(iter(p["content"].values()), None)
            schema = media.get("schema") if isinstance(media, Mapping) else None
        schema = self.r.expand(schema or {}, at + ".schema")
        if not isinstance(schema, Mapping):
            raise SchemaError(at + ".schema", f"expected a schema object, got {type(schema).__name__}")
        desc = p.get("description")
        if desc is None:
            desc = schema.get("description") if isinstance(schema.get("description"), str) else ""
        desc = text_or_empty(desc, at + ".description")
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            desc = f"{desc.rstrip()} One of: {', '.join(map(str, enum[:20]))}.".strip()
        required = p.get("required")
        if required is not None and not isinstance(required, bool):
            raise SchemaError(at + ".required", f"expected a bool, got {type(required).__name__}")
        example = _param_example(p, schema)
        self.intents += _example_summaries(p.get("examples"))
        if _natural(example, min_words=4):
            self.intents.append(example.strip())
        with located(at):
            return Parameter(
                name=name,
                type=_type(schema),
                description=desc,
                required=True if loc == "path" else required is True,
                example=example,
            )

    def body(self) -> list[Parameter]:
        at = f"{self.where}.requestBody"
        if "requestBody" not in self.op:
            return []
        body = _mapping(self.r.deref(self.op["requestBody"], at), at)
        content = body.get("content")
        if content is None:
            return []
        content = _mapping(content, at + ".content")
        media_type = _pick_media(content)
        if media_type is None:
            return []
        mat = f"{at}.content[{media_type!r}]"
        media = _mapping(content[media_type], mat)
        self.intents += _example_summaries(media.get("examples"))
        schema = self.r.expand(media.get("schema") or {}, mat + ".schema")
        schema = _mapping(schema, mat + ".schema", "a schema object")
        optional_body = body.get("required") is False
        body_desc = text_or_empty(body.get("description"), at + ".description")
        if "properties" not in schema and schema.get("type") not in (None, "object"):
            # A bare array or string body is one argument.
            return [Parameter(name="body", type=_type(schema),
                              description=body_desc or text_or_empty(schema.get("description"),
                                                                     mat + ".schema.description"),
                              required=not optional_body)]
        props = schema.get("properties")
        params = parameters_from_schema(
            {"type": "object", **{k: v for k, v in schema.items() if k != "type"}},
            where=mat + ".schema",
        )
        out = []
        for p in params:
            prop = props.get(p.name) if isinstance(props, Mapping) else None
            ptype = _type(prop) if isinstance(prop, Mapping) else p.type
            out.append(Parameter(name=p.name, type=ptype, description=p.description,
                                 required=p.required and not optional_body, example=p.example))
        return out

    def response(self) -> str:
        responses = self.op.get("responses")
        if responses is None:
            return ""
        at = f"{self.where}.responses"
        responses = _mapping(responses, at)
        codes = sorted(str(c) for c in responses if re.fullmatch(r"2(\d\d|XX)", str(c)))
        if not codes:
            return ""
        code = codes[0]
        key = next(c for c in responses if str(c) == code)
        rat = f"{at}[{code!r}]"
        resp = _mapping(self.r.deref(responses[key], rat), rat)
        desc = _sentence(text_or_empty(resp.get("description"), rat + ".description"))
        content = resp.get("content")
        schema_text = ""
        if isinstance(content, Mapping) and content:
            media_type = _pick_media(content)
            media = content.get(media_type) if media_type else None
            if isinstance(media, Mapping) and media.get("schema") is not None:
                sat = f"{rat}.content[{media_type!r}].schema"
                schema_text = describe_output(self.r.expand(media["schema"], sat), where=sat)
        if schema_text.startswith(desc.rstrip(".")):
            desc = ""
        return " ".join(p for p in (desc, schema_text) if p)

    def tool(self) -> Tool:
        op_id = self.op.get("operationId")
        if op_id is not None and (not isinstance(op_id, str) or not op_id.strip()):
            raise SchemaError(f"{self.where}.operationId", "expected a non-empty string")
        summary = text_or_empty(self.op.get("summary"), f"{self.where}.summary")
        detail = text_or_empty(self.op.get("description"), f"{self.where}.description")
        description = " ".join(p for p in (_sentence(summary), detail.strip()) if p)
        params = self.parameters()
        taken = {p.name for p in params}
        top, renamed = "", False
        for p in self.body():
            # A body field named like a query parameter stays distinct as "body.<name>",
            # and so do its sub-parameters (they follow it), keeping them under it.
            if not (top and p.name.startswith((top + ".", top + "[]"))):
                top, renamed = p.name, p.name in taken
            if renamed or p.name in taken:
                p = Parameter(name=f"body.{p.name}", type=p.type, description=p.description,
                              required=p.required, example=p.example)
            taken.add(p.name)
            params.append(p)
        response = self.response()
        tags = self.op.get("tags") or []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise SchemaError(f"{self.where}.tags", "expected a list of strings")
        if self.op.get("deprecated") is True:
            tags = [*tags, "deprecated"]
        for key in _EXAMPLE_KEYS:
            raw = self.op.get(key)
            if raw is None:
                continue
            if not isinstance(raw, list):
                raise SchemaError(f"{self.where}.{key}", "expected a list of strings")
            self.intents += [x.strip() for x in raw if _natural(x, min_words=2)]
        with located(self.where):
            return Tool(
                id=op_id or f"{self.method.upper()} {self.path}",
                name=op_id or _name_from(self.method, self.path),
                description=description,
                parameters=params,
                response=response,
                examples=list(dict.fromkeys(self.intents)),
                tags=tags,
                source={"path": self.path, "method": self.method, "operation": self.op},
            )


def _pick_media(content: Mapping[str, Any]) -> str | None:
    keys = [k for k in content if isinstance(k, str)]
    for test in (lambda k: k.split(";")[0].strip().lower() == "application/json",
                 lambda k: k.split(";")[0].strip().lower().endswith("+json"),
                 lambda k: k.startswith(("application/x-www-form-urlencoded", "multipart/form-data")),
                 lambda k: k.strip() in ("*/*", "application/*")):
        for k in keys:
            if test(k):
                return k
    return None


# ------------------------------------------------------------------ public API


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
