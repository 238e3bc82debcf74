"""Recording usage: the gateway's hook object and the library's ``record_use``.

:class:`UsageRecorder` is the one object a :class:`~toolsift.gateway.Gateway` is given
(``Gateway(index, recorder=...)``). The gateway calls :meth:`UsageRecorder.found` after
each ``find_tools`` and :meth:`UsageRecorder.used` after each tool call; both only put
a record on a queue, and a background thread writes batches to the
:class:`~toolsift.usage.store.UsageLog`, so a request never waits for the disk and a
failing disk never fails a request (records are then dropped and counted).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import queue
import secrets
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..schema import Query
from .store import OUTCOMES, UsageLog, UsageLogError

__all__ = ["UsageRecorder", "client_scope", "record_use", "intent_of", "outcome_of"]

log = logging.getLogger("toolsift.usage")

_BATCH = 256
_QUEUE = 100_000

#: The client identity of the request being served (set by the transport, e.g. the HTTP
#: peer address): per request, so one gateway records many clients.
_CLIENT: contextvars.ContextVar[str | None] = contextvars.ContextVar("toolsift_usage_client", default=None)


@contextlib.contextmanager
def client_scope(identity: str | None) -> Iterator[None]:
    """Record ``identity`` as the client of every find and use made inside the block
    (the transport wraps each request in one); ``None`` leaves the recorder's default."""
    token = _CLIENT.set(identity)
    try:
        yield
    finally:
        _CLIENT.reset(token)


def intent_of(query: str | Query | Mapping[str, Any]) -> str:
    """The intent a query contributes as an example: the text itself, or a structured
    query's user intents (its tool descriptions where an intent is empty)."""
    if isinstance(query, str):
        return " ".join(query.split())
    if isinstance(query, Mapping):
        query = Query.from_dict(query)
    if isinstance(query, Query):
        parts = [n.user_intent or n.tool_description or n.expected_response for n in query.needs]
        return " ".join(" ".join(p for p in parts if p).split()) or " ".join(query.text.split())
    raise TypeError(f"query must be text, a Query or its dict form, got {type(query).__name__}")


def outcome_of(error_code: str | None, result: Any = None) -> tuple[str, bool | None]:
    """``(outcome, arguments validated)`` of a tool call from the gateway error code it
    raised (``None``: it returned ``result``). A proxied MCP result with ``isError``
    is an error although the call returned."""
    if error_code is None:
        if isinstance(result, Mapping) and (result.get("isError") is True or result.get("is_error") is True):
            return "error", True
        return "success", True
    if error_code == "invalid_params":
        return "invalid_params", False
    if error_code == "upstream_timeout":
        return "timeout", True
    if error_code == "confirmation_required":
        return "not_run", True
    return "error", None if error_code in ("bad_request", "unknown_tool") else True


def _query_json(query: Any, parsed: Query) -> str:
    """A structured query as JSON: as the client sent it, else rebuilt from ``parsed``."""
    if isinstance(query, Mapping):
        return json.dumps(query, ensure_ascii=False, default=str)
    if isinstance(query, str):
        return query.strip()  # the client sent the structured form as a JSON string
    return json.dumps(parsed.to_dict(), ensure_ascii=False)


