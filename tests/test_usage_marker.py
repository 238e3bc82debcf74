"""The usage log's mark and damaged logs (issue 37, items 2 and 4).

* a new log carries ``PRAGMA application_id`` (the toolsift mark); every other SQLite
  file without the mark is refused before any write and stays byte-for-byte and mtime
  unchanged, with no side files, even one whose tables are a subset of a log's (it was
  accepted and converted before);
* a log of an older toolsift (exactly the schema, no mark) is refused with the one-time
  migration named, and ``python -m toolsift.usage.marker`` marks it;
* 300 seeded damaged files (bit flips, truncations, foreign SQLite files): ``toolsift
  learn --dry-run`` ends with status 0 or with one ``toolsift: error:`` line and status
  2, never a traceback (a bit flip in the schema ended in ``UnicodeDecodeError``).
"""

from __future__ import annotations

import io
import os
import random
import sqlite3
from pathlib import Path

import pytest

from toolsift.cli import main
from toolsift.usage import UsageLog, UsageLogError
from toolsift.usage import marker
from toolsift.usage.marker import APPLICATION_ID, COLUMNS


def _state(path: Path) -> tuple[bytes, int, list[str]]:
    """What must not change: the bytes, the mtime (ns) and the folder's file names."""
    return path.read_bytes(), path.stat().st_mtime_ns, sorted(p.name for p in path.parent.iterdir())


def _sqlite(path: Path, statements: list[str], *, wal: bool = False, app_id: int = 0) -> Path:
    db = sqlite3.connect(path)
    if wal:
        db.execute("PRAGMA journal_mode=WAL")
    for sql in statements:
        db.execute(sql)
    if app_id:
        db.execute(f"PRAGMA application_id={app_id}")
    db.commit()
    if wal:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    for side in ("-wal", "-shm"):
        Path(f"{path}{side}").unlink(missing_ok=True)
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))  # an mtime a write would move
    return path


def _v1_tables() -> list[str]:
    """Schema version 1 as an older toolsift wrote it (no mark)."""
    from toolsift.usage.store import _SCHEMA

    return [s for s in _SCHEMA.split(";") if s.strip()] + ["PRAGMA user_version=1"]


def test_new_log_carries_the_mark(tmp_path):
    path = tmp_path / "new" / "usage.db"
    with UsageLog(path) as log:
        log.add_find(run="r", session="s", query_text="q", intent="q", returned=["a"])
    head = path.read_bytes()[:100]
    assert int.from_bytes(head[68:72], "big") == APPLICATION_ID
    assert int.from_bytes(head[60:64], "big") == 1
    with UsageLog(path) as log:  # and it opens again
        assert log.counts()["finds"] == 1
    (tmp_path / "empty.db").write_bytes(b"")  # a 0-byte file is a new log too
    with UsageLog(tmp_path / "empty.db") as log:
        assert log.counts()["finds"] == 0


FOREIGN = {
    "empty_database": ["PRAGMA user_version=0"],
    "meta_only": ["CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"],
    "finds_and_uses": ["CREATE TABLE finds (id INTEGER PRIMARY KEY, x TEXT)",
                       "CREATE TABLE uses (id INTEGER PRIMARY KEY, y TEXT)"],
    "people": ["CREATE TABLE people (name TEXT)", "INSERT INTO people VALUES ('ada')"],
    "user_version_1": ["CREATE TABLE meta (k TEXT)", "PRAGMA user_version=1"],
}


@pytest.mark.parametrize("wal", [False, True])
@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_unmarked_sqlite_files_are_refused_untouched(tmp_path, kind, wal):
    """Subsets of the log's tables were accepted and converted (WAL on, tables added)."""
    path = _sqlite(tmp_path / "app.db", FOREIGN[kind], wal=wal)
    before = _state(path)
    with pytest.raises(UsageLogError, match="usage-log mark"):
        UsageLog(path)
    assert _state(path) == before


def test_other_application_ids_are_refused_untouched(tmp_path):
    path = _sqlite(tmp_path / "app.db", _v1_tables(), app_id=0x12345678)
    before = _state(path)
    with pytest.raises(UsageLogError, match="0x12345678"):
        UsageLog(path)
    assert _state(path) == before


