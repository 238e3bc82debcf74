"""Structured-query weights (picked per query) and the one score scale (docs/scoring.md)."""

from __future__ import annotations

import json
from dataclasses import replace
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest

from toolsift import ToolIndex, load_catalog
from toolsift.config import IndexConfig
from toolsift.errors import ConfigError
from toolsift.kernels.params import (
    DEFAULT_PARAMS,
    STRUCTURED_PARAMS,
    ScoringParams,
    shipped_params,
    structured_twin,
)
from toolsift.presets import preset_config
from toolsift.train import TrainConfig, make_pairs, train

WEIGHTS = Path(files("toolsift") / "data" / "weights")

# The README's structured example (README.md, "A query can also be structured").
README_QUERY = {
    "tool_needs": [{"user_intent": "Book a meeting with the design team next Tuesday at 10am",
                    "tool_description": "Create a calendar event with attendees at a given time",
                    "expected_response": "The created event with its id"}],
    "extracted_arguments": {"title": "short name of the meeting",
                            "start_time": "date and time the meeting starts"},
    "request": "set up a meeting with the design team next Tuesday at 10am",
}
# A plausible raw request against the same catalogue, and other arguments for the same need.
OTHER_ARGUMENTS = {"attendees": "the people to invite", "duration": "how long the meeting lasts"}


@pytest.fixture(scope="module")
def demo():
    return load_catalog(str(files("toolsift") / "data" / "demo_tools.json"))


@pytest.fixture(scope="module")
def index(demo):
    return ToolIndex.build(demo)


def _ranking(hits):
    return [h.id for h in hits]


# ----------------------------------------------------------------- shipped weights


def test_every_shipped_weight_file_is_on_the_unit_scale():
    names = sorted(p.stem for p in WEIGHTS.glob("*.json"))
    assert "structured-default" in names
    for name in names:
        p = shipped_params(name)
        assert p.on_unit_scale(), name
        assert all(w >= 0 for w in p.weights) and abs(sum(p.weights) - 1) < 1e-6, name


def test_structured_files_record_their_training():
    for path in WEIGHTS.glob("*structured-*.json"):
        doc = json.loads(path.read_text())
        assert doc["made_by"] == "scripts/train_structured_weights.py"
        assert "rewritten" in doc["queries"] and "raw tools" in doc["docs"]
        held = doc.get("held_out")
        if held:
            assert held not in doc["trained_on"] and path.stem.endswith(held)


def test_structured_twin_pairs_shipped_files_only():
    assert structured_twin(DEFAULT_PARAMS) == STRUCTURED_PARAMS == shipped_params("structured-default")
    twins = list(WEIGHTS.glob("structured-*.json")) + list(WEIGHTS.glob("hybrid-structured-*.json"))
    assert len(twins) >= 10
    for path in twins:
        raw = path.stem.replace("structured-", "", 1)
        assert structured_twin(shipped_params(raw)) == shipped_params(path.stem), path.stem
    # The hybrid preset picks its structured weights up by itself.
    assert preset_config("hybrid").structured_scoring == shipped_params("hybrid-structured-default")
    mine = ScoringParams(weights=(0.5, 0.2, 0.2, 0.1))
    assert structured_twin(mine) is None
    assert IndexConfig(params=mine).structured_scoring == mine


# ------------------------------------------------------------- per-query choice


@pytest.mark.parametrize("preset, twin", [("hybrid", "hybrid-structured-default"), ("bm25", "structured-default")])
def test_structured_query_uses_structured_weights_raw_query_the_raw_ones(demo, preset, twin):
    index = ToolIndex.build(demo, preset=preset)
    cfg = index.config
    structured = shipped_params(twin)
    assert cfg.structured_params is None and cfg.structured_scoring == structured != cfg.params
    both_raw = ToolIndex.build(demo, config=replace(cfg, structured_params=cfg.params))
    both_st = ToolIndex.build(demo, config=replace(cfg, params=structured))
    text = "book a meeting with the design team next tuesday"
    s_hits = index.search(README_QUERY, k=10)
    assert [(h.id, h.score) for h in s_hits] == [(h.id, h.score) for h in both_st.search(README_QUERY, k=10)]
    assert [(h.id, h.score) for h in s_hits] != [(h.id, h.score) for h in both_raw.search(README_QUERY, k=10)]
    r_hits = index.search(text, k=10)
    assert [(h.id, h.score) for h in r_hits] == [(h.id, h.score) for h in both_raw.search(text, k=10)]
    # A mixed batch gives each query what it gets alone, explained or not.
    for explain in (False, True):
        batch = index.search_batch([text, README_QUERY, text], k=10, explain=explain)
        assert [[(h.id, h.score) for h in hs] for hs in batch] == \
            [[(h.id, h.score) for h in hs] for hs in (r_hits, s_hits, r_hits)]