class UsageRecorder:
    """Records ``find_tools`` requests and tool uses into a usage log, off the request path.

    Args:
        log: The :class:`UsageLog`, or a path to open one at.
        client: An optional client identity stored with every record that has no
            per-request identity (see :func:`client_scope`; over HTTP the peer address),
            usable as the voter in attribution and counted by ``LearnConfig.min_clients``.

    Attributes:
        run: This recorder's random run id: sessions are told apart per run, so the
            ``"stdio"`` session of two gateway processes are two sessions.
        dropped: Records lost (queue full or write errors).
    """

    def __init__(self, log: UsageLog | str, *, client: str | None = None) -> None:
        self.log = log if isinstance(log, UsageLog) else UsageLog(log)
        self._owns_log = not isinstance(log, UsageLog)
        self.client = client
        self.run = f"{time.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(4)}"
        self.dropped = 0
        self._versions: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._n_versions = 0
        self._queue: queue.Queue = queue.Queue(maxsize=_QUEUE)
        self._closed = False
        self._thread = threading.Thread(target=self._writer, name="toolsift-usage-writer", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------ index versions
    def label(self, index: Any, version: str) -> None:
        """Name the version of ``index`` (e.g. the learned index's directory)."""
        self._versions[index] = version

    def version_of(self, index: Any) -> str:
        """The version label of ``index``: set by :meth:`label`, else ``run#n`` in order seen."""
        got = self._versions.get(index)
        if got is None:
            self._n_versions += 1
            got = self._versions[index] = f"{self.run}#{self._n_versions}"
        return got

    # ------------------------------------------------------------------- hooks
    def found(self, session: str | None, query: Any, parsed: str | Query, text: str, returned: Sequence[str],
              index: Any) -> None:
        """Hook: a ``find_tools`` request answered with ``returned`` (tool ids, best first)."""
        try:
            structured = None if isinstance(parsed, str) else _query_json(query, parsed)
            rec = dict(run=self.run, session=session, client=_CLIENT.get() or self.client, query_text=text,
                       intent=intent_of(parsed), returned=list(returned), index_version=self.version_of(index),
                       query_json=structured, ts=time.time())
        except Exception as exc:  # noqa: BLE001 - recording must never fail a request
            self._drop(exc)
            return
        self._put(("find", rec))

    def used(self, session: str | None, tool_id: str, *, via: str, error_code: str | None, result: Any = None,
             arguments: Any = None, query: str | Query | None = None, index: Any = None) -> None:
        """Hook: a tool call ended, with gateway error ``error_code`` or ``None`` and ``result``."""
        try:
            outcome, validated = outcome_of(error_code, result)
            rec = dict(run=self.run, session=session, client=_CLIENT.get() or self.client, tool_id=tool_id, via=via,
                       outcome=outcome, validated=validated, error_code=error_code,
                       query_text=None if query is None else (query if isinstance(query, str) else query.text
                                                              or intent_of(query)),
                       intent=None if query is None else intent_of(query), arguments=arguments,
                       index_version=self.version_of(index) if index is not None else "", ts=time.time())
        except Exception as exc:  # noqa: BLE001 - recording must never fail a request
            self._drop(exc)
            return
        self._put(("use", rec))

    def record_use(self, query: str | Query | Mapping[str, Any], tool_id: str, outcome: str | bool, *,
                   session: str | None = None) -> None:
        """Library API: ``query`` was served by ``tool_id`` with ``outcome``.

        Args:
            query: The request (text, :class:`Query` or its dict form).
            tool_id: The tool that was used.
            outcome: ``"success"`` (or ``True``) when the tool did the job; any other
                outcome of :data:`~toolsift.usage.store.OUTCOMES` (or ``False``) never counts.
            session: The end user's session or conversation, when requests come from
                users who might not be trustworthy; records without one each count as
                one independent observation.

        Raises:
            UsageLogError: Unknown outcome, empty tool id or query.
        """
        _record(self.log, self.run, self.client, query, tool_id, outcome, session)

    # ----------------------------------------------------------------- writing
    def _put(self, item: tuple[str, dict]) -> None:
        if self._closed:
            self.dropped += 1
            return
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self.dropped += 1

    def _drop(self, exc: BaseException) -> None:
        self.dropped += 1
        log.warning("usage record dropped: %s", exc)

    def _writer(self) -> None:
        while True:
            item = self._queue.get()
            batch = [item]
            while len(batch) < _BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(i is None for i in batch)
            finds = [r for i in batch if i is not None and i[0] == "find" for r in (i[1],)]
            uses = [r for i in batch if i is not None and i[0] == "use" for r in (i[1],)]
            try:
                self.log.add_many(finds=finds, uses=uses)
            except Exception as exc:  # noqa: BLE001 - a full disk must not take the gateway down
                self.dropped += len(finds) + len(uses)
                log.warning("usage log write failed, %d record(s) dropped: %s", len(finds) + len(uses), exc)
            for _ in batch:
                self._queue.task_done()
            if stop:
                return

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued record is written; returns whether it finished in time."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)
        return True

    def close(self) -> None:
        """Write what is queued, stop the writer, and close the log if this recorder opened it."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join(timeout=30)
        if self._owns_log:
            self.log.close()

    def __enter__(self) -> UsageRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def record_use(query: str | Query | Mapping[str, Any], tool_id: str, outcome: str | bool, *,
               log: UsageLog | UsageRecorder, session: str | None = None) -> None:
    """Library API: record that ``query`` was served by ``tool_id`` with ``outcome``
    (see :meth:`UsageRecorder.record_use`); written synchronously.

    Example:
        >>> with UsageLog("usage.db") as db:                       # doctest: +SKIP
        ...     record_use("convert 100 USD to EUR", "convert_currency", "success", log=db)
    """
    if isinstance(log, UsageRecorder):
        log.record_use(query, tool_id, outcome, session=session)
        return
    if not isinstance(log, UsageLog):
        raise TypeError(f"log must be a UsageLog or UsageRecorder, got {type(log).__name__}")
    _record(log, "library", None, query, tool_id, outcome, session)


def _record(log: UsageLog, run: str, client: str | None, query: Any, tool_id: Any, outcome: Any,
            session: str | None) -> None:
    if isinstance(outcome, bool):
        outcome = "success" if outcome else "error"
    if outcome not in OUTCOMES:
        raise UsageLogError(f"record_use: outcome must be one of {', '.join(OUTCOMES)} or a bool, got {outcome!r}")
    if not isinstance(tool_id, str) or not tool_id.strip():
        raise UsageLogError(f"record_use: tool_id must be a non-empty string, got {tool_id!r}")
    try:
        if isinstance(query, Mapping):
            query = Query.from_dict(query)  # parsed once: its "request" (or "text") is the query text
        intent = intent_of(query)
    except Exception as exc:  # noqa: BLE001 - re-raised as a typed UsageLogError
        raise UsageLogError(f"record_use: bad query ({exc})") from None
    if not intent:
        raise UsageLogError("record_use: the query is empty")
    text = query if isinstance(query, str) else query.text
    log.add_use(run=run, session=session, client=client, tool_id=tool_id, via="record_use", outcome=outcome,
                validated=None, query_text=text or intent, intent=intent)
