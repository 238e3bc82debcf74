"""LLM query rewriting into tool needs and abstract argument roles, with a fallback.

The prompt carries BM25 pseudo-relevance feedback from a :class:`ToolIndex` search of
the raw query: the top-20 standardized descriptions and the top-3 full documents. A
rewrite that fails validation becomes :meth:`Query.from_text` (the raw query on every
field, uniform weights, no arguments and hence no penalty).
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import SchemaError
from ..schema import Query
from .client import LLMClient, LLMError, Report, run_concurrently
from .prompts import REWRITE_SHAPE, rewrite_messages, tool_document

__all__ = [
    "LEAK_POLICIES",
    "MIN_LEAK_CHARS",
    "parse_rewrite",
    "rewrite_dataset",
    "rewrite_records",
    "rewrite_with_llm",
    "with_rewrites",
]

logger = logging.getLogger(__name__)

#: An argument description that is, as a whole, a substring of the raw query at least
#: this long is taken for a copied concrete value ("Olivia Davis", "2023-10-10").
MIN_LEAK_CHARS = 4
_MAX_NEEDS = 8
# A description without a single word of two letters ("2023-04-21", "4", "$5.00") is a
# value, not a role.
_HAS_WORD = re.compile(r"[^\W\d_]{2,}")
#: What :func:`parse_rewrite` does with an argument description that copies the query.
LEAK_POLICIES = ("repair", "reject")


def _role_words(name: str) -> str:
    """``"patientName"`` / ``"patient_name"`` -> ``"patient name"``."""
    return " ".join(re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ").replace("-", " ").split())


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def parse_rewrite(data: Any, text: str, *, leaks: str = "repair",
                  repairs: list[str] | None = None) -> Query:
    """Validate an LLM rewrite of the raw query ``text``.

    Rules: ``tool_needs`` is a non-empty list (at most 8) of objects whose three fields
    are strings, at least one non-empty; ``extracted_arguments`` is an object of
    string -> non-empty string (or absent).

    Concrete values must not reach the argument roles. An argument description that,
    whitespace- and case-normalised, is a substring of ``text`` of length >=
    :data:`MIN_LEAK_CHARS` ("Olivia Davis") is a copied value; so is a description with no
    word in it ("2023-04-21" for "April 21st"), and a description that is not a string
    at all (``{"reminder_id": 123}``, an object of values, ``""``). With
    ``leaks="repair"`` (default) such a description is replaced by the role name in words
    (``patient_name`` -> "patient name"), which says what the role is without the value;
    with ``leaks="reject"`` a copied value rejects the whole rewrite (``leaked_value``)
    and a missing description makes it ``invalid``. Small local models copy values
    often (Qwen2.5-1.5B on APIBank: 33 of 101 rewrites copied a value, 14 more gave a
    number or object); repairing keeps their needs, which scored better with default
    parameters (docs/llm.md has both policies measured).

    Args:
        data: The parsed JSON object.
        text: The raw query.
        leaks: One of :data:`LEAK_POLICIES`.
        repairs: When given, the names of repaired arguments are appended to it.

    Raises:
        LLMError: ``kind="invalid"``, or ``kind="leaked_value"`` under ``leaks="reject"``.
        ValueError: ``leaks`` is not a known policy.
    """
    if leaks not in LEAK_POLICIES:
        raise ValueError(f"leaks must be one of {LEAK_POLICIES}, got {leaks!r}")
    if not isinstance(data, Mapping):
        raise LLMError("invalid", "the rewrite is not an object")
    needs = data.get("tool_needs")
    if isinstance(needs, Mapping):  # a single need not wrapped in a list
        needs = [needs]
    if not isinstance(needs, list) or not needs:
        raise LLMError("invalid", "tool_needs is missing or empty")
    if len(needs) > _MAX_NEEDS:
        raise LLMError("invalid", f"{len(needs)} tool needs; at most {_MAX_NEEDS}")
    for i, n in enumerate(needs):
        if not isinstance(n, Mapping):
            raise LLMError("invalid", f"tool_needs[{i}] is not an object")
        for key in ("user_intent", "tool_description", "expected_response"):
            if n.get(key) is not None and not isinstance(n.get(key), str):
                raise LLMError("invalid", f"tool_needs[{i}].{key} is not a string")
        if not any(isinstance(v := n.get(k), str) and v.strip()
                   for k in ("user_intent", "tool_description")):
            raise LLMError("invalid", f"tool_needs[{i}] has neither user_intent nor tool_description")
    args = data.get("extracted_arguments") or {}
    if not isinstance(args, Mapping):
        raise LLMError("invalid", "extracted_arguments is not an object")
    clean: dict[str, str] = {}
    query = _norm(text)
    for name, desc in args.items():
        if not isinstance(name, str) or not name.strip():
            raise LLMError("invalid", f"argument name {name!r} is not a non-empty string")
        if not isinstance(desc, str) or not desc.strip():
            # A number, object or empty string: a value (or nothing) instead of a role.
            if leaks == "reject":
                raise LLMError("invalid", f"argument {name!r} has no description")
            desc = ""
        d = _norm(desc)
        copied = len(d) >= MIN_LEAK_CHARS and d in query
        if copied and leaks == "reject":
            raise LLMError("leaked_value", f"argument {name!r} = {desc!r} copies the query")
        if copied or not _HAS_WORD.search(desc):
            logger.info("argument %r = %r is a value; described by its name instead", name, desc)
            desc = _role_words(name) or name
            if repairs is not None:
                repairs.append(name)
        clean[name.strip()] = " ".join(desc.split())
    try:
        return Query.from_dict({"tool_needs": needs, "extracted_arguments": clean, "text": text})
    except SchemaError as exc:
        raise LLMError("invalid", str(exc)) from None


def _text_of(q: Any) -> str:
    return q if isinstance(q, str) else q.text


def rewrite_with_llm(queries: Sequence[Any], index, client: LLMClient, *, descriptions: int = 20,
                     docs: int = 3, progress: bool = True, leaks: str = "repair",
                     price_per_1k: float | tuple[float, float] | None = None) -> tuple[list[Query], Report]:
    """Rewrite raw queries into structured :class:`Query` objects with the LLM.

    Args:
        queries: Raw texts, or objects with a ``text`` attribute (benchmark queries).
        index: A :class:`~toolsift.toolindex.ToolIndex` over the standardized
            catalogue, searched with each raw query for the feedback.
        client: The LLM client.
        descriptions: How many top tool descriptions go into the prompt.
        docs: How many top full tool documents go into the prompt.
        progress: Show a progress bar.
        leaks: What to do with copied values (see :func:`parse_rewrite`).
        price_per_1k: Price per 1k tokens (or ``(prompt, completion)``) for the report.

    Returns:
        One query per input, in order (fallbacks are ``Query.from_text``), and a
        :class:`Report`. Every fallback is logged at WARNING and counted by kind;
        repaired argument descriptions are counted in ``field_fallbacks["argument"]``.
    """
    if leaks not in LEAK_POLICIES:
        raise ValueError(f"leaks must be one of {LEAK_POLICIES}, got {leaks!r}")
    t0 = time.perf_counter()
    before = client.usage.copy()
    texts = [_text_of(q) for q in queries]
    depth = max(descriptions, docs, 1)
    hits = index.search_batch([Query.from_text(t) for t in texts], k=depth) if texts else []

    def one(i: int) -> tuple[Query, str | None, int]:
        text = texts[i]
        top = hits[i]
        msgs = rewrite_messages(text, [h.tool.description or h.tool.name for h in top[:descriptions]],
                                [tool_document(h.tool) for h in top[:docs]])
        repaired: list[str] = []
        try:
            data = client.complete_json(msgs, schema_hint=REWRITE_SHAPE)
            return parse_rewrite(data, text, leaks=leaks, repairs=repaired), None, len(repaired)
        except LLMError as exc:
            logger.warning("rewrite %r: %s; using the raw query", text[:60], exc)
            return Query.from_text(text), exc.kind, 0

    results = run_concurrently(one, list(range(len(texts))), workers=client.concurrency,
                               progress=progress, desc="rewrite")
    failures: Counter[str] = Counter(kind for _, kind, _ in results if kind)
    repaired = sum(n for _, _, n in results)
    report = Report.from_usage(before, client.usage.copy(), items=len(texts), failures=failures,
                               field_fallbacks=Counter({"argument": repaired}) if repaired else None,
                               seconds=time.perf_counter() - t0, price_per_1k=price_per_1k)
    return [q for q, _, _ in results], report


def rewrite_dataset(ds, client: LLMClient, *, progress: bool = True, leaks: str = "repair",
                    price_per_1k: float | tuple[float, float] | None = None) -> tuple[list[Query], Report]:
    """Rewrite every query of an :class:`~toolsift.evaluate.MftrDataset` with the LLM.

    The feedback index is built over the authors' standardized tools when the data set
    has them (apibank), else over the rule-standardized raw tools, without example
    intents: feedback must not see any fold's labels.

    Returns:
        The rewrites in ``ds.queries`` order, and the :class:`Report`.
    """
    from ..standardize import standardize_catalog
    from ..toolindex import ToolIndex

    catalog = ds.standardized_tools or standardize_catalog(ds.raw_tools, examples=None)
    index = ToolIndex.build(catalog)
    return rewrite_with_llm([q.text for q in ds.queries], index, client, progress=progress,
                            leaks=leaks, price_per_1k=price_per_1k)


def with_rewrites(ds, queries: Sequence[Query]):
    """A copy of ``ds`` whose queries' ``rewritten`` are ``queries`` (same order)."""
    from dataclasses import replace

    if len(queries) != len(ds.queries):
        raise ValueError(f"{len(queries)} rewrites for {len(ds.queries)} queries")
    return replace(ds, queries=tuple(replace(q, rewritten=r) for q, r in zip(ds.queries, queries)))


def rewrite_records(ds, queries: Sequence[Query]) -> list[dict[str, Any]]:
    """MFTR fold-file records (``id``, ``query``, ``labels``, ``rewritten_query``), so
    :func:`toolsift.adapters.load_queries` reads the output back."""
    return [{"id": q.id, "query": q.text, "labels": [{"id": t, "relevance": 1} for t in q.labels],
             "rewritten_query": {"tool_needs": [{"user_intent": n.user_intent,
                                                 "tool_description": n.tool_description,
                                                 "expected_response": n.expected_response}
                                                for n in r.needs],
                                 "extracted_arguments": dict(r.arguments)}}
            for q, r in zip(ds.queries, queries)]