def test_score_pairs_follows_the_query_kind(index):
    for q in (README_QUERY, "book a meeting with the design team"):
        hits = index.search(q, k=5)
        got = index.score_pairs(q, [h.id for h in hits])
        assert np.allclose(np.asarray(got, dtype=float), [h.score for h in hits], atol=1e-6)


def test_readme_structured_example_ranking_depends_on_extracted_arguments(demo, index):
    # BM25's structured weights give the parameters field a weight: the arguments move the ranking.
    bm25 = ToolIndex.build(demo, preset="bm25")
    assert bm25.config.structured_scoring.weights[1] > 0
    with_args = _ranking(bm25.search(README_QUERY, k=5))
    other = _ranking(bm25.search({**README_QUERY, "extracted_arguments": OTHER_ARGUMENTS}, k=5))
    assert with_args[0] == "create_calendar_event"
    assert with_args != other
    # The hybrid default's structured weights give it none (learned so): the same ranking.
    assert index.config.structured_scoring.weights[1] == 0
    with_args = index.search(README_QUERY, k=5)
    other = index.search({**README_QUERY, "extracted_arguments": OTHER_ARGUMENTS}, k=5)
    assert with_args[0].id == "create_calendar_event"
    assert [(h.id, h.score) for h in with_args] == [(h.id, h.score) for h in other]


def test_structured_params_round_trip_and_validation(demo, tmp_path):
    mine = ScoringParams(weights=(0.5, 0.3, 0.1, 0.1), w_req=0.05, tau=0.4)
    cfg = IndexConfig(structured_params=mine)
    assert IndexConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert IndexConfig.from_dict(IndexConfig().to_dict()) == IndexConfig()
    idx = ToolIndex.build(demo, config=cfg)
    idx.save(tmp_path / "i")
    back = ToolIndex.load(tmp_path / "i")
    assert back.config.structured_params == mine
    assert [(h.id, h.score) for h in back.search(README_QUERY, k=5)] == \
        [(h.id, h.score) for h in idx.search(README_QUERY, k=5)]
    bad = IndexConfig().to_dict()
    bad["structured_params"] = {"weights": [1, 2]}
    with pytest.raises(ConfigError, match="structured_params"):
        IndexConfig.from_dict(bad)
    with pytest.raises(ConfigError, match="structured_params"):
        IndexConfig(structured_params={"weights": [1, 0, 0, 0]})  # type: ignore[arg-type]


# --------------------------------------------------------------------- the scale


def test_to_unit_scale_keeps_every_ranking():
    rng = np.random.default_rng(3)
    feats = rng.random((50, 4))
    sims = rng.random((50, 3))
    p = ScoringParams(weights=(2.0, 0.5, 0.0, 1.5), bias=0.7, w_req=0.4, w_opt=0.1, tau=0.3)
    u = p.to_unit_scale()
    assert u.on_unit_scale() and not p.on_unit_scale()

    def score(q: ScoringParams) -> np.ndarray:
        pen = (1 / (1 + np.exp(-q.alpha * (q.tau - sims)))) @ np.array([q.w_req, q.w_req, q.w_opt])
        return feats @ np.asarray(q.weights) + q.bias - pen

    assert (np.argsort(score(p)) == np.argsort(score(u))).all()
    with pytest.raises(ConfigError, match="negative"):
        ScoringParams(weights=(1.0, -0.1, 0.0, 0.0)).to_unit_scale()
    with pytest.raises(ConfigError, match="all field weights are 0"):
        ScoringParams(weights=(0.0, 0.0, 0.0, 0.0)).to_unit_scale()


