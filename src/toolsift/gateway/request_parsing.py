"""Checks and parsing of gateway request fields, before any work is done.

Each function turns one raw request field (as a JSON client sends it) into the value the
:class:`~toolsift.gateway.core.Gateway` works with, or raises a
:class:`~toolsift.gateway.errors.GatewayError` with a stable code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import QueryError
from ..query_caps import MAX_ARGUMENTS, MAX_DEPTH, MAX_NEEDS, check_structure
from ..schema import Query
from .config import FORMATS, GatewayConfig
from .errors import GatewayError

__all__ = ["check_session_id", "parse_arguments", "parse_format", "parse_limit", "parse_query", "parse_tags",
           "parse_token_budget"]


def _structured_texts(query: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """``(need texts, argument names and descriptions)`` of a structured query.

    Only the parts :meth:`Query.from_dict` reads count, so the wrapper's own keys
    (``tool_needs``...) neither use up the length limit nor trigger routing rules.
    """
    needs = query.get("tool_needs", query.get("needs"))
    request = query.get("request", query.get("text"))  # as Query.from_dict reads it
    need_texts = [request] if isinstance(request, str) else []
    if isinstance(needs, str):
        need_texts.append(needs)  # malformed, but not empty: let the parser say why
    elif isinstance(needs, Sequence):
        for need in needs:
            if isinstance(need, Mapping):
                need_texts += [v for v in need.values() if isinstance(v, str)]
    args = query.get("extracted_arguments", query.get("arguments"))
    arg_texts: list[str] = []
    if isinstance(args, Mapping):
        for k, v in args.items():
            arg_texts += [t for t in (k, v) if isinstance(t, str)]
    return need_texts, arg_texts


def parse_format(format: str | None, config: GatewayConfig) -> str:
    """``format`` if it is a known tool-schema format; ``None`` means the configured one."""
    fmt = config.format if format is None else format
    if fmt not in FORMATS:
        raise GatewayError("bad_request", f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}",
                           formats=list(FORMATS))
    return fmt


def parse_limit(limit: Any, config: GatewayConfig) -> int:
    """``limit`` as an int within the configured range; ``None`` means the default."""
    cfg = config
    if limit is None:
        return cfg.default_limit
    # JSON clients may send 5.0 for 5.
    if isinstance(limit, float) and limit.is_integer():
        limit = int(limit)
    if not isinstance(limit, int) or isinstance(limit, bool):
        raise GatewayError("bad_request", f"limit must be an integer, got {limit!r}")
    if not 1 <= limit <= cfg.max_limit:
        raise GatewayError("limit_out_of_range", f"limit must be between 1 and {cfg.max_limit}, got {limit}",
                           min=1, max=cfg.max_limit)
    return limit


def parse_token_budget(token_budget: Any) -> int | None:
    """``token_budget`` as an int >= 1, or ``None`` for no budget."""
    if token_budget is None:
        return None
    if isinstance(token_budget, float) and token_budget.is_integer():
        token_budget = int(token_budget)  # JSON clients may send 500.0 for 500
    if not isinstance(token_budget, int) or isinstance(token_budget, bool) or token_budget < 1:
        raise GatewayError("bad_request", f"token_budget must be an integer >= 1 (tokens), got {token_budget!r}")
    return token_budget


def parse_tags(tags: Any) -> tuple[str, ...]:
    """The tag filter as a tuple; one bare string counts as a one-tag list."""
    if tags is None:
        return ()
    if isinstance(tags, str):
        tags = [tags]  # LLMs often pass one tag as a bare string
    if not isinstance(tags, Sequence) or not all(isinstance(t, str) for t in tags):
        raise GatewayError("bad_request", "tags must be a list of strings")
    return tuple(t for t in tags if t.strip())


def check_session_id(session: Any) -> None:
    """Reject a session id that is not a non-empty string (``None``: no session)."""
    if session is not None and (not isinstance(session, str) or not session):
        raise GatewayError("bad_request", "session must be a non-empty string")


def parse_arguments(params: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict; ``None`` means none."""
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise GatewayError("invalid_params", f"arguments must be an object, got {type(params).__name__}",
                           path="$")
    return dict(params)


def parse_query(query: Any, *, max_query_chars: int) -> tuple[str | Query, str]:
    """``(query for the index, text routing rules see)``, or a GatewayError."""
    limit = max_query_chars
    if isinstance(query, str):
        stripped = query.strip()
        if stripped.startswith("{"):
            try:
                parsed = json.loads(stripped)
            except (ValueError, RecursionError):
                parsed = None
            if isinstance(parsed, dict) and ("tool_needs" in parsed or "needs" in parsed):
                return parse_query(parsed, max_query_chars=limit)
        if not stripped:
            raise GatewayError("empty_query")
        if len(query) > limit:
            raise GatewayError("query_too_long", f"the query has {len(query)} characters; the limit is {limit}",
                               max_query_chars=limit)
        return query, query
    if isinstance(query, Mapping):
        try:  # the structure's caps first: counting is cheap, walking 200,000 needs is not
            check_structure(query, query.get("tool_needs", query.get("needs")))
        except QueryError as exc:
            raise GatewayError("query_too_long", f"structured query: {exc}", max_tool_needs=MAX_NEEDS,
                               max_arguments=MAX_ARGUMENTS, max_depth=MAX_DEPTH) from None
        need_texts, arg_texts = _structured_texts(query)
        texts = need_texts + arg_texts
        total = sum(len(t) for t in texts)
        if total > limit:
            raise GatewayError("query_too_long", f"the query has {total} characters of text; the limit is "
                               f"{limit}", max_query_chars=limit)
        if not "".join(need_texts).strip():
            raise GatewayError("empty_query")
        try:
            parsed_query = Query.from_dict(query)
        except QueryError as exc:
            raise GatewayError("bad_request", f"malformed structured query: {exc}") from None
        return parsed_query, " ".join(texts)
    if query is None:
        raise GatewayError("empty_query")
    raise GatewayError("bad_request", f"query must be text or an object, got {type(query).__name__}")
