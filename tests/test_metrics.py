"""Tests for toolsift.evaluate.metrics: hand-computed cases, pytrec_eval parity, TREC files."""

from __future__ import annotations

import math
import random

import pytest
import pytrec_eval

from toolsift.evaluate import (
    METRICS,
    RunFormatError,
    evaluate,
    ranked,
    read_trec_run,
    write_trec_run,
)

LOG2_3 = math.log2(3)


def test_default_metrics():
    assert METRICS == (
        "ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "ndcg@20",
        "recall@1", "recall@2", "recall@5", "recall@10", "recall@20",
        "mrr",
    )
    result = evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}})
    assert result.metrics == METRICS
    assert set(result.mean) == set(result.per_query["q"]) == set(METRICS)


def test_one_relevant_at_rank_two():
    result = evaluate({"q": {"a": 1}}, {"q": {"x": 0.9, "a": 0.5, "y": 0.1}})
    v = result.per_query["q"]
    assert v["ndcg@10"] == pytest.approx(1 / LOG2_3)  # DCG 1/log2(2+1), ideal DCG 1
    assert v["ndcg@1"] == 0.0
    assert v["recall@1"] == 0.0
    assert v["recall@2"] == 1.0
    assert v["mrr"] == 0.5
    assert result.mean == v


def test_two_relevant_one_retrieved_at_rank_three():
    qrels = {"q": {"a": 1, "b": 1}}
    run = {"q": {"x": 3.0, "y": 2.0, "a": 1.0, "z": 0.5}}
    v = evaluate(qrels, run).per_query["q"]
    # DCG = 1/log2(3+1) = 0.5; ideal ranks both relevant first: 1 + 1/log2(3).
    assert v["ndcg@10"] == pytest.approx(0.5 / (1 + 1 / LOG2_3))
    assert v["ndcg@3"] == pytest.approx(0.5 / (1 + 1 / LOG2_3))
    assert v["ndcg@1"] == 0.0
    assert v["recall@2"] == 0.0
    assert v["recall@5"] == 0.5
    assert v["mrr"] == pytest.approx(1 / 3)


def test_graded_relevance_uses_linear_gain():
    # trec_eval's gain is the grade itself: DCG = 1 + 2/log2(3), ideal = 2 + 1/log2(3).
    v = evaluate({"q": {"a": 1, "b": 2}}, {"q": {"a": 2.0, "b": 1.0}}, ["ndcg@10"])
    assert v.mean["ndcg@10"] == pytest.approx((1 + 2 / LOG2_3) / (2 + 1 / LOG2_3))


def test_missing_query_counts_as_zero():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": {"a": 1.0}}
    # pytrec_eval alone drops q2, which would report a perfect mean.
    direct = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
    assert set(direct) == {"q1"}
    result = evaluate(qrels, run)
    assert result.per_query["q2"] == {m: 0.0 for m in METRICS}
    assert result.mean["mrr"] == 0.5
    assert result.mean["ndcg@10"] == 0.5
    assert result.mean["recall@1"] == 0.5


def test_empty_ranking_counts_as_zero():
    result = evaluate({"q1": {"a": 1}, "q2": {"b": 1}}, {"q1": {"a": 1.0}, "q2": {}})
    assert result.per_query["q2"]["mrr"] == 0.0
    assert result.mean["mrr"] == 0.5


def test_unjudged_queries_are_ignored():
    result = evaluate({"q1": {"a": 1}}, {"q1": {"a": 1.0}, "extra": {"b": 1.0}})
    assert set(result.per_query) == {"q1"}
    assert result.mean["mrr"] == 1.0


def test_ties_are_broken_by_descending_id():
    run = {"q": {"a": 1.0, "b": 1.0, "c": 0.5}}
    # Equal scores: "b" ranks above "a", whatever the dictionary order.
    assert evaluate({"q": {"a": 1}}, run, ["mrr"]).mean["mrr"] == 0.5
    assert evaluate({"q": {"b": 1}}, run, ["mrr"]).mean["mrr"] == 1.0
    reordered = {"q": {"b": 1.0, "a": 1.0, "c": 0.5}}
    assert evaluate({"q": {"a": 1}}, reordered, ["mrr"]).mean["mrr"] == 0.5
    assert [d for d, _ in ranked(run["q"])] == ["b", "a", "c"]
    # Byte order, not natural order: "a9" > "a10".
    assert [d for d, _ in ranked({"a10": 1.0, "a9": 1.0})] == ["a9", "a10"]


def test_other_metric_names():
    run = {"q": {"x": 0.9, "a": 0.5}}
    v = evaluate({"q": {"a": 1}}, run, ["precision@2", "map", "success@1", "ndcg"]).mean
    assert v == pytest.approx({"precision@2": 0.5, "map": 0.5, "success@1": 0.0,
                               "ndcg": 1 / LOG2_3})


@pytest.mark.parametrize("name", ["NDCG@10", "ndcg@0", "foo@3", "bar", "recall", "ndcg@x"])
def test_unknown_metric(name):
    with pytest.raises(ValueError, match="metric"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, [name])


def test_bad_input():
    with pytest.raises(ValueError, match="qrels is empty"):
        evaluate({}, {"q": {"a": 1.0}})
    with pytest.raises(RunFormatError, match="finite"):
        evaluate({"q": {"a": 1}}, {"q": {"a": float("nan")}})


