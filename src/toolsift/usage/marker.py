"""Which files are toolsift usage logs: the SQLite application mark, checked before any write.

A usage log carries ``PRAGMA application_id`` = :data:`APPLICATION_ID` (bytes 68-71 of
the SQLite header) and ``PRAGMA user_version`` = its schema version (bytes 60-63). Only a
missing or empty (0-byte) file becomes a new log; any other file without the mark is
refused **untouched**: opening it read-write would already change it (``journal_mode=WAL``
rewrites its header and creates ``-wal``/``-shm`` files), so :func:`check` reads the
header as bytes and, for a marked file, the table names through an ``immutable``
read-only URI (no locks, no journal, no side files).

Logs written before the mark existed (schema version 1, application id 0) are refused
too, with a message naming the one-time migration: ``python -m toolsift.usage.marker
FILE`` (:func:`adopt`) marks a file whose tables and columns are exactly a usage log's,
and refuses anything else.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path

from ..errors import ToolsiftError

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "UsageLogError", "adopt", "check"]

#: ``PRAGMA application_id`` of a toolsift usage log: "TSUL" in ASCII.
APPLICATION_ID = 0x5453554C
#: Version of the database layout; a newer file is refused.
SCHEMA_VERSION = 1

_SQLITE_MAGIC = b"SQLite format 3\x00"
#: Every table and column of schema version 1, in order (what :func:`adopt` requires).
COLUMNS: dict[str, tuple[str, ...]] = {
    "meta": ("key", "value"),
    "finds": ("id", "ts", "run", "session", "client", "index_version", "query_text", "query_json", "intent",
              "returned"),
    "uses": ("id", "ts", "run", "session", "client", "index_version", "tool_id", "via", "validated", "outcome",
             "error_code", "query_text", "intent", "arguments"),
}


class UsageLogError(ToolsiftError):
    """The usage log cannot be opened, is of a newer schema, or a record is malformed."""


def _header(path: Path) -> bytes | None:
    """The first 100 bytes of ``path``; ``None`` if it does not exist."""
    try:
        with open(path, "rb") as fh:
            return fh.read(100)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageLogError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _schema(path: Path) -> dict[str, tuple[str, ...]]:
    """Table -> column names, read through an immutable read-only URI (no write of any kind)."""
    uri = f"{path.absolute().as_uri()}?mode=ro&immutable=1"
    try:
        db = sqlite3.connect(uri, uri=True)
        try:
            names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            return {n: tuple(r[1] for r in db.execute(f'PRAGMA table_info("{n.replace(chr(34), "")}")'))
                    for n in names}
        finally:
            db.close()
    except (sqlite3.Error, UnicodeDecodeError, ValueError) as exc:
        # A bit flip in the schema can make a name undecodable: still a typed error.
        raise UsageLogError(f"{path}: damaged or unreadable usage log ({type(exc).__name__}: {exc}); "
                            "restore it from a backup (left untouched)") from None


def check(path: Path) -> bool:
    """Whether ``path`` is a new log (missing or 0 bytes: ``True``) or a marked one (``False``).

    Raises:
        UsageLogError: Anything else, before any byte of it is written: not SQLite, no
            toolsift mark (an older toolsift's log is told how to migrate), a newer
            schema version, or a marked file whose tables are not a usage log's.
    """
    head = _header(path)
    if not head:
        return True
    if len(head) < 100 or not head.startswith(_SQLITE_MAGIC):
        raise UsageLogError(f"{path}: not an SQLite file, so not a toolsift usage log (left untouched)")
    version = int.from_bytes(head[60:64], "big", signed=True)
    app_id = int.from_bytes(head[68:72], "big", signed=True)
    if app_id != APPLICATION_ID:
        if app_id == 0 and version == SCHEMA_VERSION and _schema(path) == COLUMNS:
            raise UsageLogError(f"{path}: a usage log written by an older toolsift, without the usage-log mark "
                                f"(left untouched); if it is yours, mark it once with: "
                                f"python -m toolsift.usage.marker {path}")
        raise UsageLogError(f"{path}: an SQLite file without the toolsift usage-log mark "
                            f"(application_id {app_id:#x}), so not a toolsift usage log (left untouched)")
    if version > SCHEMA_VERSION:
        raise UsageLogError(f"{path}: usage log schema version {version} is newer than this toolsift "
                            f"reads ({SCHEMA_VERSION})")
    tables = set(_schema(path))
    if tables != set(COLUMNS):
        raise UsageLogError(f"{path}: marked as a usage log but its tables are {sorted(tables)}: damaged; "
                            "restore it from a backup (left untouched)")
    return False


def adopt(path: str | Path) -> None:
    """Mark an unmarked usage log of an older toolsift (schema version 1, exactly its
    tables and columns) as a usage log. Any other file is refused and left as it was.

    Raises:
        UsageLogError: Not such a log, or already marked.
    """
    path = Path(path)
    head = _header(path)
    if head is None:
        raise UsageLogError(f"{path}: no such file")
    if len(head) < 100 or not head.startswith(_SQLITE_MAGIC):
        raise UsageLogError(f"{path}: not an SQLite file (left untouched)")
    version = int.from_bytes(head[60:64], "big", signed=True)
    app_id = int.from_bytes(head[68:72], "big", signed=True)
    if app_id == APPLICATION_ID:
        raise UsageLogError(f"{path}: already marked as a toolsift usage log")
    if app_id != 0 or version != SCHEMA_VERSION or _schema(path) != COLUMNS:
        raise UsageLogError(f"{path}: not a usage log of an older toolsift (application_id {app_id:#x}, "
                            f"user_version {version}, or other tables); left untouched")
    try:
        db = sqlite3.connect(path, isolation_level=None)
        try:
            db.execute(f"PRAGMA application_id={APPLICATION_ID}")
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise UsageLogError(f"{path}: cannot mark ({exc})") from None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m toolsift.usage.marker FILE...``: :func:`adopt` each file."""
    p = argparse.ArgumentParser(prog="python -m toolsift.usage.marker",
                                description="Mark usage logs written by an older toolsift (no usage-log mark).")
    p.add_argument("files", nargs="+")
    args = p.parse_args(argv)
    status = 0
    for name in args.files:
        try:
            adopt(name)
            print(f"{name}: marked as a toolsift usage log")
        except UsageLogError as exc:
            print(f"toolsift: error: {exc}", file=sys.stderr)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
