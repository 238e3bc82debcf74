"""Usage log, recorder, attribution and learning (toolsift.usage) over a real demo index.

The gateway runs with a real executor (small Python functions); nothing is mocked.
"""

from __future__ import annotations

import asyncio
import io
import json
import sqlite3
import time

import pytest

from toolsift.adapters import demo_catalog_path, load_catalog
from toolsift.cli import main
from toolsift.errors import ConfigError, ToolsiftError
from toolsift.gateway import Gateway
from toolsift.gateway.errors import GatewayError
from toolsift.toolindex import ToolIndex
from toolsift.usage.recorder import client_scope
from toolsift.usage import (
    SCHEMA_VERSION,
    AttributionRules,
    LearnConfig,
    UsageLog,
    UsageLogError,
    UsageRecorder,
    attribute,
    intent_key,
    learn,
    record_use,
)

ARGS = {"get_current_weather": {"location": "Lisbon"}, "get_air_quality": {"location": "Lisbon"},
        "track_order": {"order_id": "A1"}, "get_camera_snapshot": {"camera_id": "c1"},
        "delete_file": {"file_id": "f1"}, "get_stock_quote": {"symbol": "ACME"}}


async def _executor(tool, args):
    if tool.name == "get_stock_quote":
        raise LookupError("unknown ticker")
    if tool.name == "get_camera_snapshot":
        return {"content": [{"type": "text", "text": "offline"}], "isError": True}
    return {"ok": tool.name}


@pytest.fixture(scope="module")
def index():
    return ToolIndex.build(load_catalog(demo_catalog_path()))


@pytest.fixture
def gateway(index, tmp_path):
    rec = UsageRecorder(tmp_path / "usage.db")
    yield Gateway(index, executor=_executor, recorder=rec), rec
    rec.close()


def _session(gw, session, query, calls, *, limit=5, client="same"):
    """One agent session; its client identity is the session name unless ``client`` says
    otherwise (``None``: no identity recorded)."""
    async def run():
        found = await gw.find_tools(query, limit=limit, session=session)
        for name in calls:
            try:
                await gw.call_tool(name, ARGS.get(name, {}), session=session)
            except Exception:  # noqa: BLE001 - failed calls are part of the session
                pass
        return [t["name"] for t in found["tools"]]

    with client_scope(session if client == "same" else client):
        return asyncio.run(run())


def _tool(index, tool_id):
    return index.catalog[index.catalog.position(tool_id)]


def _rank(index, query, tool_id):
    return next(i for i, h in enumerate(index.search(query, k=len(index))) if h.id == tool_id)


# ----------------------------------------------------------------------- store
def test_store_schema_wal_and_arguments_not_stored(tmp_path):
    path = tmp_path / "u.db"
    with UsageLog(path) as log:
        log.add_use(run="r", session="s", tool_id="t", outcome="success", arguments={"ssn": "123"})
        assert log.schema_version() == SCHEMA_VERSION
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT arguments FROM uses").fetchone()[0] is None
    assert dict(db.execute("SELECT key, value FROM meta"))["schema_version"] == str(SCHEMA_VERSION)
    db.close()
    with UsageLog(tmp_path / "v.db", store_arguments=True) as log:
        log.add_use(run="r", session="s", tool_id="t", outcome="success", arguments={"city": "Oslo"})
    db = sqlite3.connect(tmp_path / "v.db")
    assert json.loads(db.execute("SELECT arguments FROM uses").fetchone()[0]) == {"city": "Oslo"}
    db.close()


def test_store_retention_caps(tmp_path):
    with UsageLog(tmp_path / "u.db", max_rows=10, prune_every=1_000_000, max_age_days=1) as log:
        old = time.time() - 3 * 86400
        log.add_many(finds=[dict(run="r", session="s", query_text=f"q{i}", intent=f"q{i}", returned=["a"],
                                 ts=old if i < 5 else None) for i in range(30)])
        assert log.counts()["finds"] == 30
        assert log.prune() == 20  # 5 too old, then 15 beyond the newest 10
        assert [f.query_text for f in log.finds()] == [f"q{i}" for i in range(20, 30)]


