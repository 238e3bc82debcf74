"""Relearning in a running gateway (atomic swap under load, rollback, saved versions) and
poisoning resistance (one session's 1,000 adversarial uses), on real indexes.

Gateway calls go through the in-process core with a real executor; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import threading
import pytest

from tests.conftest import dataset
from toolsift.adapters import demo_catalog_path, load_catalog
from toolsift.gateway import Gateway
from toolsift.toolindex import ToolIndex
from toolsift.usage import LearnConfig, Relearner, UsageLog, UsageRecorder, learn
from toolsift.usage.recorder import client_scope


async def _ok(tool, args):
    return {"ok": tool.name}


def _args(tool):
    """Arguments that pass the tool's schema: each required property, by its type."""
    from toolsift.gateway.formats import input_schema

    schema = input_schema(tool)
    props = schema.get("properties", {})
    by_type = {"integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}
    out = {}
    for name in schema.get("required", []):
        p = props.get(name, {})
        out[name] = p["enum"][0] if p.get("enum") else by_type.get(p.get("type"), "x")
    return out


@pytest.fixture(scope="module")
def demo_index():
    return ToolIndex.build(load_catalog(demo_catalog_path()))


def _rank(index, query, tool_id):
    return next(i for i, h in enumerate(index.search(query, k=len(index))) if h.id == tool_id)


def test_relearn_swaps_without_dropping_requests(demo_index, tmp_path):
    rec = UsageRecorder(tmp_path / "u.db")
    gw = Gateway(demo_index, executor=_ok, recorder=rec)
    relearner = Relearner(gw, rec.log, recorder=rec, save_dir=tmp_path / "versions", keep=2)
    query = "what is the air like outside today"

    async def teach(session):
        await gw.find_tools(query, limit=5, session=session)
        await gw.call_tool("get_air_quality", {"location": "here"}, session=session)

    async def load(n):
        async def one(i):
            found = await gw.find_tools(query if i % 2 else "send an email to my boss", limit=3)
            assert found["tools"], "a request got no answer"
            return len(found["tools"])
        return await asyncio.gather(*(one(i) for i in range(n)))

    for session in "abcde":  # five sessions of five client identities (min_clients)
        with client_scope(f"client-{session}"):
            asyncio.run(teach(session))
    swaps = []
    stop = threading.Event()

    def swapper():
        # Relearn and roll back over and over while requests are in flight.
        while not stop.is_set():
            swaps.append(relearner.relearn())
            relearner.rollback()
            swaps.append(relearner.relearn())

    t = threading.Thread(target=swapper)
    t.start()
    try:
        answered = sum(len(asyncio.run(load(40))) for _ in range(5))
    finally:
        stop.set()
        t.join()
    assert answered == 200 and len(swaps) >= 2
    served = gw.index
    assert served is relearner.last.index
    assert "get_air_quality" in relearner.last.added or any(
        query in t.examples for t in served.catalog if t.id == "get_air_quality")
    # Learning always starts from the base: examples never pile up across relearns.
    tool = served.catalog[served.catalog.position("get_air_quality")]
    assert tool.examples.count(query) == 1
    # Saved versions: the last `keep`, each loadable.
    versions = sorted(p.name for p in (tmp_path / "versions").iterdir())
    assert len(versions) == 2
    assert ToolIndex.load(tmp_path / "versions" / versions[-1]).catalog.position("get_air_quality") >= 0
    assert relearner.rollback() and gw.index is not served
    rec.close()


def test_relearn_on_signal_thread(demo_index, tmp_path):
    rec = UsageRecorder(tmp_path / "u.db")
    gw = Gateway(demo_index, executor=_ok, recorder=rec)
    with Relearner(gw, rec.log, recorder=rec, every_s=3600) as relearner:
        relearner.trigger()
        for _ in range(600):
            if relearner.generation:
                break
            threading.Event().wait(0.05)
        assert relearner.generation == 1 and gw.index is relearner.last.index
    rec.close()


# ------------------------------------------------------------------ poisoning
@pytest.fixture(scope="module")
def apibank():
    from toolsift.evaluate import MftrDataset

    ds = MftrDataset.load(dataset("mftr-apibank"))
    index = ToolIndex.build(ds.raw_tools)
    return ds, index


def _family(ds, index):
    """A query family: the queries labelled with the most frequent tool, and a target
    tool none of them is labelled with that ranks low for all of them."""
    from collections import Counter

    top, _ = Counter(t for q in ds.queries for t in q.labels).most_common(1)[0]
    family = [q.text for q in ds.queries if top in q.labels]
    labelled = {t for q in ds.queries if top in q.labels for t in q.labels}
    ranks = [{h.id: r for r, h in enumerate(hits)} for hits in index.search_batch(family, k=len(index))]
    worst = max((t.id for t in index.catalog if t.id not in labelled), key=lambda tid: min(r[tid] for r in ranks))
    return family, worst


def _attack(gw, family, target, *, uses, session="attacker", fail=False, per_find=10):
    """``uses`` successful calls of ``target`` from one session, a family query's
    ``find_tools`` before every ``per_find`` of them (each find a new family query)."""
    tool = next(t for t in gw.index.catalog if t.id == target)
    name, args = tool.name, _args(tool)

    async def run():
        for i in range(uses):
            if i % per_find == 0:
                await gw.find_tools(family[(i // per_find) % len(family)], limit=10, session=session)
            try:
                await gw.call_tool(name, args if not fail else {"__bad__": 1}, session=session)
            except Exception:  # noqa: BLE001 - fail=True: every call is refused
                pass  # fail=True: every call is refused by argument validation

    asyncio.run(run())


def _honest(gw, ds, index):
    """Honest traffic from other sessions, so the learner has something real to do."""
    async def run():
        for s, q in enumerate(ds.queries[:20]):
            for agent in range(2):
                await gw.find_tools(q.text, limit=10, session=f"honest{s}-{agent}")
                tool = next(t for t in index.catalog if t.id == q.labels[0])
                await gw.call_tool(tool.name, _args(tool), session=f"honest{s}-{agent}")

    asyncio.run(run())


def test_poisoning_one_session_1000_uses(apibank, tmp_path):
    ds, index = apibank
    family, target = _family(ds, index)
    before = [_rank(index, q, target) for q in family]
    rec = UsageRecorder(tmp_path / "u.db")
    gw = Gateway(index, executor=_ok, recorder=rec)
    _honest(gw, ds, index)
    _attack(gw, family, target, uses=1000)
    rec.flush()
    assert rec.log.counts()["successful_uses"] == 1040 and rec.dropped == 0

    # Default trust (2 distinct sessions): the attacker alone teaches the target nothing.
    result = learn(index, rec.log)
    assert target not in result.added
    after = [_rank(result.index, q, target) for q in family]
    assert after == before
    # Even trusting single sessions, the per-session caps make 1,000 uses worth at most
    # max_intents_per_tool (3) intents: the target moves exactly as far as 3 uses move it.
    lax = LearnConfig(min_voters=1, min_clients=1, train_weights=False)
    poisoned = learn(index, rec.log, config=lax)
    assert len(poisoned.added.get(target, ())) <= lax.rules.max_intents_per_tool
    rec3 = UsageRecorder(tmp_path / "three.db")
    gw3 = Gateway(index, executor=_ok, recorder=rec3)
    _honest(gw3, ds, index)
    _attack(gw3, family, target, uses=3, per_find=1)
    rec3.flush()
    three = learn(index, rec3.log, config=lax)
    assert poisoned.added[target] == three.added[target]
    moved = [b - _rank(poisoned.index, q, target) for q, b in zip(family, before)]
    assert moved == [b - _rank(three.index, q, target) for q, b in zip(family, before)]
    rec.close()
    rec3.close()


def test_learning_that_does_not_help_is_dropped(apibank, tmp_path):
    """Usage that only confirms what the index already ranks first: held-out validation
    finds no gain over the index before learning, so nothing at all is learned."""
    ds, index = apibank
    solved = [q for q in ds.queries if len(q.labels) == 1 and index.search(q.text, k=1)[0].id == q.labels[0]]
    assert len(solved) >= 20
    with UsageLog(tmp_path / "u.db") as log:
        for q in solved:
            for agent in range(5):  # five agents: min_clients
                log.add_use(run="r", session=f"{q.id}-{agent}", client=f"agent{agent}", tool_id=q.labels[0],
                            outcome="success", via="record_use", query_text=q.text, intent=q.text)
        result = learn(index, log)
    w = result.weights
    assert w is not None and not w.keep_examples, w
    assert w.validation["before"] >= w.validation["current"] - 0.05
    assert result.added == {} and not result.changed
    assert "nothing learned" in result.summary()


def test_failed_calls_never_count(apibank, tmp_path):
    ds, index = apibank
    family, target = _family(ds, index)
    rec = UsageRecorder(tmp_path / "u.db")
    gw = Gateway(index, executor=_ok, recorder=rec)
    for s in range(5):  # five sessions, every call rejected by validation
        _attack(gw, family, target, uses=10, session=f"s{s}", fail=True)
    rec.flush()
    assert {u.outcome for u in rec.log.uses()} == {"invalid_params"}
    result = learn(index, rec.log, config=LearnConfig(min_voters=1))
    assert result.added == {} and not result.changed
    rec.close()


def test_weights_retrained_only_when_they_help(apibank, tmp_path):
    """Labelled training queries as usage (five sessions each): examples are added and the
    weights are adopted only with a held-out gain, never worse than the current ones."""
    ds, index = apibank
    train = [q for q in ds.queries if q.id not in set(ds.test_ids(0))]
    with UsageLog(tmp_path / "u.db") as log:
        for q in train:
            for agent in range(5):  # five agents: min_clients
                for t in q.labels:
                    log.add_use(run="r", session=f"{q.id}-{agent}", client=f"agent{agent}", tool_id=t,
                                outcome="success", via="record_use",
                                query_text=q.text, intent=q.text)
        result = learn(index, log)
    w = result.weights
    assert w is not None and set(w.validation) == {"before", "current", "trained", "p_value"}
    v = w.validation
    # A clear held-out gain over the index before learning; weights only if they add to it.
    assert w.keep_examples and v["p_value"] < 0.05 and max(v["current"], v["trained"]) > v["before"]
    assert w.adopted == (v["trained"] >= v["current"])
    assert result.params_after == (w.params if w.adopted else index.config.params)
    assert len(result.added) >= 30
    # No test-fold query was used, and the learned index does better on them.
    from toolsift.evaluate.metrics import evaluate

    test = [q for q in ds.queries if q.id in set(ds.test_ids(0))]
    qrels = {q.id: {t: 1 for t in q.labels} for q in test}

    def ndcg(ix):
        run = {q.id: {h.id: float(100 - r) for r, h in enumerate(hs)}
               for q, hs in zip(test, ix.search_batch([q.text for q in test], k=100))}
        return evaluate(qrels, run, metrics=("ndcg@10",)).mean["ndcg@10"]

    assert ndcg(result.index) > ndcg(index)
