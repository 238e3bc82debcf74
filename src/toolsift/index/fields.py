"""Turn a catalogue into the documents of each field.

* description: one document per tool (optionally prefixed with the tool name in words);
* response: one document per tool;
* examples: one document per example intent, grouped back to its tool (a tool's
  examples score is the max over its examples); a tool without examples gets one empty
  document, as in the MFTR reference, so document counts do not depend on coverage;
* parameters: one document per parameter, ``"name (type): description"`` (or the
  parameter's JSON, as the MFTR reference indexes it), grouped back to its tool;
  ``param_ptr`` locates each tool's parameters.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..schema import Catalog, Tool

__all__ = ["FieldDocs", "argument_text", "field_counts", "field_documents", "field_texts", "name_words",
           "parameter_layout", "parameter_text"]

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[_\-./:]+")


# Parameter names recur across a catalogue (``query``, ``user_id`` ...): split each once.
@functools.lru_cache(maxsize=1 << 16)
def name_words(name: str) -> str:
    """``"sendEmail"``/``"send_email"`` -> ``"send email"``: names as searchable words."""
    return " ".join(p for p in _CAMEL.split(name) if p)


@dataclass
class FieldDocs:
    """Documents of one field and, for multi-document fields, their owning tool."""

    texts: list[str]
    groups: np.ndarray | None  # int32 tool position per document, None if one doc per tool


def description_text(tool: Tool, *, with_name: bool, tool_card: int = 0) -> str:
    """The indexed description of ``tool``. With ``tool_card`` = n > 0, a flat card
    instead: the tool name whole and in words n times (a BM25F-style name boost by
    repetition), the description, then every parameter's name (whole and in words) and
    description."""
    if not tool_card:
        return f"{name_words(tool.name)}: {tool.description}" if with_name else tool.description
    parts = [tool.name, name_words(tool.name)] * int(tool_card) + [tool.description]
    for p in tool.parameters:
        parts += [p.name, name_words(p.name), p.description]
    return " ".join(x for x in parts if x)


def parameter_text(name: str, type_: str, description: str, *, split_identifiers: bool) -> str:
    """The indexed text of one parameter: ``"name (type): description"``."""
    return f"{name_words(name) if split_identifiers else name} ({type_}): {description}"


def original_parameter(tool: Tool, name: str) -> dict | None:
    """The parameter object as the source wrote it, if the source kept one."""
    src = tool.source or {}
    for path in (("augmented", "parameters"), ("inputSchema", "properties"), ("input_schema", "properties"),
                 ("parameters", "properties"), ("function", "parameters", "properties")):
        node: object = src
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and isinstance(node.get(name), dict):
            return node[name]
    return None


def parameter_json(tool: Tool, p) -> str:
    """A parameter as JSON (the MFTR reference's parameter document format): the source's
    own parameter object plus its name, or the toolsift fields when the source has none."""
    orig = original_parameter(tool, p.name)
    if orig is None:
        orig = {"type": p.type, "description": p.description, "required": p.required, "example": p.example}
    return json.dumps(dict(orig, name=p.name), default=str)


def argument_text(name: str, description: str, *, split_identifiers: bool) -> str:
    """The query-side text of one extracted argument: ``"name: description"``."""
    return f"{name_words(name) if split_identifiers else name}: {description}"


def field_counts(tools: Sequence[Tool], name: str) -> np.ndarray | None:
    """For a multi-document field (parameters, examples), how many documents each tool
    has (``int64[len(tools)]``); ``None`` for one document per tool."""
    if name in ("description", "response"):
        return None
    if name == "examples":  # a tool without examples has one empty document
        return np.fromiter((len(t.examples) or 1 for t in tools), np.int64, len(tools))
    if name == "parameters":
        return np.fromiter((len(t.parameters) for t in tools), np.int64, len(tools))
    raise KeyError(f"unknown field {name!r}")


def field_texts(tools: Sequence[Tool], name: str, *, name_in_description: bool, split_identifiers: bool = False,
                parameter_format: str = "text", tool_card: int = 0) -> tuple[list[str], np.ndarray | None]:
    """The documents of field ``name`` for ``tools``, and for multi-document fields
    (parameters, examples) how many each tool has (:func:`field_counts`).

    A build calls this on slices of the catalogue, one field at a time, so the texts
    of a million tools never exist all at once."""
    if name == "description":
        return [description_text(t, with_name=name_in_description, tool_card=tool_card) for t in tools], None
    if name == "response":
        return [t.response for t in tools], None
    if name == "examples":
        return [e for t in tools for e in (t.examples or ("",))], field_counts(tools, name)
    if name == "parameters":
        if parameter_format == "json":
            texts = [parameter_json(t, p) for t in tools for p in t.parameters]
        else:
            texts = [parameter_text(p.name, p.type, p.description, split_identifiers=split_identifiers)
                     for t in tools for p in t.parameters]
        return texts, field_counts(tools, name)
    raise KeyError(f"unknown field {name!r}")


def field_documents(catalog: Catalog, *, name_in_description: bool,
                    split_identifiers: bool = False, parameter_format: str = "text",
                    tool_card: int = 0) -> dict[str, FieldDocs]:
    """Documents per field for ``catalog`` (see the module docstring)."""
    out = {}
    for name in ("description", "parameters", "response", "examples"):
        texts, counts = field_texts(catalog, name, name_in_description=name_in_description,
                                    split_identifiers=split_identifiers, parameter_format=parameter_format,
                                    tool_card=tool_card)
        groups = None if counts is None else np.repeat(np.arange(len(catalog), dtype=np.int32), counts)
        out[name] = FieldDocs(texts, groups)
    return out


def parameter_layout(catalog: Sequence[Tool]) -> tuple[np.ndarray, np.ndarray]:
    """``(param_ptr int64[n_tools+1], param_required uint8[n_params])``."""
    counts = np.fromiter((len(t.parameters) for t in catalog), dtype=np.int64, count=len(catalog))
    ptr = np.zeros(len(catalog) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    req = np.fromiter(
        (p.required for t in catalog for p in t.parameters), dtype=np.uint8, count=int(ptr[-1])
    )
    return ptr, req