def test_store_refuses_newer_schema_foreign_files_and_bad_records(tmp_path):
    path = tmp_path / "new.db"
    with UsageLog(path):
        pass
    db = sqlite3.connect(path)  # a log of a later toolsift: marked, a newer schema version
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(UsageLogError, match=f"schema version {SCHEMA_VERSION + 1} is newer"):
        UsageLog(path)
    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE people (name TEXT)")
    db.close()
    with pytest.raises(UsageLogError, match="not a toolsift usage log"):
        UsageLog(other)
    (tmp_path / "text.db").write_text("hello, not sqlite" * 100)
    with pytest.raises(UsageLogError):
        UsageLog(tmp_path / "text.db")
    with UsageLog(tmp_path / "u.db") as log:
        with pytest.raises(UsageLogError, match="outcome"):
            log.add_use(run="r", session="s", tool_id="t", outcome="great")
        with pytest.raises(UsageLogError, match="tool_id"):
            log.add_use(run="r", session="s", tool_id="", outcome="success")
        with pytest.raises(UsageLogError, match="returned"):
            log.add_find(run="r", session="s", query_text="q", intent="q", returned="abc")
        assert log.counts() == {"finds": 0, "uses": 0, "successful_uses": 0}
    with pytest.raises(UsageLogError, match="max_rows"):
        UsageLog(tmp_path / "x.db", max_rows=0)


# -------------------------------------------------------------------- recorder
def test_gateway_records_finds_and_use_outcomes(gateway):
    gw, rec = gateway
    returned = _session(gw, "s1", "what is the air like in Lisbon", ["get_air_quality", "get_stock_quote",
                                                                       "get_camera_snapshot", "delete_file"])

    async def bad():
        with pytest.raises(GatewayError):
            await gw.call_tool("track_order", {"order": 1}, session="s1")

    asyncio.run(bad())
    rec.flush()
    (find,) = list(rec.log.finds())
    assert find.session == "s1" and find.run == rec.run and find.intent == "what is the air like in Lisbon"
    assert [t.name for t in gw.index.catalog if t.id in find.returned] and len(find.returned) == len(returned)
    assert list(find.returned) == returned  # the demo catalogue's ids are its names; order kept
    outcomes = {(u.tool_id, u.outcome, u.validated) for u in rec.log.uses()}
    assert outcomes == {("get_air_quality", "success", True), ("get_stock_quote", "error", True),
                        ("get_camera_snapshot", "error", True),  # upstream isError result
                        ("delete_file", "not_run", True),  # high risk, not confirmed
                        ("track_order", "invalid_params", False)}


def test_structured_find_is_logged_with_its_intents(gateway):
    gw, rec = gateway
    q = {"tool_needs": [{"user_intent": "Check the air in Delhi", "tool_description": "air quality index"}],
         "extracted_arguments": {"location": "city"}}
    for query in (q, json.dumps(q)):
        asyncio.run(gw.find_tools(query, limit=3, session="s"))
    rec.flush()
    finds = list(rec.log.finds())
    assert [f.intent for f in finds] == ["Check the air in Delhi"] * 2
    assert [json.loads(f.query_json) for f in finds] == [q, q] and rec.dropped == 0


def test_structured_query_intent_and_record_use(tmp_path):
    rec = UsageRecorder(tmp_path / "u.db")
    q = {"tool_needs": [{"user_intent": "Book a table for two", "tool_description": "restaurant booking"}],
         "extracted_arguments": {"people": "2"}}
    rec.record_use(q, "book_table", True, session="u1")
    rec.record_use({**q, "request": "a table for two at 8"}, "book_table", True, session="u2")
    record_use("cheap flights to Oslo", "search_flights", "success", log=rec.log)
    with pytest.raises(UsageLogError, match="outcome"):
        record_use("x", "t", "fine", log=rec.log)
    with pytest.raises(UsageLogError, match="empty"):
        rec.record_use("   ", "t", True)
    uses = list(rec.log.uses())
    assert [(u.intent, u.via, u.session) for u in uses] == [("Book a table for two", "record_use", "u1"),
                                                           ("Book a table for two", "record_use", "u2"),
                                                           ("cheap flights to Oslo", "record_use", None)]
    # The stored query text is the request when the structured query carries one.
    assert [u.query_text for u in uses] == ["Book a table for two", "a table for two at 8", "cheap flights to Oslo"]
    rec.close()


# ----------------------------------------------------------------- attribution
def _rows(events):
    """(finds, uses) rows from compact tuples: ('f', t, session, intent, returned) /
    ('u', t, session, tool, outcome)."""
    from toolsift.usage.store import FindRow, UseRow

    finds, uses = [], []
    for i, e in enumerate(events):
        if e[0] == "f":
            finds.append(FindRow(i, e[1], "r", e[2], None, "", e[3], None, e[3], tuple(e[4])))
        else:
            uses.append(UseRow(i, e[1], "r", e[2], None, "", e[3], "call_tool", True, e[4], None, None, None))
    return finds, uses


