"""One OpenAPI operation as a toolsift :class:`~toolsift.schema.Tool`, for :mod:`.openapi`:
its name, description, parameters, request body, response and example intents."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import SchemaError
from ..schema import Parameter, Tool
from ._common import located, text_or_empty
from ._jsonschema import describe_output, parameters_from_schema
from ._openapi_refs import _Resolver, _type

_IN = ("path", "query", "header")
_IGNORED_HEADERS = {"accept", "content-type", "authorization"}
_EXAMPLE_KEYS = ("x-examples", "x-toolsift-examples")


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
                parameters=tuple(params),
                response=response,
                examples=tuple(dict.fromkeys(self.intents)),
                tags=tuple(tags),
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