def _pairs(index, queries):
    fs = index.field_scores(queries)
    tools = fs.tool_ids
    s = fs.score(index.config.params)
    labels, negs = {}, {}
    for i, qid in enumerate(fs.query_ids):
        order = np.argsort(-s[i])
        labels[qid] = (tools[order[1]],)  # a made-up label: the second best tool
        negs[qid] = tuple(tools[j] for j in order[:20])
    return fs, make_pairs(fs, np.arange(len(queries)), labels, negs, n_negatives=10)


def test_trainer_unit_scale_is_the_bounded_fit_rescaled(index):
    fs, pairs = _pairs(index, ["send an email", "book a hotel room", README_QUERY, "create a ticket"])
    init = ScoringParams(param_max_share=1.0)
    free = train(pairs, TrainConfig(init=init, nonnegative=True, epochs=200)).params
    unit = train(pairs, TrainConfig(init=init, unit_scale=True, epochs=200)).params
    assert unit.on_unit_scale()
    assert np.allclose(np.argsort(-fs.score(free), axis=1, kind="stable"),
                       np.argsort(-fs.score(unit), axis=1, kind="stable"))
    adam = train(pairs, TrainConfig(init=init, unit_scale=True, optimizer="adam", epochs=20)).params
    assert adam.on_unit_scale()


QUERIES = ["send an email to my manager", "book a hotel in paris", "what is the weather tomorrow",
           "zzzz qqqq", "", README_QUERY]


def _all_scores(index) -> tuple[np.ndarray, np.ndarray]:
    """Search scores of raw queries (penalty off) and of the structured one."""
    raw = [h.score for q in QUERIES if isinstance(q, str) and q for h in index.search(q, k=len(index))]
    st = [h.score for h in index.search(README_QUERY, k=len(index))]
    fs = index.field_scores([q for q in QUERIES if isinstance(q, str) and q])
    raw_all = fs.score(index.config.params).ravel()
    return np.asarray(raw + list(raw_all)), np.asarray(st)


def _check_scale(index):
    raw, st = _all_scores(index)
    assert raw.size and (raw >= 0).all() and (raw <= 1 + 1e-6).all()
    assert st.size and (st <= 1 + 1e-6).all()
    p = index.config.structured_scoring
    n_params = max(len(t.parameters) for t in index.catalog)
    assert (st >= -(max(p.w_req, p.w_opt) * n_params) - 1e-6).all()


def test_default_index_scores_lie_on_the_unit_scale(index):
    assert index.config.params.on_unit_scale() and index.config.structured_scoring.on_unit_scale()
    _check_scale(index)


def test_trained_index_scores_lie_on_the_unit_scale(demo, index):
    _, pairs = _pairs(index, ["send an email", "book a hotel room", README_QUERY, "create a ticket"])
    p = train(pairs, TrainConfig(init=ScoringParams(param_max_share=1.0), unit_scale=True, epochs=200)).params
    _check_scale(ToolIndex.build(demo, config=IndexConfig(params=p, structured_params=p)))


def test_hybrid_index_scores_lie_on_the_unit_scale(demo):
    cfg = preset_config("hybrid")
    assert cfg.params.on_unit_scale() and cfg.structured_scoring.on_unit_scale()
    _check_scale(ToolIndex.build(demo, config=cfg))


# ---------------------------------------------------------------------- the eval


def test_eval_structured_method_needs_structured_queries(demo):
    from toolsift.evaluate.cold import run_cold
    from toolsift.evaluate.output import MethodUnavailable

    qs = [("q0", "book a meeting"), ("q1", "send an email")]
    with pytest.raises(MethodUnavailable, match="structured"):
        run_cold("default-bm25-structured", demo, qs)
    out = run_cold("default-bm25-structured", demo, qs, structured=[README_QUERY, None])
    assert next(iter(out.run["q0"])) == "create_calendar_event"
    assert out.notes[0]["structured_weights"] == "structured-default"


