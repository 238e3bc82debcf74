"""The C++ BM25 core against bm25s (same tokenization, stopwords, Lucene variant) and
rank_bm25's formula, on the real benchmark corpora."""

from __future__ import annotations

import numpy as np
import pytest

import bm25s

from toolsift import _core
from toolsift.adapters import load_catalog
from toolsift.adapters.benchmark import load_queries
from toolsift.analyze import Analyzer, Vocabulary
from toolsift.index.fields import field_documents

from .conftest import dataset


def _bm25s_scores(docs: list[str], queries: list[list[str]], *, k1: float, b: float) -> np.ndarray:
    retriever = bm25s.BM25(k1=k1, b=b, method="lucene")
    retriever.index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)
    return np.stack([retriever.get_scores(q) for q in queries])


def _ours(docs: list[str], queries: list[list[str]], *, k1: float, b: float, scale="raw"):
    an = Analyzer()
    vocab = Vocabulary()
    batch = vocab.encode_batch([an.tokenize(d) for d in docs], grow=True)
    idx = _core.InvertedIndex.build(batch.terms, batch.offsets, len(vocab), k1=k1, b=b)
    qb = vocab.encode_batch(queries, grow=False)
    return idx, qb, idx.score_dense(qb.terms, qb.offsets, scale=scale, threads=2)


def _corpus(name: str, ds: str):
    root = dataset(name) / "dataset"
    if (root / "augmented_tools" / ds).is_dir():
        cat = load_catalog(root / f"augmented_tools/{ds}/gpt-4o-mini_tools.json")
    else:
        cat = load_catalog(root / f"from_toolret/{ds}/tools.json")
    queries = []
    for k in range(5):
        for q in load_queries(root / f"train_and_test/{ds}/fold_{k}/test_queries.json"):
            queries.append(q.text)
            if q.rewritten is not None:
                for n in q.rewritten.needs:
                    queries.extend([n.user_intent, n.tool_description, n.expected_response])
                queries.extend(f"{a}: {d}" for a, d in q.rewritten.arguments.items())
    return cat, queries


# ToolLink's raw documentation has no example intents, so its examples field is all empty
# documents: nothing to compare there.
FIELD_CASES = [("mftr-apibank", "apibank", f) for f in ("description", "parameters", "response", "examples")]
FIELD_CASES += [("mftr-toolink", "toolink", f) for f in ("description", "parameters", "response")]


@pytest.mark.parametrize("name,ds,field", FIELD_CASES)
def test_every_field_matches_bm25s(name, ds, field):
    cat, queries = _corpus(name, ds)
    docs = field_documents(cat, name_in_description=False)[field].texts
    assert any(d.strip() for d in docs), f"{name} {field}: no text to index"
    an = Analyzer()
    toks = [an.tokenize(q) for q in queries]
    _, _, ours = _ours(docs, toks, k1=1.5, b=0.75)
    ref = _bm25s_scores(docs, toks, k1=1.5, b=0.75)
    assert ours.shape == ref.shape
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-5)


@pytest.mark.parametrize("k1,b", [(0.9, 0.4), (1.2, 0.75), (2.0, 1.0), (1.5, 0.0)])
def test_k1_b_configurable(k1, b):
    cat, queries = _corpus("mftr-apibank", "apibank")
    docs = field_documents(cat, name_in_description=False)["description"].texts
    toks = [Analyzer().tokenize(q) for q in queries[:200]]
    _, _, ours = _ours(docs, toks, k1=k1, b=b)
    np.testing.assert_allclose(ours, _bm25s_scores(docs, toks, k1=k1, b=b), rtol=0, atol=1e-5)


def test_bounded_scale_is_a_monotone_map_of_raw_into_unit_interval():
    cat, queries = _corpus("mftr-apibank", "apibank")
    docs = field_documents(cat, name_in_description=False)["description"].texts
    toks = [Analyzer().tokenize(q) for q in queries[:300]]
    idx, qb, raw = _ours(docs, toks, k1=1.5, b=0.75)
    bounded = idx.score_dense(qb.terms, qb.offsets, scale="bounded")
    linear = idx.score_dense(qb.terms, qb.offsets, scale="linear")
    idf = idx.idf().astype(np.float64)
    for i in range(len(toks)):
        ids = qb.terms[qb.offsets[i]:qb.offsets[i + 1]]
        ref = idf[ids[ids >= 0]].sum() / (1 + 1.5)
        expect = -np.expm1(-raw[i].astype(np.float64) / ref) if ref > 0 else np.zeros_like(raw[i])
        np.testing.assert_allclose(bounded[i], expect, rtol=1e-5, atol=1e-6)
        lin = raw[i] / (ref * 2.5) if ref > 0 else np.zeros_like(raw[i])
        np.testing.assert_allclose(linear[i], lin, rtol=1e-5, atol=1e-6)
    assert bounded.max() < 1.0 and bounded.min() >= 0.0
    assert linear.max() < 1.0 and linear.min() >= 0.0
    # The bound is rank-preserving within a query.
    i = int(np.argmax(raw.max(axis=1)))
    assert np.argmax(raw[i]) == np.argmax(bounded[i])


def test_grouped_scores_are_max_over_group_and_topk_sorted():
    docs = ["send an email", "email a friend today", "weather in paris", "paris email", ""]
    groups = np.array([0, 0, 1, 2, 2], dtype=np.int32)
    an = Analyzer()
    vocab = Vocabulary()
    batch = vocab.encode_batch([an.tokenize(d) for d in docs], grow=True)
    idx = _core.InvertedIndex.build(batch.terms, batch.offsets, len(vocab), groups=groups, n_groups=3)
    qb = vocab.encode_batch([an.tokenize("email paris"), an.tokenize("unknownword")], grow=False)
    per_doc = idx.score_dense(qb.terms, qb.offsets, group=False)
    per_tool = idx.score_dense(qb.terms, qb.offsets, group=True)
    np.testing.assert_allclose(per_tool[0], [per_doc[0, :2].max(), per_doc[0, 2], per_doc[0, 3:].max()])
    assert (per_tool[1] == 0).all()
    ids, scores = idx.topk(qb.terms, qb.offsets, 5, group=True)
    assert list(ids[1]) == [-1] * 5 and (scores[1] == 0).all()
    live = ids[0][ids[0] >= 0]
    assert list(scores[0][: len(live)]) == sorted(scores[0][: len(live)], reverse=True)
    assert set(live) == set(np.flatnonzero(per_tool[0] > 0))


def test_topk_equals_numpy_on_apigen_with_threads():
    root = dataset("mftr-apigen") / "dataset"
    cat = load_catalog(root / "from_toolret/apigen/tools.json")
    docs = field_documents(cat, name_in_description=False)["description"].texts
    qs = [q.text for q in load_queries(root / "train_and_test/apigen/fold_0/test_queries.json")]
    an = Analyzer()
    idx, qb, dense = _ours(docs, [an.tokenize(q) for q in qs], k1=1.5, b=0.75)
    for threads in (1, 2, 4):
        ids, scores = idx.topk(qb.terms, qb.offsets, 10, threads=threads)
        for i in range(len(qs)):
            row = dense[i]
            order = np.lexsort((np.arange(row.size), -row))[:10]
            order = order[row[order] > 0]
            assert list(ids[i][: order.size]) == list(order)
            np.testing.assert_allclose(scores[i][: order.size], row[order], rtol=1e-6)
