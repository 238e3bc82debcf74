"""The multi-step stress set, the pooled pseudo data sets, gold-count subsets and the
paired randomization test."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import numpy as np
import pytest

from .conftest import dataset
from toolsift.evaluate.cli import gold_count_subsets, write_qrels
from toolsift.evaluate.pooled import PooledQuery, load_pseudo
from toolsift.evaluate.stress import TEMPLATES, eligible, join_parts, stress_requests

ROOT = Path(__file__).resolve().parents[1]


def _queries(n_sets: int = 2, per_set: int = 30) -> list[PooledQuery]:
    out = []
    for s in range(n_sets):
        for i in range(per_set):
            labels = (f"s{s}_tool_{i}",) if i % 5 else (f"s{s}_tool_{i}", f"s{s}_tool_{i + 1}")
            out.append(PooledQuery(f"s{s}_q{i}", f"Find the weather number {i} in city {s}.", labels, f"set{s}"))
    out.append(PooledQuery("long", "two\nlines here please", ("x",), "set0"))
    return out


def test_requests_join_3_to_4_disjoint_parts_of_one_set():
    qs = _queries()
    by_id = {q.id: q for q in qs}
    reqs = stress_requests(qs, n=70, seed=3)
    assert len(reqs) == 70
    assert {r.template for r in reqs} == set(TEMPLATES)
    for r in reqs:
        parts = [by_id[p] for p in r.parts]
        assert 3 <= len(parts) <= 4
        assert {p.source for p in parts} == {r.source}
        labels = [t for p in parts for t in p.labels]
        assert len(labels) == len(set(labels))  # pairwise disjoint
        assert set(r.labels) == set(labels)
        assert "long" not in r.parts  # multi-line queries are not parts
    # An equal share per source set.
    assert sum(r.source == "set0" for r in reqs) == 35


def test_requests_are_seeded():
    qs = _queries()
    a = [(r.text, r.labels) for r in stress_requests(qs, n=20, seed=1)]
    assert a == [(r.text, r.labels) for r in stress_requests(qs, n=20, seed=1)]
    assert a != [(r.text, r.labels) for r in stress_requests(qs, n=20, seed=2)]


def test_templates_keep_every_part_and_vary_structure():
    parts = ["Get the weather in Paris.", "What is 2 plus 3?", "I want to book a flight to Rome"]
    texts = {name: join_parts(parts, name, random.Random(0)) for name in TEMPLATES}
    for name, text in texts.items():
        for key in ("weather in Paris", "2 plus 3", "book a flight to Rome"):
            assert key in text, (name, text)
    assert texts["numbered"].count("\n") >= 2 and "2. " in texts["numbered"]
    assert texts["sentences"] == "Get the weather in Paris. What is 2 plus 3? I want to book a flight to Rome."
    assert texts["and"] == "Get the weather in Paris and what is 2 plus 3 and I want to book a flight to Rome."
    assert texts["first-once-done"].startswith("First get the weather in Paris, and ")
    assert "\n" not in texts["semicolons"] and texts["semicolons"].count(";") == 2


def test_too_few_disjoint_queries_is_an_error():
    qs = [PooledQuery(f"q{i}", "find the same tool now", ("t",), "s") for i in range(10)]
    with pytest.raises(ValueError, match="disjoint"):
        stress_requests(qs, n=1)


def test_eligible():
    assert eligible("find me a hotel")
    assert not eligible("a\nb c d")
    assert not eligible("hi there")
    assert not eligible(" ".join(["w"] * 46))


def test_gold_count_subsets():
    qrels = {"a": {"x": 1}, "b": {"x": 1, "y": 1}, "c": {"x": 1, "y": 1, "z": 1}, "d": {"x": 1, "y": 0}}
    got = gold_count_subsets(qrels)
    assert {k: sorted(v) for k, v in got.items()} == {"1": ["a", "d"], "2": ["b"], "3+": ["c"]}


def _paired():
    spec = importlib.util.spec_from_file_location("paired_test", ROOT / "scripts" / "paired_test.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_paired_randomization_p_values():
    mod = _paired()
    rng = np.random.default_rng(0)
    a = rng.random(200)
    assert mod.paired_randomization(a, a.copy(), permutations=2000) == 1.0
    assert mod.paired_randomization(a, a + 0.05, permutations=2000) == pytest.approx(1 / 2001)
    noise = a + rng.normal(0, 0.01, 200)
    assert mod.paired_randomization(a, noise, permutations=2000) > 0.01


def test_paired_script_reads_eval_runs(tmp_path, capsys):
    from toolsift.evaluate import write_trec_run

    qrels = {"q1": {"t1": 1}, "q2": {"t2": 1}, "q3": {"t1": 1, "t2": 1, "t3": 1}}
    write_qrels(qrels, tmp_path / "x.qrels")
    write_trec_run({"q1": {"t1": 2.0, "t2": 1.0}, "q2": {"t1": 2.0, "t2": 1.0}, "q3": {"t1": 1.0}}, tmp_path / "a.run")
    write_trec_run({"q1": {"t1": 2.0, "t2": 1.0}, "q2": {"t2": 2.0, "t1": 1.0}, "q3": {"t1": 1.0}}, tmp_path / "b.run")
    mod = _paired()
    assert mod.main([str(tmp_path / "x.qrels"), str(tmp_path / "a.run"), str(tmp_path / "b.run"),
                     "--permutations", "500"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("n=3 ndcg@10") and "B-A=+" in out
    assert mod.main([str(tmp_path / "x.qrels"), str(tmp_path / "a.run"), str(tmp_path / "b.run"),
                     "--gold-count", "3+", "--permutations", "500"]) == 0
    assert "n=1 " in capsys.readouterr().out


def test_pseudo_data_sets_on_the_shared_data():
    root = dataset("mftr-apibank").parent
    pooled = load_pseudo("pooled", root)
    assert len(pooled.tools) == 6417 and len(pooled.queries) == 2098
    stress = load_pseudo("stress", root)
    assert len(stress.queries) >= 500
    tools = {t.id for t in stress.tools}
    assert all(set(q.labels) <= tools and len(q.labels) >= 3 for q in stress.queries)
    with pytest.raises(ValueError):
        load_pseudo("nope", root)
