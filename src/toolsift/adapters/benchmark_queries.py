"""Benchmark query files: ToolRet ``queries.json`` and MFTR rewritten-query / fold files.

:func:`load_queries` reads them as :class:`BenchmarkQuery` records (text, gold tool ids,
and the rewritten :class:`~toolsift.schema.Query` when the file has one).
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from ..errors import CatalogFormatError, QueryError
from ..schema import Query
from ._common import located, read_json

__all__ = ["BenchmarkQuery", "load_queries"]

# Under the name it had before the module was split out of benchmark.py.
logger = logging.getLogger("toolsift.adapters.benchmark")

_NEED_KEYS = ("user_intent", "tool_description", "expected_response")


@dataclass(frozen=True, slots=True)
class BenchmarkQuery:
    """One benchmark query with its relevance labels.

    Attributes:
        id: Query id (``"apibank_query_3"``).
        text: The raw query text.
        labels: Ids of the relevant tools.
        rewritten: The LLM-rewritten structured query, when the file has one; its
            ``text`` is the raw query text.
    """

    id: str
    text: str
    labels: tuple[str, ...]
    rewritten: Query | None = None


def _labels(raw: Any, where: str) -> tuple[str, ...]:
    if not isinstance(raw, list):
        raise QueryError(where, f"expected a list of labels, got {type(raw).__name__}")
    out: list[str] = []
    for i, label in enumerate(raw):
        tool_id = label.get("id") if isinstance(label, Mapping) else label
        if not isinstance(tool_id, str) or not tool_id:
            raise QueryError(f"{where}[{i}]", f"expected a tool id, got {tool_id!r}")
        relevance = label.get("relevance", 1) if isinstance(label, Mapping) else 1
        if relevance and tool_id not in out:
            out.append(tool_id)
    return tuple(out)


def _argument_text(value: Any) -> str:
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)


def _rewritten(raw: Any, text: str, stats: MutableMapping[str, int]) -> Query | None:
    """The structured query, after dropping what the LLM left empty.

    Needs whose three texts are all empty are dropped (a :class:`ToolNeed` refuses
    them); non-string argument values are JSON-encoded, null ones become ``""``.
    If no need is left the query has no rewrite.
    """
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise QueryError(".rewritten_query", f"expected an object, got {type(raw).__name__}")
    needs = raw.get("tool_needs", raw.get("needs"))
    if not isinstance(needs, list):
        raise QueryError(".rewritten_query.tool_needs", "expected a list of tool needs")
    kept = []
    for need in needs:
        if isinstance(need, Mapping) and not any(
            isinstance(need.get(k), str) and need[k].strip() for k in _NEED_KEYS
        ):
            stats["empty_needs"] += 1
            continue
        kept.append(need)
    args = raw.get("extracted_arguments", raw.get("arguments")) or {}
    if not isinstance(args, Mapping):
        raise QueryError(".rewritten_query.extracted_arguments", "expected an object")
    clean: dict[str, str] = {}
    for key, value in args.items():
        if not isinstance(key, str) or not key.strip():
            stats["blank_argument_names"] += 1
            continue
        if not isinstance(value, str):
            stats["non_string_arguments"] += 1
            value = _argument_text(value)
        clean[key] = value
    if not kept:
        stats["queries_without_needs"] += 1
        return None
    return Query.from_dict(
        {"tool_needs": kept, "extracted_arguments": clean, "text": text}, where=".rewritten_query"
    )


def _query(record: Mapping[str, Any], stats: MutableMapping[str, int]) -> BenchmarkQuery:
    qid = record.get("id")
    if not isinstance(qid, str) or not qid.strip():
        raise QueryError(".id", f"a query needs a non-empty string id, got {qid!r}")
    text = record.get("query")
    if not isinstance(text, str) or not text.strip():
        raise QueryError(".query", "the query text is missing or empty")
    return BenchmarkQuery(
        id=qid,
        text=text,
        labels=_labels(record.get("labels", []), ".labels"),
        rewritten=_rewritten(record.get("rewritten_query"), text, stats),
    )


def load_queries(
    source: str | os.PathLike[str] | list[Any],
    *,
    stats: MutableMapping[str, int] | None = None,
) -> list[BenchmarkQuery]:
    """Read ToolRet ``queries.json`` or an MFTR rewritten-query / fold file.

    Args:
        source: A path to the JSON file, or its already-parsed list of records.
        stats: If given, receives counts of data repairs: ``empty_needs`` (tool needs
            with no text, dropped), ``non_string_arguments`` (argument values that
            were not strings, JSON-encoded), ``blank_argument_names`` (dropped),
            ``queries_without_needs`` (rewrite dropped, ``rewritten`` is ``None``).

    Returns:
        The queries in file order.

    Raises:
        CatalogFormatError: If the file cannot be read or is not a list.
        QueryError: Naming the record, e.g. ``"queries[4] (id='apibank_query_4').query"``.
    """
    label = "queries"
    payload = source
    if isinstance(source, (str, os.PathLike)):
        label = os.fspath(source)
        payload = read_json(source)
    if not isinstance(payload, list):
        raise CatalogFormatError(
            f"{label}: expected a list of query records, got {type(payload).__name__}"
        )
    counts: Counter[str] = Counter()
    out: list[BenchmarkQuery] = []
    for i, record in enumerate(payload):
        where = f"queries[{i}]"
        if isinstance(record, Mapping) and isinstance(record.get("id"), str):
            where += f" (id={record['id']!r})"
        if not isinstance(record, Mapping):
            raise QueryError(where, f"expected a query object, got {type(record).__name__}")
        with located(where):
            out.append(_query(record, counts))
    if counts:
        logger.warning("%s: repaired rewritten queries: %s", label, dict(counts))
    if stats is not None:
        for key in ("empty_needs", "non_string_arguments", "blank_argument_names",
                    "queries_without_needs"):
            stats[key] = stats.get(key, 0) + counts[key]
    return out
