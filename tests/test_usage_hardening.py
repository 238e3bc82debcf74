"""The usage log against foreign files, damage and collusion (issue 24, item 3).

* a SQLite file that is not a toolsift log is refused and stays byte-identical (no WAL
  switch, no ``-wal``/``-shm`` files);
* a damaged log (bit flips, a text cell that is not UTF-8) is a typed error, never a
  traceback;
* colluding sessions: this test measures how many distinct client identities it takes
  to move an unrelated tool into a query's top 10 (at least 5), and shows that many
  sessions from few clients do not.
"""

from __future__ import annotations

import io
import random
import sqlite3
from pathlib import Path

import pytest

from toolsift import ToolIndex
from toolsift.cli import main
from toolsift.errors import ToolsiftError
from toolsift.usage import UsageLog
from toolsift.usage.learner import LearnConfig, learn
from toolsift.usage.store import UsageLogError


def _foreign(path: Path, *, wal: bool = False) -> bytes:
    db = sqlite3.connect(path)
    if wal:
        db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE people (name TEXT, age INTEGER)")
    db.executemany("INSERT INTO people VALUES (?, ?)", [("ada", 36), ("alan", 41)])
    db.commit()
    if wal:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    for side in ("-wal", "-shm"):
        Path(f"{path}{side}").unlink(missing_ok=True)
    return path.read_bytes()


@pytest.mark.parametrize("wal", [False, True])
def test_foreign_sqlite_file_is_refused_and_byte_identical(tmp_path, wal):
    path = tmp_path / "app.db"
    before = _foreign(path, wal=wal)
    with pytest.raises(UsageLogError, match="not a toolsift usage log"):
        UsageLog(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]  # no -wal / -shm / journal


def test_foreign_file_via_learn_cli_is_untouched(tmp_path, demo_index):
    path = tmp_path / "app.db"
    before = _foreign(path)
    src = demo_index.save(tmp_path / "idx")
    err = io.StringIO()
    assert main(["learn", str(src), "--usage", str(path), "--dry-run"], out=err) == 2
    assert path.read_bytes() == before
    assert not Path(f"{path}-wal").exists() and not Path(f"{path}-shm").exists()


def test_not_sqlite_and_newer_schema_are_refused_untouched(tmp_path):
    text = tmp_path / "notes.db"
    text.write_bytes(b"just some notes, not a database\n" * 20)
    before = text.read_bytes()
    with pytest.raises(UsageLogError, match="not an SQLite file"):
        UsageLog(text)
    assert text.read_bytes() == before


def _log(path: Path, n: int = 12) -> None:
    with UsageLog(path) as log:
        for i in range(n):
            log.add_find(run="r", session=f"s{i}", client=f"c{i}", query_text=f"send mail {i}",
                         intent=f"send the mail number {i}", returned=["send_email", "read_email"])
            log.add_use(run="r", session=f"s{i}", client=f"c{i}", tool_id="send_email", outcome="success")
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("PRAGMA journal_mode=DELETE")  # one self-contained file to damage
    db.close()


@pytest.mark.parametrize("column,value", [("returned", "x'5b22ff225d'"), ("intent", "x'73656e64ff6d61696c'"),
                                          ("intent", "CAST(x'73656e64ff6d61696c' AS TEXT)"), ("ts", "'soon'")])
def test_damaged_cell_is_a_typed_error(tmp_path, demo_index, column, value):
    """What a bit flip does to a cell: a TEXT turned BLOB (the low bit of its serial
    type), invalid UTF-8, another type. ``learn --dry-run`` died with UnicodeDecodeError."""
    path = tmp_path / "usage.db"
    _log(path)
    db = sqlite3.connect(path)
    db.execute(f"UPDATE finds SET {column} = {value} WHERE id = 3")
    db.commit()
    db.close()
    with UsageLog(path) as log, pytest.raises(UsageLogError, match="damaged|cannot read"):
        learn(demo_index, log)
    src = demo_index.save(tmp_path / "idx")
    assert main(["learn", str(src), "--usage", str(path), "--dry-run"], out=io.StringIO()) == 2


def test_damaged_returned_column_is_a_typed_error(tmp_path, demo_index):
    path = tmp_path / "usage.db"
    _log(path)
    db = sqlite3.connect(path)
    db.execute("UPDATE finds SET returned = '[\"send_email\", 7' WHERE id = 2")
    db.commit()
    db.close()
    with UsageLog(path) as log, pytest.raises(UsageLogError, match="returned"):
        learn(demo_index, log)


def test_bit_flips_never_escape_as_untyped_errors(tmp_path, demo_index):
    """80 single-bit flips anywhere in a small log: learning either works or raises a
    toolsift error (counted; a flip in unused bytes changes nothing)."""
    path = tmp_path / "usage.db"
    _log(path, n=30)
    raw = path.read_bytes()
    rng = random.Random(24)
    typed = ok = 0
    for trial in range(80):
        damaged = bytearray(raw)
        pos = rng.randrange(len(damaged))
        damaged[pos] ^= 1 << rng.randrange(8)
        case = tmp_path / f"flip{trial}.db"
        case.write_bytes(bytes(damaged))
        try:
            with UsageLog(case) as log:
                learn(demo_index, log, config=LearnConfig(train_weights=False, validate=False))
            ok += 1
        except ToolsiftError:
            typed += 1
    assert ok + typed == 80 and ok > 0


