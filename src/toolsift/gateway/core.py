"""The transport-independent ``find_tools`` gateway of RFC 0001 "Selective Tool Retrieval".

The LLM sees two meta-tools instead of the whole catalogue: ``find_tools(query, limit,
tags)`` returns the few matching tool schemas in the host's native format, and
``use_tool(query, params, confirm)`` finds and runs the best tool in one step. Tools
returned by ``find_tools`` are then called directly by name (:meth:`Gateway.call_tool`).

Every request is checked before any work is done, and every failure is a
:class:`~toolsift.gateway.errors.GatewayError` with a stable code. Arguments are
validated against the tool's JSON Schema before the executor runs, and high-risk tools
run only with ``confirm=True``.

A transport (the MCP server, HTTP) wraps a :class:`Gateway`; an *executor* supplied by
the caller actually runs tools (a local function table, an upstream MCP session...).
"""

from __future__ import annotations

import asyncio
import difflib
import json
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any


from ..errors import QueryError
from ..schema import Query, Tool, ToolNeed
from ..query_schema import NO_MATCH_NOTE
from .config import FORMATS, GatewayConfig
from .errors import GatewayError
from .formats import to_format
from .meta_tools import META_TOOLS, meta_tool_definitions
from .ranking import rank, rank_complete, rank_within
from .request_parsing import (
    check_session_id,
    parse_arguments,
    parse_format,
    parse_limit,
    parse_query,
    parse_tags,
    parse_token_budget,
)
from .sessions import (
    MAX_SESSIONS,
    WHEN_NOT_TO_USE_KEY,
    IndexState,
    SessionCache,
    risk_level,
    schema_etag,
    when_not_to_use,
)
from .validation import check_arguments, check_result_size

if TYPE_CHECKING:  # importing ToolIndex loads the compiled core
    from ..toolindex import Hit, ToolIndex

__all__ = [
    "BACKENDS",
    "MAX_SESSIONS",
    "META_TOOLS",
    "WHEN_NOT_TO_USE_KEY",
    "Executor",
    "Gateway",
    "risk_level",
    "when_not_to_use",
]

#: Executes one tool call: ``await executor(tool, arguments)``; may raise.
Executor = Callable[[Tool, dict[str, Any]], Awaitable[Any]]

#: Retrieval backends available without any model files.
BACKENDS: tuple[str, ...] = ("bm25",)

# Hits use_tool looks through for a tool that accepts the given arguments.
_USE_TOOL_FETCH = 20
# A search quicker than this runs on the event loop instead of a worker thread.
_INLINE_RANK_S = 0.002
_SUGGESTIONS = 3
_ARG_TEXT_CHARS = 200
_CAMEL = re.compile(r"[_\W]+|(?<=[a-z0-9])(?=[A-Z])")


# ------------------------------------------------------------------------ internals
def _argument_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text[:_ARG_TEXT_CHARS]


