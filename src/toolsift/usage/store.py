"""The usage log: an embedded SQLite database (WAL) of ``find_tools`` requests and tool uses.

No server, standard library only. Several threads (and processes) may write; readers
never block writers (WAL). The schema is versioned (``PRAGMA user_version``), every log
carries the toolsift mark (``PRAGMA application_id``, :mod:`toolsift.usage.marker`)
and a file without it is refused before any write. Described in docs/usage-learning.md:

``finds``  one row per ``find_tools`` request::

    id INTEGER PRIMARY KEY      order of arrival
    ts REAL                     Unix time (seconds)
    run TEXT                    the recording process (a gateway run); sessions are per run
    session TEXT NULL           the client session (NULL: no session, never attributed)
    client TEXT NULL            an optional client identity (auth principal, tenant)
    index_version TEXT          the index that answered
    query_text TEXT             the query as text (a structured query: its texts joined)
    query_json TEXT NULL        the structured query as JSON (NULL for plain text)
    intent TEXT                 what becomes an example intent: the text, or the needs' intents
    returned TEXT               JSON list of the returned tool ids, best first

``uses``  one row per tool call (``call_tool``, ``use_tool``) or ``record_use``::

    id, ts, run, session, client, index_version   as above
    tool_id TEXT                the tool called
    via TEXT                    'call_tool' | 'use_tool' | 'record_use'
    validated INTEGER NULL      1 arguments passed the schema, 0 they did not, NULL unknown
    outcome TEXT                'success' | 'invalid_params' | 'error' | 'timeout' | 'not_run'
    error_code TEXT NULL        the gateway error code of a failure
    query_text TEXT NULL        the use's own query (use_tool, record_use)
    intent TEXT NULL            its intent (as for finds)
    arguments TEXT NULL         JSON arguments, only with ``store_arguments=True``

``meta``  key/value pairs: ``schema_version``, ``created``.

Retention: rows older than ``max_age_days`` and the oldest rows beyond ``max_rows``
(finds and uses each) are deleted, checked every ``prune_every`` writes.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .marker import APPLICATION_ID, SCHEMA_VERSION, UsageLogError, check

__all__ = ["SCHEMA_VERSION", "OUTCOMES", "UsageLogError", "FindRow", "UseRow", "UsageLog"]

#: What a tool use can end with. Only ``success`` ever counts for learning.
OUTCOMES: tuple[str, ...] = ("success", "invalid_params", "error", "timeout", "not_run")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS finds (
    id INTEGER PRIMARY KEY, ts REAL NOT NULL, run TEXT NOT NULL, session TEXT, client TEXT,
    index_version TEXT NOT NULL, query_text TEXT NOT NULL, query_json TEXT, intent TEXT NOT NULL,
    returned TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS uses (
    id INTEGER PRIMARY KEY, ts REAL NOT NULL, run TEXT NOT NULL, session TEXT, client TEXT,
    index_version TEXT NOT NULL, tool_id TEXT NOT NULL, via TEXT NOT NULL, validated INTEGER,
    outcome TEXT NOT NULL, error_code TEXT, query_text TEXT, intent TEXT, arguments TEXT);
CREATE INDEX IF NOT EXISTS finds_session ON finds (run, session, ts);
CREATE INDEX IF NOT EXISTS uses_session ON uses (run, session, ts);
CREATE INDEX IF NOT EXISTS finds_ts ON finds (ts);
CREATE INDEX IF NOT EXISTS uses_ts ON uses (ts);
"""

_VIAS = ("call_tool", "use_tool", "record_use")


@dataclass(frozen=True)
class FindRow:
    """One logged ``find_tools`` request (see the module docstring for the fields)."""

    id: int
    ts: float
    run: str
    session: str | None
    client: str | None
    index_version: str
    query_text: str
    query_json: str | None
    intent: str
    returned: tuple[str, ...]