def _random_case(seed: int, n_queries: int = 40, n_docs: int = 60):
    rng = random.Random(seed)
    docs = [f"tool_{i}" for i in range(n_docs)]
    qrels = {f"q{i}": {d: 1 for d in rng.sample(docs, rng.randint(1, 4))}
              for i in range(n_queries)}
    # Scores on a coarse grid so many ties occur.
    run = {q: {d: round(rng.random(), 1) for d in rng.sample(docs, rng.randint(5, n_docs))}
           for q in qrels}
    return qrels, run


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_pytrec_eval_directly(seed):
    qrels, run = _random_case(seed)
    direct = pytrec_eval.RelevanceEvaluator(
        qrels, {"ndcg_cut.1,3,5,10,20", "recall.1,2,5,10,20", "recip_rank"}
    ).evaluate(run)
    names = {f"ndcg@{k}": f"ndcg_cut_{k}" for k in (1, 3, 5, 10, 20)}
    names |= {f"recall@{k}": f"recall_{k}" for k in (1, 2, 5, 10, 20)}
    names["mrr"] = "recip_rank"
    result = evaluate(qrels, run)
    for q in qrels:
        for ours, theirs in names.items():
            assert result.per_query[q][ours] == direct[q][theirs]
    for ours, theirs in names.items():
        expected = sum(direct[q][theirs] for q in qrels) / len(qrels)
        assert result.mean[ours] == pytest.approx(expected, abs=1e-12)


# ------------------------------------------------------------------------ TREC files


def test_trec_round_trip(tmp_path):
    qrels, run = _random_case(7)
    run["q0"]["tool_1"] = 1e-17  # needs full precision to read back unchanged
    path = write_trec_run(run, tmp_path / "run.trec", tag="test", depth=None)
    assert read_trec_run(path) == run
    assert [p.name for p in tmp_path.iterdir()] == ["run.trec"]  # no temp file left
    assert evaluate(qrels, read_trec_run(path)).per_query == evaluate(qrels, run).per_query


def test_trec_lines_follow_trec_eval_order(tmp_path):
    run = {"q2": {"a": 1.0, "b": 1.0, "c": 2.0}, "q1": {"x": 0.5}}
    path = write_trec_run(run, tmp_path / "r.trec")
    assert path.read_text().splitlines() == [
        "q2 Q0 c 1 2.0 toolsift",
        "q2 Q0 b 2 1.0 toolsift",
        "q2 Q0 a 3 1.0 toolsift",
        "q1 Q0 x 1 0.5 toolsift",
    ]


def test_trec_depth_keeps_cutoff_metrics(tmp_path):
    qrels, run = _random_case(3)
    path = write_trec_run(run, tmp_path / "r.trec", depth=20)
    back = read_trec_run(path)
    assert all(len(docs) <= 20 for docs in back.values())
    cut = [m for m in METRICS if m != "mrr"]
    assert evaluate(qrels, back, cut).per_query == evaluate(qrels, run, cut).per_query


def test_trec_write_replaces_existing_file(tmp_path):
    path = tmp_path / "r.trec"
    path.write_text("old\n")
    write_trec_run({"q": {"a": 1.0}}, path)
    assert read_trec_run(path) == {"q": {"a": 1.0}}


def test_trec_write_rejects_bad_ids(tmp_path):
    with pytest.raises(RunFormatError, match="spaces"):
        write_trec_run({"q": {"a b": 1.0}}, tmp_path / "r.trec")
    with pytest.raises(RunFormatError, match="tag"):
        write_trec_run({"q": {"a": 1.0}}, tmp_path / "r.trec", tag="my run")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q Q0 a 1 0.5\n", r"r\.trec:1: expected 6 fields"),
        ("q Q0 a 1 0.5 t\nq Q0 b 2 high t\n", r"r\.trec:2: score 'high'"),
        ("q Q0 a 1 0.5 t\n\nq Q0 a 2 0.4 t\n", r"r\.trec:3: tool 'a' listed twice"),
    ],
)
def test_read_trec_run_errors(tmp_path, text, message):
    path = tmp_path / "r.trec"
    path.write_text(text)
    with pytest.raises(RunFormatError, match=message):
        read_trec_run(path)


def test_completeness_all_relevant_in_top_k():
    qrels = {"all": {"a": 1, "b": 1}, "half": {"a": 1, "c": 1}, "none": {"z": 1}, "graded": {"a": 2, "b": 1}}
    run = {q: {"a": 3.0, "x": 2.0, "b": 1.0, "c": 0.5} for q in qrels}
    got = evaluate(qrels, run, ["completeness@2", "completeness@3", "completeness@4", "recall@3"]).per_query
    assert [got["all"][m] for m in ("completeness@2", "completeness@3", "completeness@4")] == [0.0, 1.0, 1.0]
    assert [got["half"][m] for m in ("completeness@2", "completeness@3", "completeness@4")] == [0.0, 0.0, 1.0]
    assert got["half"]["recall@3"] == 0.5
    assert got["none"]["completeness@4"] == 0.0
    assert got["graded"]["completeness@3"] == 1.0
    # a query the run misses counts 0, like every metric
    assert evaluate({"q": {"a": 1}}, {"other": {"a": 1.0}}, ["completeness@10"]).mean["completeness@10"] == 0.0


def test_completeness_twin_over_random_runs():
    rng = random.Random(7)
    qrels, run = {}, {}
    for i in range(60):
        docs = [f"d{j}" for j in range(12)]
        rel = rng.sample(docs, rng.randint(1, 4))
        qrels[f"q{i}"] = {d: 1 for d in rel}
        run[f"q{i}"] = {d: rng.random() for d in docs}
    got = evaluate(qrels, run, ["completeness@5"]).per_query
    for q, scores in run.items():
        # trec_eval's order: score descending, ties by id descending (no ties here)
        top = sorted(scores, key=lambda d: -scores[d])[:5]
        assert got[q]["completeness@5"] == float(set(qrels[q]) <= set(top))