def test_eval_structured_on_apibank_beats_the_raw_default_with_lodo_weights():
    """The measured claim of docs/coldstart.md on the smallest set: rewritten queries as
    structured input, raw tools, no feedback, LODO weights, hash ties."""
    from toolsift.evaluate import MftrDataset, evaluate
    from toolsift.evaluate.methods import run_method

    from .conftest import dataset

    ds = MftrDataset.load(dataset("mftr-apibank"))
    qrels = ds.qrels()
    got = {m: evaluate(qrels, run_method(ds, m, feedback=False).run, metrics=("ndcg@10",)).mean["ndcg@10"]
           for m in ("default-bm25", "default-bm25-structured")}
    assert got["default-bm25-structured"] >= 1.05 * got["default-bm25"]
    out = run_method(ds, "default-bm25-structured", feedback=True)
    assert {n["fold"] for n in out.notes} == set(range(len(ds.folds)))
    assert all(n["structured_weights"] == "structured-lodo-mftr-apibank" for n in out.notes)
    assert set(out.run) == {q.id for q in ds.queries}


def test_with_params_own_weights_score_every_query_unless_kept(index):
    mine = ScoringParams(weights=(0.4, 0.3, 0.2, 0.1))
    own = index.with_params(mine)
    assert own.config.params_for(True) == own.config.params_for(False) == mine
    kept = index.with_params(mine, structured="keep")
    assert kept.config.params_for(False) == mine
    assert kept.config.params_for(True) == index.config.structured_scoring
    # Unchanged params keep an unresolved setting unresolved (the manifest stays the same).
    assert index.with_params(index.config.params, structured="keep").config == index.config
    with pytest.raises(ConfigError, match="keep"):
        index.with_params(mine, structured="sometimes")  # type: ignore[arg-type]


# ------------------------------------------------------- the intent in the description


def test_description_query_joins_the_intent_once():
    from toolsift.schema import ToolNeed
    from toolsift.search.plan import description_query

    assert description_query(ToolNeed("book a room", "Create a reservation", "")) == "Create a reservation book a room"
    assert description_query(ToolNeed("same text", "same text", "same text")) == "same text"  # a raw query
    assert description_query(ToolNeed("", "Create a reservation", "x")) == "Create a reservation"
    assert description_query(ToolNeed("  ", "Create a reservation", "")) == "Create a reservation"
    assert description_query(ToolNeed("book a room", "", "")) == "book a room"
    need = ToolNeed("book a room", "Create a reservation", "")
    assert description_query(need, request="I need a hotel in Rome") == \
        "Create a reservation book a room I need a hotel in Rome"
    assert description_query(need, intent=False, request="I need a hotel") == "Create a reservation I need a hotel"
    assert description_query(need, request="book a room") == "Create a reservation book a room"  # not repeated
    assert description_query(need, request="  ") == "Create a reservation book a room"


def _description_on_off(demo, query, option: str, tool_id: str):
    """``(on, off)`` BM25 indexes of ``demo`` with ``option`` on (the default) and off, after
    checking that ``query``'s description-field score for ``tool_id`` is positive only
    with it on and that the tool then ranks first. BM25: a text that shares no word
    scores 0 there (a hybrid field's cosine is never exactly 0)."""
    on = ToolIndex.build(demo, preset="bm25")
    off = ToolIndex.build(demo, config=replace(on.config, **{option: False}))
    fs_on, fs_off = on.field_scores([query]), off.field_scores([query])
    col = fs_on.tool_ids.index(tool_id)
    assert fs_on.base[0, col, 0] > 0  # description field
    assert fs_off.base[0, col, 0] == 0
    assert on.search(query, k=1)[0].id == tool_id
    return on, off


def test_a_needs_intent_reaches_the_description_field(demo):
    """Words only the intent has match tool descriptions by default, and match nothing
    with the option off (the MFTR reference's description query)."""
    from toolsift.schema import Query, ToolNeed

    tool = next(t for t in demo if "weather" in t.description.lower())
    q = Query(needs=(ToolNeed(user_intent=tool.description, tool_description="zzqx", expected_response="zzqx"),))
    on, off = _description_on_off(demo, q, "intent_in_description", tool.id)
    # A raw query is one text in every field: the same scores either way.
    raw = "what is the weather in Paris"
    assert [(h.id, h.score) for h in on.search(raw, k=5)] == [(h.id, h.score) for h in off.search(raw, k=5)]


@pytest.mark.parametrize("option", ["intent_in_description", "request_in_description"])
def test_query_text_options_are_saved_and_old_manifests_keep_them_off(option):
    cfg = IndexConfig()
    assert getattr(cfg, option) is True
    assert getattr(IndexConfig.reference(), option) is False
    d = cfg.to_dict()
    assert IndexConfig.from_dict(d) == cfg
    del d[option]
    assert getattr(IndexConfig.from_dict(d), option) is False
    with pytest.raises(ConfigError):
        IndexConfig(**{option: "yes"})


