"""LLM standardization of a catalogue into the four MFTR fields, with a rule fallback.

Per tool: the LLM's record is validated strictly. A record of the wrong shape (or a
failed call) is replaced whole by the rule-based standardization of that tool; a record
that is valid but leaves one field empty gets that field from the rules; a field empty
in both stays empty, so it scores zero for that tool instead of holding invented text.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..schema import Catalog, Parameter, Tool
from ..standardize import standardize_tool
from .client import LLMClient, LLMError, Report, run_concurrently
from .prompts import STANDARDIZE_SHAPE, standardize_messages

__all__ = ["parse_standardized", "standardize_with_llm"]

logger = logging.getLogger(__name__)

_MAX_EXAMPLES = 5


def _invalid(message: str) -> LLMError:
    return LLMError("invalid", message)


def _str(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _invalid(f"{what} is {type(value).__name__}, not a string")
    return " ".join(value.split())


def _parameters(raw: Any, tool: Tool) -> list[Parameter] | None:
    """Validated parameters, ``None`` when the LLM gave none at all."""
    if raw is None:
        return None
    if isinstance(raw, Mapping):
        # {"name": {...}} is a common variant of the list form; accept it.
        raw = [{"name": k, **v} if isinstance(v, Mapping) else {"name": k, "description": v}
               for k, v in raw.items()]
    if not isinstance(raw, list):
        raise _invalid(f"parameters is {type(raw).__name__}, not a list")
    known = {p.name for p in tool.parameters}
    out: dict[str, Parameter] = {}
    for i, p in enumerate(raw):
        if not isinstance(p, Mapping):
            raise _invalid(f"parameters[{i}] is not an object")
        name = p.get("name")
        if not isinstance(name, str) or not name.strip():
            raise _invalid(f"parameters[{i}].name is missing")
        name = name.strip()
        # When the adapter parsed parameters, their names are facts; an LLM name outside
        # them is an invention and is dropped rather than indexed.
        if known and name not in known:
            continue
        required = p.get("required", True)
        if not isinstance(required, bool):
            if isinstance(required, str) and required.lower() in ("true", "false"):
                required = required.lower() == "true"
            else:
                raise _invalid(f"parameters[{i}].required is not a boolean")
        # Types outside JSON Schema ("datetime", "str") are kept: they still tell the
        # parameter field something, and Parameter.type is free text.
        ptype = _str(p.get("type"), f"parameters[{i}].type").lower() or "string"
        out.setdefault(name, Parameter(name=name, type=ptype,
                                       description=_str(p.get("description"), f"parameters[{i}].description"),
                                       required=required))
    return list(out.values())


def parse_standardized(data: Any, tool: Tool, rules: Tool) -> tuple[Tool, list[str]]:
    """Validate an LLM record for ``tool`` and merge it with the rule-based ``rules``.

    Args:
        data: The parsed JSON object from the LLM.
        tool: The raw tool the record describes.
        rules: ``standardize_tool(tool)``: the source of fields the LLM left empty.

    Returns:
        The standardized tool and the names of fields taken from the rules.

    Raises:
        LLMError: ``kind="invalid"``: not an object, a field of the wrong type, or
            neither a description nor examples (nothing usable).
    """
    if not isinstance(data, Mapping):
        raise _invalid("the record is not an object")
    if not any(k in data for k in ("description", "parameters", "response", "examples")):
        raise _invalid(f"none of the four fields present (keys: {sorted(data)[:6]})")
    description = _str(data.get("description"), "description")
    response = _str(data.get("response"), "response")
    raw_examples = data.get("examples") or []
    if not isinstance(raw_examples, list):
        raise _invalid("examples is not a list")
    examples: list[str] = []
    for i, e in enumerate(raw_examples):
        if isinstance(e, Mapping):  # {"user_intent": ...}, the MFTR authors' form
            e = e.get("user_intent") or e.get("intent") or ""
        text = _str(e, f"examples[{i}]")
        if text and text.casefold() not in {x.casefold() for x in examples}:
            examples.append(text)
    if not description and not examples:
        raise _invalid("neither a description nor examples")
    params = _parameters(data.get("parameters"), tool)

    from_rules: list[str] = []
    if not description and rules.description:
        description = rules.description
        from_rules.append("description")
    if not response and rules.response:
        response = rules.response
        from_rules.append("response")
    if params is None:
        merged = list(rules.parameters)
        if merged:
            from_rules.append("parameters")
    else:
        by_name = {p.name: p for p in params}
        merged = []
        # Keep the adapter's parameter order and every parameter it found; a parameter
        # the LLM skipped or left undescribed takes the rule-based one.
        for rp in rules.parameters:
            lp = by_name.pop(rp.name, None)
            if lp is None or not lp.description:
                merged.append(rp if lp is None else replace(lp, description=rp.description))
                if rp.description or lp is None:
                    from_rules.append(f"parameters.{rp.name}")
            else:
                merged.append(lp)
        merged.extend(by_name.values())
    if not examples and rules.examples:
        examples = list(rules.examples)
        from_rules.append("examples")
    out = replace(tool, description=description, parameters=tuple(merged), response=response,
                  examples=tuple(examples[:_MAX_EXAMPLES]))
    return out, from_rules


def standardize_with_llm(catalog: Catalog, client: LLMClient, *, progress: bool = True,
                         price_per_1k: float | tuple[float, float] | None = None) -> tuple[Catalog, Report]:
    """Standardize every tool of ``catalog`` with the LLM, falling back to rules per tool.

    Args:
        catalog: The raw catalogue (``tool.source`` is what the LLM reads when present).
        client: The LLM client (its cache makes reruns free).
        progress: Show a progress bar.
        price_per_1k: Price per 1k tokens (or ``(prompt, completion)``) for the cost
            estimate in the report.

    Returns:
        The standardized catalogue (same ids, order and name) and a :class:`Report`.
        Every fallback is logged at WARNING with the tool id and counted by kind.
    """
    t0 = time.perf_counter()
    before = client.usage.copy()

    def one(tool: Tool) -> tuple[Tool, str | None, list[str]]:
        rules = standardize_tool(tool)
        try:
            data = client.complete_json(standardize_messages(tool), schema_hint=STANDARDIZE_SHAPE)
            std, from_rules = parse_standardized(data, tool, rules)
            return std, None, from_rules
        except LLMError as exc:
            logger.warning("standardize %s: %s; using the rule-based record", tool.id, exc)
            return rules, exc.kind, []

    results = run_concurrently(one, list(catalog), workers=client.concurrency,
                               progress=progress, desc="standardize")
    failures: Counter[str] = Counter(kind for _, kind, _ in results if kind)
    fields: Counter[str] = Counter(f.split(".")[0] for _, _, fr in results for f in fr)
    report = Report.from_usage(before, client.usage.copy(), items=len(results), failures=failures,
                               field_fallbacks=fields, seconds=time.perf_counter() - t0,
                               price_per_1k=price_per_1k)
    return Catalog([t for t, _, _ in results], name=catalog.name), report