# --------------------------------------------------------------------------- gateway
class Gateway:
    """The ``find_tools`` / ``use_tool`` gateway over one :class:`ToolIndex`.

    Safe to share between concurrent requests: searches run in worker threads, and
    swapping :attr:`index` never disturbs a request already running.

    Args:
        index: The tools to serve.
        config: Formats, limits, routing rules and risk tags; defaults to
            :class:`GatewayConfig()`.
        executor: Runs tool calls for :meth:`call_tool` and :meth:`use_tool`. Without
            one, executing anything fails with ``upstream_error``.
        recorder: Usage recorder (:class:`toolsift.usage.UsageRecorder`): told about every
            ``find_tools`` answer and tool call, for learning from usage.

    Example:
        >>> gw = Gateway(ToolIndex.build(catalog), executor=run_tool)   # doctest: +SKIP
        >>> found = await gw.find_tools("convert 100 USD to EUR", limit=3)  # doctest: +SKIP
        >>> await gw.call_tool(found["tools"][0]["name"], {...})        # doctest: +SKIP
    """

    def __init__(self, index: ToolIndex, *, config: GatewayConfig | None = None,
                 executor: Executor | None = None, recorder: Any = None) -> None:
        if config is not None and not isinstance(config, GatewayConfig):
            raise TypeError(f"config must be a GatewayConfig, got {type(config).__name__}")
        self._config = config or GatewayConfig()
        self._executor = executor
        self._recorder = recorder
        self._state = self._make_state(index)
        self._sessions = SessionCache(MAX_SESSIONS)
        self._last_rank_s = float("inf")  # unknown: the first search goes to a thread

    # ---------------------------------------------------------------- properties
    @property
    def index(self) -> ToolIndex:
        """The served index. Assigning a new one swaps it atomically: requests already
        running finish on the old index, later ones see the new one."""
        return self._state.index

    @index.setter
    def index(self, index: ToolIndex) -> None:
        # One attribute store: readers see either the old state or the new, never a mix.
        self._state = self._make_state(index)

    @property
    def config(self) -> GatewayConfig:
        """The gateway configuration."""
        return self._config

    @property
    def executor(self) -> Executor | None:
        """The tool executor, if any."""
        return self._executor

    @staticmethod
    def _make_state(index: ToolIndex) -> IndexState:
        if not (hasattr(index, "search") and hasattr(index, "catalog")):
            raise TypeError(f"index must be a ToolIndex, got {type(index).__name__}")
        return IndexState(index)

    # ------------------------------------------------------------- public helpers
    def schema(self, tool: Tool, format: str) -> dict[str, Any]:
        """The native schema of one tool in host ``format``.

        Raises:
            GatewayError: ``bad_request`` for an unknown format.
        """
        return to_format(tool, parse_format(format, self._config))

    def etag(self, tool: Tool) -> str:
        """A stable hash of the tool's MCP-format schema (16 hex digits).

        It changes whenever anything a client sees changes: name, description, input or
        output schema, annotations, tags.
        """
        if self._state.by_name.get(tool.name) is tool:
            return self._state.etag(tool)
        return schema_etag(tool)

    def risk(self, tool: Tool) -> str:
        """The tool's risk level under this gateway's ``high_risk_tags`` (:func:`risk_level`)."""
        return risk_level(tool, self._config.high_risk_tags)

    def forget_session(self, session: str) -> bool:
        """Drop a session's schema cache (e.g. when the client's context was reset), so
        the next ``find_tools`` sends full schemas again. Returns whether it existed."""
        return self._sessions.forget(session)

    def capabilities(self) -> dict[str, Any]:
        """What this gateway offers: backends, formats, limits, tool count, meta-tools."""
        cfg = self._config
        return {
            "protocol": "RFC 0001 Selective Tool Retrieval",
            "backends": list(BACKENDS),
            "default_backend": BACKENDS[0],
            "formats": list(FORMATS),
            "default_format": cfg.format,
            "query_forms": ["text", "structured"],
            "limits": {
                "default_limit": cfg.default_limit,
                "max_limit": cfg.max_limit,
                "max_query_chars": cfg.max_query_chars,
                "call_timeout": cfg.call_timeout,
            },
            "tools": len(self._state.index.catalog),
            "meta_tools": list(META_TOOLS),
            "features": {
                "session_schema_cache": cfg.schema_cache,
                "etag": True,
                "tag_filters": True,
                "routing_rules": len(cfg.routing),
                "confirmation": True,
                "execution": self._executor is not None,
            },
            "high_risk_tags": list(cfg.high_risk_tags),
        }

    def meta_tools(self, format: str = "mcp") -> list[dict[str, Any]]:
        """Definitions of the ``find_tools`` and ``use_tool`` meta-tools in host ``format``.

        Raises:
            GatewayError: ``bad_request`` for an unknown format.
        """
        fmt = parse_format(format, self._config)
        return [to_format(t, fmt) for t in meta_tool_definitions(self._config)]

    # ----------------------------------------------------------------- find_tools
    async def find_tools(self, query: str | Mapping[str, Any], *, limit: int | None = None,
                         format: str | None = None, tags: Sequence[str] = (),
                         session: str | None = None, token_budget: int | None = None,
                         complete: bool = False) -> dict[str, Any]:
        """The tools that best fit ``query``, with schemas in the host's format.

        Args:
            query: The task in plain text, or the structured form
                ``{"tool_needs": [{"user_intent", "tool_description",
                "expected_response"}, ...], "extracted_arguments": {role: description},
                "request": the user's words}`` filled by the calling LLM itself (no
                extra LLM call; ``request`` optional). A string holding
                that JSON object is accepted too.
            limit: Number of tools, ``1..max_limit``; default ``default_limit``.
            format: ``"mcp"``, ``"openai"`` or ``"anthropic"``; default from config.
            tags: Keep only tools that carry all of these tags.
            session: A client session id enabling the schema cache: a tool whose ETag
                this session already received in this format comes back as
                ``{"name", "etag", "unchanged": true}`` instead of in full (unless
                the config's ``schema_cache`` is off).
            token_budget: Return only the best tools whose schemas (in ``format``) fit
                together in this many tokens (:mod:`toolsift.search.budget`); each entry
                then carries its ``tokens``.
            complete: Return a tool set for a multi-step task: add the tools that
                produce a returned tool's missing inputs and the CRUD steps the query
                asks for, drop near-duplicates (``ToolIndex.search(complete=True)``,
                ``docs/graph.md``); added entries say why. Still at most ``limit`` and
                within ``token_budget``.

        Returns:
            ``{"tools": [...], "format": ..., "backend": "bm25"}``, best first. A full
            entry is ``{"schema", "name", "score", "why", "etag", "risk",
            "requires_confirmation"}`` plus ``"when_not_to_use"`` when the tool has it.

        Raises:
            GatewayError: ``empty_query`` (never the full list), ``query_too_long``,
                ``limit_out_of_range``, ``bad_request`` (unknown format, malformed
                structured query, bad tags, session or token budget).
        """
        fmt = parse_format(format, self._config)
        k = parse_limit(limit, self._config)
        budget = parse_token_budget(token_budget)
        if not isinstance(complete, bool):
            raise GatewayError("bad_request", f"complete must be true or false, got {complete!r}")
        want = parse_tags(tags)
        check_session_id(session)
        q, text = parse_query(query, max_query_chars=self._config.max_query_chars)
        state = self._state
        if complete:
            hits = await self._off_loop(rank_complete, state, self._config.routing, q, text, k, want, budget, fmt)
        elif budget is None:
            hits = await self._off_loop(rank, state, self._config.routing, q, text, k, want)
        else:
            hits = await self._off_loop(rank_within, state, self._config.routing, q, text, k, want, budget, fmt)
        tools: list[dict[str, Any]] = []
        if session is None or not self._config.schema_cache:
            tools = [self._entry(state, h, fmt) for h in hits]
        else:
            with self._sessions.lock:
                sent = self._sessions.sent(session)
                for h in hits:
                    etag = state.etag(h.tool)
                    key = (fmt, h.tool.name)
                    if sent.get(key) == etag:
                        tools.append({"name": h.tool.name, "etag": etag, "unchanged": True})
                    else:
                        tools.append(self._entry(state, h, fmt))
                        sent[key] = etag
        if self._recorder is not None:
            self._recorder.found(session, query, q, text, [h.tool.id for h in hits], state.index)
        found: dict[str, Any] = {"tools": tools, "format": fmt, "backend": BACKENDS[0]}
        if not tools:
            found["note"] = NO_MATCH_NOTE
        return found

    def _entry(self, state: IndexState, hit: Hit, fmt: str) -> dict[str, Any]:
        tool = hit.tool
        key = (fmt, tool.id)
        static = state.entries.get(key)
        if static is None:
            # Cached per index state (a swapped index starts afresh). The schema object is
            # shared by every result that carries the tool: read-only for callers.
            risk = self.risk(tool)
            static = {"schema": to_format(tool, fmt), "etag": state.etag(tool), "risk": risk,
                      "requires_confirmation": risk == "high", "when_not_to_use": when_not_to_use(tool)}
            state.entries[key] = static
        entry: dict[str, Any] = {
            "schema": static["schema"],
            "name": tool.name,
            "score": round(float(hit.score), 4),
            "why": hit.why or "",
            "etag": static["etag"],
            "risk": static["risk"],
            "requires_confirmation": static["requires_confirmation"],
        }
        if static["when_not_to_use"]:
            entry["when_not_to_use"] = static["when_not_to_use"]
        if hit.tokens is not None:
            entry["tokens"] = hit.tokens
        return entry

    async def _off_loop(self, rank: Callable[..., Any], *args: Any) -> Any:
        """Run a search in a worker thread, or inline when the last one was quick.

        A thread hand-off costs a context switch and GIL ping-pong between the loop and
        the worker (measured: more server CPU than a small BM25 search itself), so a
        search whose predecessor took under ``_INLINE_RANK_S`` runs on the event loop;
        a slow one (large index, dense encoder) keeps the loop free for other requests.
        The search is timed in CPU time of its thread, not wall time: on a busy machine
        a quick search preempted midway would otherwise look slow and send the next
        one to a thread, adding the hand-off cost just when CPU is short.
        """
        def timed() -> Any:
            t0 = time.thread_time()
            try:
                return rank(*args)
            finally:
                self._last_rank_s = time.thread_time() - t0

        if self._last_rank_s < _INLINE_RANK_S:
            return timed()
        return await asyncio.to_thread(timed)

    # ------------------------------------------------------------------- use_tool
    async def use_tool(self, query: str | Mapping[str, Any], params: Mapping[str, Any] | None, *,
                       confirm: bool = False, session: str | None = None) -> dict[str, Any]:
        """Find the best tool for ``query`` and run it with ``params``.

        The parameter names take part in ranking (as extracted arguments), so a tool
        that takes the given parameters wins over a similar one that does not.

        Args:
            query: As for :meth:`find_tools`.
            params: The tool's arguments.
            confirm: Set to ``True`` only after the user approved a high-risk call.
            session: The client session (attributes the call to its last ``find_tools``
                in the usage log; no schema cache here).

        Returns:
            ``{"tool": name, "result": <executor result>}``.

        Raises:
            GatewayError: The :meth:`find_tools` query errors, ``no_match``, and the
                :meth:`call_tool` errors.
        """
        check_session_id(session)
        args = parse_arguments(params)
        q, text = parse_query(query, max_query_chars=self._config.max_query_chars)
        q = self._with_arguments(q, args)
        state = self._state
        hits = await self._off_loop(rank, state, self._config.routing, q, text, _USE_TOOL_FETCH, ())
        # The arguments' names are the strongest evidence of which tool is meant: take the
        # best-ranked tool that accepts every one of them, else the best-ranked tool
        # (argument validation then names what is wrong).
        given = set(args)
        fitting = [h for h in hits if given <= {p.name for p in h.tool.parameters}]
        hits = (fitting or hits)[:1]
        if not hits:
            raise GatewayError("no_match", "no tool matches the query; rephrase it or call find_tools")
        result = await self._execute(state, hits[0].tool, args, confirm, session=session, via="use_tool", query=q)
        return {"tool": hits[0].tool.name, "result": result}

    @staticmethod
    def _with_arguments(q: str | Query, args: Mapping[str, Any]) -> str | Query:
        named = {k: _argument_text(v) for k, v in args.items() if isinstance(k, str) and k.strip()}
        if not named:
            return q
        if isinstance(q, str):
            return Query(needs=(ToolNeed(q, q, q),), arguments=named, text=q)
        if q.arguments:
            return q  # the caller's own argument roles describe intent better than values
        return Query(needs=q.needs, arguments=named, text=q.text)

    # ------------------------------------------------------------------ call_tool
    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None, *,
                        confirm: bool = False, session: str | None = None) -> dict[str, Any]:
        """Run a tool by name (typically one returned by :meth:`find_tools`).

        Args:
            name: The tool name.
            arguments: Its arguments (``None`` means none).
            confirm: Set to ``True`` only after the user approved a high-risk call.
            session: The client session, for the usage log (as in :meth:`find_tools`).

        Returns:
            ``{"tool": name, "result": <executor result>}``.

        Raises:
            GatewayError: ``unknown_tool`` (with ``did_you_mean``), ``invalid_params``
                (naming the path; nothing has run), ``confirmation_required``,
                ``upstream_error`` (the executor's message kept), ``upstream_timeout``.
        """
        if not isinstance(name, str):
            raise GatewayError("bad_request", f"the tool name must be a string, got {type(name).__name__}")
        state = self._state
        tool = state.by_name.get(name)
        if tool is None:
            suggestions = await asyncio.to_thread(self._suggest, state, name)
            hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
            raise GatewayError("unknown_tool", f"no tool named {name!r}{hint}", tool=name,
                               did_you_mean=suggestions)
        check_session_id(session)
        result = await self._execute(state, tool, parse_arguments(arguments), confirm, session=session)
        return {"tool": name, "result": result}

    def _suggest(self, state: IndexState, name: str) -> list[str]:
        """Close spellings first, then what the index finds for the name's words."""
        names = list(state.by_name)
        lowered = {n.lower(): n for n in names}
        out: list[str] = []
        if name.lower() in lowered:
            out.append(lowered[name.lower()])
        out += difflib.get_close_matches(name, names, n=_SUGGESTIONS, cutoff=0.6)
        words = " ".join(p for p in _CAMEL.split(name) if p)
        if words.strip():
            try:
                out += [h.name for h in state.index.search(words, k=_SUGGESTIONS) if h.matched]
            except QueryError:
                pass
        return list(dict.fromkeys(out))[:_SUGGESTIONS]

    async def _execute(self, state: IndexState, tool: Tool, args: dict[str, Any], confirm: bool, *,
                       session: str | None = None, via: str = "call_tool", query: Any = None) -> Any:
        if self._recorder is None:
            return await self._run_tool(state, tool, args, confirm)
        try:
            result = await self._run_tool(state, tool, args, confirm)
        except GatewayError as err:
            self._recorder.used(session, tool.id, via=via, error_code=err.code, arguments=args, query=query,
                                index=state.index)
            raise
        self._recorder.used(session, tool.id, via=via, error_code=None, result=result, arguments=args, query=query,
                            index=state.index)
        return result

    async def _run_tool(self, state: IndexState, tool: Tool, args: dict[str, Any], confirm: bool) -> Any:
        # Validation comes first so a user is never asked to approve a call that
        # would be rejected anyway.
        await check_arguments(state.validators, tool, args, timeout=self._config.validation_timeout)
        if self.risk(tool) == "high" and confirm is not True:
            raise GatewayError(
                "confirmation_required",
                f"{tool.name!r} is high-risk; ask the user to approve this call, then repeat "
                "it with confirm=true",
                tool=tool.name, risk="high",
            )
        if self._executor is None:
            raise GatewayError("upstream_error", "this gateway has no executor configured", tool=tool.name)
        timeout = self._config.call_timeout
        try:
            call = self._executor(tool, args)
            result = await (asyncio.wait_for(call, timeout) if timeout is not None else call)
        except GatewayError:
            raise
        except TimeoutError:  # asyncio.TimeoutError is TimeoutError on Python >= 3.11
            limit = f" within {timeout:g} s" if timeout is not None else ""
            raise GatewayError("upstream_timeout", f"{tool.name!r} did not answer{limit}",
                               tool=tool.name) from None
        except Exception as exc:  # any executor failure becomes a structured error
            raise GatewayError("upstream_error", str(exc) or type(exc).__name__, tool=tool.name,
                               type=type(exc).__name__) from exc
        check_result_size(tool, result, self._config.max_result_bytes)
        return result