# ------------------------------------------------------------------ collusion
QUERY = "email the quarterly report to my manager"


def _rank(index: ToolIndex, query: str, tool: str) -> int:
    hits = index.search(query, k=len(index.catalog))
    return next(h.rank for h in hits if h.tool.id == tool)


def _collude(path: Path, *, clients: int, sessions_per_client: int, target: str) -> UsageLog:
    """``clients`` colluding identities, each opening ``sessions_per_client`` sessions that
    search once for ``QUERY`` and then call ``target`` successfully."""
    log = UsageLog(path)
    for c in range(clients):
        for s in range(sessions_per_client):
            sess = f"c{c}-s{s}"
            t = 1000.0 * (1 + c * sessions_per_client + s)  # ts 0 would mean "now" to the log
            log.add_find(run="r", session=sess, client=f"attacker-{c}", query_text=QUERY, intent=QUERY,
                         returned=["send_email"], ts=t)
            log.add_use(run="r", session=sess, client=f"attacker-{c}", tool_id=target, outcome="success", ts=t + 1)
    return log


@pytest.fixture(scope="module")
def victim(demo_index):
    """A tool far down the ranking of QUERY (an unrelated tool the attacker promotes)."""
    hits = demo_index.search(QUERY, k=len(demo_index.catalog))
    target = hits[-1].tool.id
    assert hits[-1].rank > 10
    return target


def test_collusion_needs_five_distinct_clients(tmp_path, demo_index, victim):
    """Measure: the fewest colluding client identities (one session each, one find and
    one valid call) that put the victim in the top 10. Before the fix it was 2."""
    before = _rank(demo_index, QUERY, victim)
    needed = None
    for n in range(1, 9):
        with _collude(tmp_path / f"n{n}.db", clients=n, sessions_per_client=1, target=victim) as log:
            res = learn(demo_index, log)
        if _rank(res.index, QUERY, victim) <= 10:
            needed = n
            break
    print(f"\nvictim {victim}: rank {before} before; colluding clients needed for the top 10: {needed}")
    assert needed is not None and needed >= 5


def test_many_sessions_from_few_clients_cannot_promote(tmp_path, demo_index, victim):
    """Sessions are free: 4 clients with 25 sessions each still move nothing."""
    with _collude(tmp_path / "few.db", clients=4, sessions_per_client=25, target=victim) as log:
        res = learn(demo_index, log)
    assert res.added == {}
    assert _rank(res.index, QUERY, victim) == _rank(demo_index, QUERY, victim)


@pytest.mark.parametrize("via", ["record_use", "find_then_call"])
def test_sessions_without_identity_are_one_anonymous_client(tmp_path, demo_index, victim, via):
    """Five sessions (library record_use, or find + call) with no client recorded are one
    anonymous identity, not five: the victim stays where it was. (Before: each session was
    its own identity and five of them put the victim in the top 10.)"""
    with UsageLog(tmp_path / "anon.db") as log:
        for s in range(5):
            t = 1000.0 * (s + 1)
            if via == "record_use":
                log.add_use(run="r", session=f"s{s}", tool_id=victim, outcome="success", via="record_use",
                            query_text=QUERY, intent=QUERY, ts=t)
            else:
                log.add_find(run="r", session=f"s{s}", query_text=QUERY, intent=QUERY, returned=["send_email"], ts=t)
                log.add_use(run="r", session=f"s{s}", tool_id=victim, outcome="success", ts=t + 1)
        res = learn(demo_index, log)
    assert res.added == {}
    assert _rank(res.index, QUERY, victim) == _rank(demo_index, QUERY, victim) > 10


class _Index:
    """Stands for an index (the recorder only labels it)."""


_IX = _Index()


def test_client_scope_fills_in_the_client_per_request(tmp_path):
    """The transport's per-request identity (HTTP: the peer address) reaches the log;
    outside a scope the recorder's own default is kept."""
    from toolsift.usage.recorder import UsageRecorder, client_scope

    rec = UsageRecorder(str(tmp_path / "u.db"), client="tenant")
    try:
        with client_scope("http:10.1.2.3"):
            rec.found("http:abc", QUERY, QUERY, QUERY, ["send_email"], index=_IX)
            rec.used("http:abc", "send_email", via="call_tool", error_code=None, index=_IX)
        rec.found("stdio", QUERY, QUERY, QUERY, ["send_email"], index=_IX)
        rec.flush()
        finds, uses = list(rec.log.finds()), list(rec.log.uses())
    finally:
        rec.close()
    assert [f.client for f in finds] == ["http:10.1.2.3", "tenant"]
    assert [u.client for u in uses] == ["http:10.1.2.3"]


def test_http_client_key_is_the_peer_address():
    from starlette.requests import Request

    from toolsift.gateway.server import _client_key

    req = Request({"type": "http", "method": "POST", "path": "/mcp", "headers": [
        (b"x-forwarded-for", b"1.2.3.4")], "client": ("10.0.0.7", 5123)})
    assert _client_key(req) == "http:10.0.0.7"  # forwarded-for is not trusted
    # No request: the stdio transport, one identity for the whole gateway run.
    stdio = _client_key(None)
    assert stdio is not None and stdio.startswith("stdio:") and _client_key(None) == stdio