@dataclass(frozen=True)
class UseRow:
    """One logged tool use (see the module docstring for the fields)."""

    id: int
    ts: float
    run: str
    session: str | None
    client: str | None
    index_version: str
    tool_id: str
    via: str
    validated: bool | None
    outcome: str
    error_code: str | None
    query_text: str | None
    intent: str | None


def _text(value: Any, what: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise UsageLogError(f"usage record: {what} must be a non-empty string, got {value!r}")
    return value


_NUM = (int, float)
_OPT = (str, type(None))
#: Python types of the columns finds() and uses() select, in order: a damaged file (a
#: bit flip can turn a TEXT cell into a BLOB) is refused instead of feeding bytes onward.
_FIND_TYPES = (int, _NUM, str, _OPT, _OPT, str, str, _OPT, str, str)
_USE_TYPES = (int, _NUM, str, _OPT, _OPT, str, str, str, (int, type(None)), str, _OPT, _OPT, _OPT)


def _check_row(path: Path, table: str, row: tuple, types: tuple) -> None:
    for i, (value, want) in enumerate(zip(row, types)):
        if not isinstance(value, want):
            raise UsageLogError(f"{path}: damaged log: {table} row {row[0]!r}, column {i} holds a "
                                f"{type(value).__name__}; restore it from a backup")


class UsageLog:
    """An embedded usage log (SQLite, WAL) with a size and age cap.

    Args:
        path: The database file (created with its folder if missing).
        max_rows: Keep at most this many finds and this many uses (oldest dropped).
        max_age_days: Drop rows older than this (``None``: no age limit).
        store_arguments: Also store tool-call arguments (off by default: they may hold
            personal data, and learning never reads them).
        prune_every: Apply the caps after this many writes.

    Raises:
        UsageLogError: The file is not a usage log, or has a newer schema version.
    """

    def __init__(self, path: str | os.PathLike, *, max_rows: int = 1_000_000, max_age_days: float | None = 90.0,
                 store_arguments: bool = False, prune_every: int = 1000) -> None:
        if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
            raise UsageLogError(f"max_rows must be an integer >= 1, got {max_rows!r}")
        if max_age_days is not None and (isinstance(max_age_days, bool) or not isinstance(max_age_days, (int, float))
                                         or max_age_days <= 0):
            raise UsageLogError(f"max_age_days must be a positive number or None, got {max_age_days!r}")
        if isinstance(prune_every, bool) or not isinstance(prune_every, int) or prune_every < 1:
            raise UsageLogError(f"prune_every must be an integer >= 1, got {prune_every!r}")
        self.path = Path(path)
        self.max_rows = max_rows
        self.max_age_days = max_age_days
        self.store_arguments = bool(store_arguments)
        self._prune_every = prune_every
        self._writes = 0
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        new = check(self.path)  # read-only: a file that is not ours is never touched
        try:
            # One connection shared by this object's threads, serialised by _lock;
            # autocommit mode, with explicit transactions for batches.
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
        except sqlite3.Error as exc:
            raise UsageLogError(f"{self.path}: cannot open ({exc})") from None
        try:
            if new:
                self._create()
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            self._db.close()
            raise UsageLogError(f"{self.path}: not a usable usage log ({type(exc).__name__}: {exc})") from None
        except BaseException:
            self._db.close()
            raise

    # ------------------------------------------------------------------ schema
    def _create(self) -> None:
        """Make the schema and the mark in one transaction, unless another process made the
        log meanwhile; a file that turned into anything else meanwhile is refused unchanged."""
        with self._transaction():
            app_id = self._db.execute("PRAGMA application_id").fetchone()[0]
            if app_id == APPLICATION_ID:
                return  # created by a concurrent opener
            if app_id != 0 or self._db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]:
                raise UsageLogError(f"{self.path}: changed while being opened; not a toolsift usage log")
            for statement in filter(str.strip, _SCHEMA.split(";")):
                self._db.execute(statement)
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('created', ?)", (str(time.time()),))
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            self._db.execute(f"PRAGMA application_id={APPLICATION_ID}")

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction (the connection is in autocommit mode otherwise)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # ------------------------------------------------------------------ writes
    def add_find(self, *, run: str, session: str | None, query_text: str, intent: str,
                 returned: Sequence[str], index_version: str = "", query_json: str | None = None,
                 client: str | None = None, ts: float | None = None) -> None:
        """Log one ``find_tools`` request.

        Raises:
            UsageLogError: A field is missing or of the wrong type.
        """
        self.add_many(finds=[dict(run=run, session=session, query_text=query_text, intent=intent,
                                  returned=returned, index_version=index_version, query_json=query_json,
                                  client=client, ts=ts)])

    def add_use(self, *, run: str, session: str | None, tool_id: str, outcome: str, via: str = "call_tool",
                validated: bool | None = None, error_code: str | None = None, query_text: str | None = None,
                intent: str | None = None, arguments: Any = None, index_version: str = "",
                client: str | None = None, ts: float | None = None) -> None:
        """Log one tool use. ``arguments`` are stored only with ``store_arguments=True``.

        Raises:
            UsageLogError: A field is missing, an unknown ``outcome`` or ``via``.
        """
        self.add_many(uses=[dict(run=run, session=session, tool_id=tool_id, outcome=outcome, via=via,
                                 validated=validated, error_code=error_code, query_text=query_text,
                                 intent=intent, arguments=arguments, index_version=index_version,
                                 client=client, ts=ts)])

    def add_many(self, *, finds: Sequence[dict] = (), uses: Sequence[dict] = ()) -> None:
        """Log several records in one transaction (what the gateway recorder does).

        Raises:
            UsageLogError: A record is malformed (nothing of the batch is written then).
        """
        now = time.time()
        find_rows = [self._find_row(f, now) for f in finds]
        use_rows = [self._use_row(u, now) for u in uses]
        if not find_rows and not use_rows:
            return
        with self._lock:
            try:
                with self._transaction():
                    self._db.executemany(
                        "INSERT INTO finds (ts, run, session, client, index_version, query_text, query_json, "
                        "intent, returned) VALUES (?,?,?,?,?,?,?,?,?)", find_rows)
                    self._db.executemany(
                        "INSERT INTO uses (ts, run, session, client, index_version, tool_id, via, validated, "
                        "outcome, error_code, query_text, intent, arguments) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                        use_rows)
            except sqlite3.Error as exc:
                raise UsageLogError(f"{self.path}: cannot write ({exc})") from None
            self._writes += len(find_rows) + len(use_rows)
            if self._writes >= self._prune_every:
                self._writes = 0
                self._prune_locked()

    @staticmethod
    def _find_row(f: dict, now: float) -> tuple:
        returned = f.get("returned", ())
        if isinstance(returned, str) or not all(isinstance(t, str) for t in returned):
            raise UsageLogError(f"usage record: returned must be a list of tool ids, got {returned!r}")
        return (float(f.get("ts") or now), _text(f.get("run"), "run"), _text(f.get("session"), "session", optional=True),
                _text(f.get("client"), "client", optional=True), str(f.get("index_version") or ""),
                _text(f.get("query_text"), "query_text"), f.get("query_json"), _text(f.get("intent"), "intent"),
                json.dumps(list(returned)))

    def _use_row(self, u: dict, now: float) -> tuple:
        if u.get("outcome") not in OUTCOMES:
            raise UsageLogError(f"usage record: outcome must be one of {', '.join(OUTCOMES)}, got {u.get('outcome')!r}")
        if u.get("via", "call_tool") not in _VIAS:
            raise UsageLogError(f"usage record: via must be one of {', '.join(_VIAS)}, got {u.get('via')!r}")
        validated = u.get("validated")
        args = u.get("arguments")
        stored = json.dumps(args, ensure_ascii=False, default=str) if self.store_arguments and args is not None else None
        return (float(u.get("ts") or now), _text(u.get("run"), "run"), _text(u.get("session"), "session", optional=True),
                _text(u.get("client"), "client", optional=True), str(u.get("index_version") or ""),
                _text(u.get("tool_id"), "tool_id"), u.get("via", "call_tool"),
                None if validated is None else int(bool(validated)), u["outcome"], u.get("error_code"),
                _text(u.get("query_text"), "query_text", optional=True), _text(u.get("intent"), "intent", optional=True),
                stored)

    # ---------------------------------------------------------------- retention
    def prune(self) -> int:
        """Apply the age and row caps now; returns the number of rows deleted."""
        with self._lock:
            return self._prune_locked()

    def _prune_locked(self) -> int:
        deleted = 0
        with self._transaction():
            for table in ("finds", "uses"):
                if self.max_age_days is not None:
                    cut = time.time() - self.max_age_days * 86400.0
                    deleted += self._db.execute(f"DELETE FROM {table} WHERE ts < ?", (cut,)).rowcount
                # Keep the newest max_rows by id (ids grow with arrival).
                deleted += self._db.execute(
                    f"DELETE FROM {table} WHERE id <= (SELECT id FROM {table} ORDER BY id DESC LIMIT 1 OFFSET ?)",
                    (self.max_rows,)).rowcount
        return deleted

    # ------------------------------------------------------------------- reads
    def finds(self) -> Iterator[FindRow]:
        """Every logged find, oldest first."""
        sql = ("SELECT id, ts, run, session, client, index_version, query_text, query_json, intent, returned "
               "FROM finds ORDER BY id")
        for r in self._read(sql, ()):
            _check_row(self.path, "finds", r, _FIND_TYPES)
            try:
                returned = json.loads(r[9])
                if not isinstance(returned, list) or not all(isinstance(t, str) for t in returned):
                    raise ValueError("not a list of tool ids")
            except (ValueError, TypeError, RecursionError) as exc:
                raise UsageLogError(f"{self.path}: finds row {r[0]}: damaged 'returned' column ({exc})") from None
            yield FindRow(*r[:9], tuple(returned))  # type: ignore[call-arg]  # nine checked columns

    def uses(self) -> Iterator[UseRow]:
        """Every logged use, oldest first."""
        sql = ("SELECT id, ts, run, session, client, index_version, tool_id, via, validated, outcome, error_code, "
               "query_text, intent FROM uses ORDER BY id")
        for r in self._read(sql, ()):
            _check_row(self.path, "uses", r, _USE_TYPES)
            yield UseRow(*r[:8], None if r[8] is None else bool(r[8]), *r[9:])  # type: ignore[call-arg]

    def _read(self, sql: str, args: tuple) -> list[tuple]:
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise UsageLogError(f"{self.path}: cannot read ({exc})") from None
            except UnicodeDecodeError as exc:  # a damaged text cell (bit flip): not UTF-8
                raise UsageLogError(f"{self.path}: damaged log, a text cell is not UTF-8 "
                                    f"(byte at offset {exc.start}); restore it from a backup") from None

    def counts(self) -> dict[str, int]:
        """``{"finds": n, "uses": n, "successful_uses": n}``."""
        (f,), (u,), (s,) = (self._read(sql, ())[0] for sql in (
            "SELECT COUNT(*) FROM finds", "SELECT COUNT(*) FROM uses",
            "SELECT COUNT(*) FROM uses WHERE outcome = 'success'"))
        return {"finds": f, "uses": u, "successful_uses": s}

    def schema_version(self) -> int:
        """The schema version of the file."""
        return int(self._read("PRAGMA user_version", ())[0][0])

    def close(self) -> None:
        """Close the database (further calls fail)."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> UsageLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"UsageLog({str(self.path)!r})"