def test_attribution_rules():
    ev = attribute(_rows([
        ("f", 0, "a", "weather in Oslo", ["w", "x", "y"]),
        ("u", 1, "a", "x", "error"),          # failed: never counts
        ("u", 2, "a", "w", "success"),        # -> positive for the last find
        ("f", 10, "b", "weather in Oslo", ["w", "x"]),
        ("u", 400, "b", "w", "success"),      # outside the 300 s window
        ("u", 5, "c", "w", "success"),        # no find in session c
        ("f", 20, None, "weather in Oslo", ["w"]),
    ]))
    item = ev.intents[intent_key("Weather in  Oslo!")]
    assert {t: v for t, v in item.positives.items()} == {"w": {"r/a"}}
    assert set(item.negatives) == {"x", "y"}  # returned to a, not used successfully
    assert ev.stats["failed_uses_ignored"] == 1 and ev.stats["uses_without_find"] == 2
    assert ev.stats["finds_without_session"] == 1


def test_attribution_caps_one_session():
    events = [("f", 0, "s", "q", ["a", "b", "c", "d", "e"])]
    events += [("u", 1 + i, "s", t, "success") for i, t in enumerate("abcde")]
    ev = attribute(_rows(events))
    assert set(ev.intents["q"].positives) == {"a", "b", "c"}  # max_tools_per_find = 3
    # One session, many intents for one tool: at most max_intents_per_tool of them.
    events = []
    for i in range(50):
        events += [("f", 10 * i, "s", f"query {i}", ["x"]), ("u", 10 * i + 1, "s", "x", "success")]
    ev = attribute(_rows(events), rules=AttributionRules(max_intents_per_tool=2))
    assert sum("x" in i.positives for i in ev.intents.values()) == 2
    assert ev.stats["votes_over_session_cap"] == 48
    with pytest.raises(ConfigError):
        AttributionRules(window_s=0)


# ---------------------------------------------------------------------- learn
def test_learn_adds_trusted_intents_only(gateway, index):
    gw, rec = gateway
    query = "how polluted is the air outside"
    before = _rank(index, query, "get_air_quality")
    original = _tool(index, "get_air_quality").examples
    for s in ("s1", "s2", "s3", "s4", "s5"):  # min_clients=5: five sessions of five clients
        _session(gw, s, query, ["get_air_quality"])
    _session(gw, "s6", "is it going to rain", ["track_order"])  # one session only: not trusted
    rec.flush()
    result = learn(index, rec.log)
    assert result.added == {"get_air_quality": (query,)}
    assert result.weights is None  # far fewer than min_train_intents
    assert _tool(result.index, "get_air_quality").examples == original + (query,)
    assert _tool(index, "get_air_quality").examples == original  # the input index is untouched
    assert _rank(result.index, query, "get_air_quality") <= before
    again = learn(result.index, rec.log)  # idempotent on an already learned index
    assert again.added == {} and _tool(again.index, "get_air_quality").examples.count(query) == 1
    one = learn(index, rec.log, config=LearnConfig(min_voters=1, min_clients=1))
    assert set(one.added) == {"get_air_quality", "track_order"}


def test_learn_cli_dry_run_out_and_rollback(gateway, index, tmp_path):
    gw, rec = gateway
    for s in ("s1", "s2", "s3", "s4", "s5"):
        _session(gw, s, "air pollution levels in town", ["get_air_quality"])
    rec.flush()
    src = index.save(tmp_path / "base.idx")
    original = _tool(index, "get_air_quality").examples
    manifest = (src / "manifest.json").read_text()
    out = io.StringIO()
    assert main(["learn", str(src), "--usage", str(rec.log.path), "--dry-run"], out=out) == 0
    assert "get_air_quality: +1: 'air pollution levels in town'" in out.getvalue()
    assert not (tmp_path / "learned.idx").exists()
    out = io.StringIO()
    assert main(["learn", str(src), str(tmp_path / "learned.idx"), "--usage", str(rec.log.path)], out=out) == 0
    learned = ToolIndex.load(tmp_path / "learned.idx")
    assert _tool(learned, "get_air_quality").examples == original + ("air pollution levels in town",)
    report = json.loads((tmp_path / "learned.idx" / "usage-learn.json").read_text())
    assert report["added"] == {"get_air_quality": ["air pollution levels in town"]}
    # The input index is the rollback: unchanged and loadable.
    assert (src / "manifest.json").read_text() == manifest
    assert _tool(ToolIndex.load(src), "get_air_quality").examples == original
    assert main(["learn", str(src), str(src), "--usage", str(rec.log.path)], out=io.StringIO()) == 2
    assert main(["learn", str(src), str(tmp_path / "x.idx"), "--usage", str(tmp_path / "none.db")],
                out=io.StringIO()) == 2
    with pytest.raises(ToolsiftError, match="OUT"):
        from toolsift.usage import learn_index

        learn_index(src, rec.log.path, None)