def test_older_toolsift_log_is_refused_with_the_migration_then_adopted(tmp_path, capsys):
    path = _sqlite(tmp_path / "old.db", [*_v1_tables(),
                                         "INSERT INTO finds (ts, run, session, index_version, query_text, intent, "
                                         "returned) VALUES (1000, 'r', 's', '', 'q', 'q', '[\"a\"]')"])
    before = _state(path)
    with pytest.raises(UsageLogError, match="python -m toolsift.usage.marker"):
        UsageLog(path)
    assert _state(path) == before
    assert marker.main([str(path)]) == 0
    with UsageLog(path) as log:
        assert [f.query_text for f in log.finds()] == ["q"]
    assert marker.main([str(path)]) == 2  # already marked
    foreign = _sqlite(tmp_path / "app.db", FOREIGN["finds_and_uses"])
    before = _state(foreign)
    assert marker.main([str(foreign)]) == 2
    assert _state(foreign) == before
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("toolsift: error:") for line in err)


def test_adopt_requires_exactly_the_columns(tmp_path):
    tables = [s.replace("arguments TEXT", "arguments TEXT, extra TEXT") for s in _v1_tables()]
    path = _sqlite(tmp_path / "near.db", tables)
    before = _state(path)
    with pytest.raises(UsageLogError, match="left untouched"):
        marker.adopt(path)
    assert _state(path) == before
    assert set(COLUMNS) == {"meta", "finds", "uses"}


# ------------------------------------------------------------------ 300 damaged files
def _good_log(path: Path) -> bytes:
    with UsageLog(path) as log:
        for i in range(25):
            log.add_find(run="r", session=f"s{i}", client=f"c{i % 7}", query_text=f"send mail {i} ünïcode",
                         intent=f"send the mail number {i}", returned=["send_email", "read_email"])
            log.add_use(run="r", session=f"s{i}", client=f"c{i % 7}", tool_id="send_email", outcome="success")
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("PRAGMA journal_mode=DELETE")  # one self-contained file to damage
    db.close()
    return path.read_bytes()


def _foreign_case(rng: random.Random, path: Path) -> None:
    names = ["meta", "finds", "uses", "people", "data"]
    tables = rng.sample(names, rng.randint(0, 3))
    sql = [f"CREATE TABLE {t} (id INTEGER PRIMARY KEY, v TEXT)" for t in tables]
    sql += [f"INSERT INTO {t} (v) VALUES ('{rng.random()}')" for t in tables]
    sql.append(f"PRAGMA user_version={rng.choice([0, 0, 1, 2])}")
    _sqlite(path, sql, wal=rng.random() < 0.5, app_id=rng.choice([0, 0, 0x0F0F0F0F]))


def test_300_damaged_files_end_as_one_line_errors(tmp_path, demo_index, capsys):
    index = demo_index.save(tmp_path / "idx")
    good = _good_log(tmp_path / "good.db")
    rng = random.Random(37)
    outcomes = {"flip": [0, 0], "truncate": [0, 0], "foreign": [0, 0]}
    cases = tmp_path / "cases"
    for n in range(300):
        kind = ("flip", "truncate", "foreign")[n % 3]
        folder = cases / str(n)
        folder.mkdir(parents=True)
        path = folder / "usage.db"
        if kind == "flip":
            damaged = bytearray(good)
            for _ in range(rng.choice([1, 1, 2, 8])):
                damaged[rng.randrange(len(damaged))] ^= 1 << rng.randrange(8)
            path.write_bytes(bytes(damaged))
        elif kind == "truncate":
            path.write_bytes(good[:rng.randrange(1, len(good))])
        else:
            _foreign_case(rng, path)
        before = _state(path)
        rc = main(["learn", str(index), "--usage", str(path), "--dry-run"], out=io.StringIO())
        err = capsys.readouterr().err
        assert rc in (0, 2), (n, kind, rc, err)
        if rc == 2:
            lines = err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("toolsift: error:"), (n, kind, err)
        assert "Traceback" not in err
        outcomes[kind][rc // 2] += 1
        if kind == "foreign":
            assert rc == 2 and _state(path) == before, (n, err)
    print(f"\nok/refused per kind: {outcomes}")
    assert outcomes["flip"][1] > 0 and outcomes["truncate"][1] > 0