# ------------------------------------------------------- the request in the description


def test_a_structured_querys_request_reaches_the_description_field(demo):
    """The user's own words (Query.text, find_tools' "request") match tool descriptions
    beside the rewrite's needs by default, and do nothing with the option off."""
    from toolsift.schema import Query, ToolNeed

    tool = next(t for t in demo if "weather" in t.description.lower())
    need = ToolNeed(user_intent="zzqx", tool_description="zzqx", expected_response="zzqx")
    q = Query(needs=(need,), text=tool.description)
    on, off = _description_on_off(demo, q, "request_in_description", tool.id)
    # Without a request the option changes nothing; the wire form's "request" is Query.text.
    bare = Query(needs=(ToolNeed("check the weather", "Get a weather forecast", "forecast"),))
    assert [(h.id, h.score) for h in on.search(bare, k=5)] == [(h.id, h.score) for h in off.search(bare, k=5)]
    wire = {"tool_needs": [{"user_intent": "zzqx", "tool_description": "zzqx", "expected_response": "zzqx"}],
            "request": tool.description}
    assert [(h.id, h.score) for h in on.search(wire, k=5)] == [(h.id, h.score) for h in on.search(q, k=5)]


def test_the_wire_form_advertises_the_request():
    from toolsift.search.query import structured_query_schema

    assert structured_query_schema()["properties"]["request"]["type"] == "string"


@pytest.fixture(scope="module")
def penalized(demo):
    """The demo indexed with a missing-parameter penalty on structured queries."""
    config = IndexConfig()
    return ToolIndex.build(demo, config=config.with_params(
        config.params, structured=replace(config.structured_scoring, w_req=0.1)))


@pytest.mark.filterwarnings("ignore:.*untrained default parameters")  # `penalized`, on purpose
def test_explanations_follow_the_weights(index, penalized, capsys):
    """A reason names only terms that move the score: with the shipped weights (penalty
    weight 0) no missing argument is mentioned, and the CLI's breakdown shows no number
    for a zero-weight term; with the penalty weighted, the same query names them."""
    from toolsift.cli import main

    assert index.config.structured_scoring.w_req == 0
    for explain in (True, "why"):
        hits = index.search(README_QUERY, k=10, explain=explain)
        assert not any("no argument for required" in h.why for h in hits)
        hits = penalized.search(README_QUERY, k=10, explain=explain)
        assert any("no argument for required" in h.why for h in hits)
    main(["demo"])
    out = capsys.readouterr().out
    assert "no argument for required" not in out
    blocks = out.split("\nquery: ")[1:]
    assert len(blocks) == 5 and blocks[-1].startswith('{"tool_needs"')
    for block in blocks:
        params = index.config.params_for(block.startswith("{"))
        weighted = [w != 0 for w in params.weights] + [params.w_req != 0 or params.w_opt != 0]
        rows = [line.split() for line in block.split("\n\n")[0].splitlines()[2:]]
        assert rows
        for cells in rows:
            assert [c != "-" for c in cells[3:8]] == weighted, (block, cells)


@pytest.mark.filterwarnings("ignore:.*untrained default parameters")  # `penalized`, on purpose
def test_the_reason_does_not_call_a_named_argument_missing(penalized):
    """With the penalty weighted: an extracted argument named after a required parameter
    covers it in ``why``, whatever its description's similarity (the demo's ``title``);
    a required parameter no argument names or matches is still listed."""
    def reason(args, explain):
        hits = penalized.search({**README_QUERY, "extracted_arguments": args}, k=3, explain=explain)
        return next(h.why for h in hits if h.id == "create_calendar_event")

    for explain in (True, "why"):
        named = reason({"title": "short name of the meeting"}, explain)
        assert "title" not in named.partition("no argument for required")[2]
        assert "start" in named.partition("no argument for required")[2]  # required too, and not given
        renamed = reason({"name": "short name of the meeting"}, explain)
        assert "title" in renamed.partition("no argument for required")[2]
        other_case = reason({"title": "short name of the meeting", "Start": "when it begins"}, explain)
        assert "no argument for required" not in other_case
