"""Sparse top-k, MaxScore, batch candidates and gather in the C++ core.

Checked against two independent references: the core's dense path (``score_dense``,
which the new paths must equal bit for bit) and a from-scratch NumPy BM25 over the raw
tokens. Random indexes cover grouped (contiguous and interleaved) and ungrouped fields,
empty documents, out-of-vocabulary (-1) and duplicate query terms, and ties.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolsift import _core

SCALES = ("raw", "bounded", "linear")
K1, B = 1.5, 0.75


def _random_index(seed: int, n_docs: int, n_terms: int, *, grouping: str, max_len: int = 12,
                  zipf: float = 1.3):
    """Zipf-ish random documents (some empty); returns (core, tokens, offsets, groups, n_groups)."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, max_len + 1, n_docs)
    lens[rng.random(n_docs) < 0.1] = 0
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    tokens = (np.minimum(rng.zipf(zipf, int(offsets[-1])), n_terms) - 1).astype(np.int32)
    groups, n_groups = None, 0
    if grouping == "contiguous":
        n_groups = max(1, n_docs // 3 + 2)  # some groups without documents
        groups = np.sort(rng.integers(0, n_groups, n_docs)).astype(np.int32)
    elif grouping == "interleaved":
        n_groups = max(1, n_docs // 3 + 2)
        groups = rng.integers(0, n_groups, n_docs).astype(np.int32)
    core = _core.InvertedIndex.build(tokens, offsets, n_terms, groups=groups, n_groups=n_groups, k1=K1, b=B)
    return core, tokens, offsets, groups, n_groups


def _random_queries(seed: int, n_texts: int, n_terms: int, max_len: int = 8):
    rng = np.random.default_rng(seed + 1)
    lens = rng.integers(0, max_len + 1, n_texts)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    terms = (np.minimum(rng.zipf(1.2, int(offsets[-1])), n_terms + 3) - 1).astype(np.int32)
    terms[terms >= n_terms] = -1  # out of vocabulary
    if terms.size > 1:  # a duplicated term
        terms[-1] = terms[0]
    return terms, offsets


def _numpy_bm25(tokens, offsets, groups, n_groups, n_terms, q_terms, q_offsets, scale, group):
    """From-scratch BM25 (Lucene idf) over the raw tokens, float32 accumulation in query order."""
    n_docs = len(offsets) - 1
    doc_len = np.diff(offsets).astype(np.float64)
    avgdl = doc_len.sum() / n_docs if n_docs else 0.0
    doc_of = np.repeat(np.arange(n_docs), np.diff(offsets))
    tf = np.zeros((n_terms, n_docs), np.float64)
    np.add.at(tf, (tokens, doc_of), 1.0)
    df = (tf > 0).sum(axis=1).astype(np.float64)
    idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
    norm = 1.0 - B + B * doc_len / avgdl if avgdl > 0 else np.ones(n_docs)
    weight = (idf[:, None] * (tf / (tf + K1 * norm[None, :]))).astype(np.float32)
    rows = []
    for i in range(len(q_offsets) - 1):
        q = q_terms[q_offsets[i]:q_offsets[i + 1]]
        acc = np.zeros(n_docs, np.float32)
        for t in q:
            if t >= 0:
                acc += weight[t]
        if group and groups is not None:
            out = np.zeros(n_groups, np.float32)
            np.maximum.at(out, groups, acc)
        else:
            out = acc
        ub = float(sum(np.float32(idf[t]) for t in q if t >= 0))
        if scale != "raw":
            if ub <= 0:
                out = np.zeros_like(out)
            elif scale == "linear":
                out = (out.astype(np.float64) * (1.0 / ub)).astype(np.float32)
            else:
                out = (-np.expm1(-out.astype(np.float64) * ((1.0 + K1) / ub))).astype(np.float32)
        rows.append(out)
    width = n_groups if (group and groups is not None) else n_docs
    return np.stack(rows) if rows else np.zeros((0, width), np.float32)


def _ref_topn(row: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    ids = np.flatnonzero(row > 0)
    order = np.lexsort((ids, -row[ids]))[:n]
    return ids[order], row[ids[order]]


index_params = st.fixed_dictionaries({
    "seed": st.integers(0, 10_000),
    "n_docs": st.integers(1, 120),
    "n_terms": st.integers(1, 40),
    "grouping": st.sampled_from(["none", "contiguous", "interleaved"]),
    "scale": st.sampled_from(SCALES),
    "group": st.booleans(),
    "n": st.integers(0, 150),
})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index_params)
def test_topk_matches_dense_and_numpy(p):
    core, tokens, offsets, groups, ng = _random_index(p["seed"], p["n_docs"], p["n_terms"], grouping=p["grouping"])
    terms, qoff = _random_queries(p["seed"], 7, p["n_terms"])
    dense = core.score_dense(terms, qoff, scale=p["scale"], group=p["group"])
    ref = _numpy_bm25(tokens, offsets, groups, ng, p["n_terms"], terms, qoff, p["scale"], p["group"])
    np.testing.assert_allclose(dense, ref, rtol=1e-6, atol=1e-7)
    for prune in ("exhaustive", "maxscore", "auto"):
        ids, scores = core.topk(terms, qoff, p["n"], scale=p["scale"], group=p["group"], prune=prune)
        for i in range(len(qoff) - 1):
            rid, rs = _ref_topn(dense[i], p["n"])
            m = len(rid)
            assert ids[i, :m].tolist() == rid.tolist(), prune
            assert np.array_equal(scores[i, :m], rs), prune  # bit for bit
            assert (ids[i, m:] == -1).all() and (scores[i, m:] == 0).all()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index_params, st.integers(1, 5))
def test_candidates_and_gather_match_dense(p, n_queries):
    core, *_ = _random_index(p["seed"], p["n_docs"], p["n_terms"], grouping=p["grouping"])
    n_texts = 9
    terms, qoff = _random_queries(p["seed"], n_texts, p["n_terms"])
    rng = np.random.default_rng(p["seed"])
    text_query = np.sort(rng.integers(0, n_queries, n_texts)).astype(np.int64)
    kw = dict(scale=p["scale"], group=p["group"])
    dense = core.score_dense(terms, qoff, **kw)
    ptr, ids = core.candidates(terms, qoff, text_query, n_queries, p["n"], **kw)
    assert ptr.shape == (n_queries + 1,) and ptr[0] == 0 and ptr[-1] == ids.size
    for q in range(n_queries):
        want = set()
        for i in np.flatnonzero(text_query == q):
            want.update(_ref_topn(dense[i], p["n"])[0].tolist())
        assert ids[ptr[q]:ptr[q + 1]].tolist() == sorted(want)
    # Gather over the candidates and over arbitrary (strictly increasing) id sets.
    width = dense.shape[1]
    extra = [np.unique(rng.integers(0, width, rng.integers(0, width + 1))) for _ in range(n_queries)]
    other_ptr = np.concatenate([[0], np.cumsum([e.size for e in extra])]).astype(np.int64)
    for cp, ci in ((ptr, ids), (other_ptr, np.concatenate(extra).astype(np.int64))):
        off, vals = core.gather(terms, qoff, text_query, cp, ci, **kw)
        assert off.shape == (n_texts + 1,) and off[-1] == vals.size
        for i in range(n_texts):
            q = text_query[i]
            assert np.array_equal(vals[off[i]:off[i + 1]], dense[i, ci[cp[q]:cp[q + 1]]])


@pytest.mark.parametrize("grouping", ["none", "contiguous", "interleaved"])
@pytest.mark.parametrize("scale", SCALES)
def test_maxscore_equals_exhaustive_on_long_postings(grouping, scale):
    """Large enough for the threshold to prune; short equal-length docs force exact ties."""
    for seed, max_len, n_terms in ((3, 12, 400), (4, 2, 6)):
        core, *_ = _random_index(seed, 6000, n_terms, grouping=grouping, max_len=max_len, zipf=1.1)
        terms, qoff = _random_queries(seed, 40, n_terms, max_len=12)
        for group in (False, True):
            for n in (1, 5, 50):
                a = core.topk(terms, qoff, n, scale=scale, group=group, prune="exhaustive")
                b = core.topk(terms, qoff, n, scale=scale, group=group, prune="maxscore")
                assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


@pytest.mark.parametrize("grouping", ["none", "contiguous", "interleaved"])
@pytest.mark.parametrize("scale", SCALES)
def test_maxscore_first_floor_keeps_ties_and_ids(grouping, scale):
    """MaxScore scores the heaviest postings of its highest-bound terms before the scan
    for a first floor. Documents that are copies of a few texts score exactly alike, so
    that floor often equals the n-th best score itself: every tied id must stay in play
    (the lower ids win), in documents and in groups, against the NumPy twin."""
    rng = np.random.default_rng(7)
    n_terms = 60
    texts = [rng.integers(0, n_terms, rng.integers(1, 6)) for _ in range(40)]
    pick = rng.integers(0, len(texts), 5000)
    tokens = np.concatenate([texts[i] for i in pick]).astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum([texts[i].size for i in pick])]).astype(np.int64)
    groups, ng = None, 0
    if grouping != "none":
        ng = 1800
        groups = rng.integers(0, ng, pick.size).astype(np.int32)
        groups = np.sort(groups) if grouping == "contiguous" else groups
    core = _core.InvertedIndex.build(tokens, offsets, n_terms, groups=groups, n_groups=ng, k1=K1, b=B)
    q_terms = [rng.choice(n_terms, rng.integers(1, 7), replace=False) for _ in range(40)]
    terms = np.concatenate(q_terms).astype(np.int32)
    qoff = np.concatenate([[0], np.cumsum([t.size for t in q_terms])]).astype(np.int64)
    _maxscore_equals_exhaustive_and_numpy(core, tokens, offsets, groups, ng, n_terms, terms, qoff, scale, (1, 7, 30, 100))


@pytest.mark.parametrize("grouping", ["none", "contiguous"])
@pytest.mark.parametrize("scale", SCALES)
def test_maxscore_common_terms_over_many_windows(grouping, scale):
    """Texts mixing very common terms (postings in a third of 40,000 documents, so ten
    4,096-document windows) with rarer ones: MaxScore then holds its highest non-essential
    terms' window postings in arrays and leaves those long lists out of its first floor's
    seed scores (a lower bound). Copied documents force exact ties. Same ids and scores as
    exhaustive, and as the NumPy twin."""
    rng = np.random.default_rng(35)
    n_docs, n_terms = 40_000, 200
    lens = rng.integers(1, 15, n_docs)
    docs = [np.minimum((rng.random(k) ** 4 * n_terms).astype(np.int32), n_terms - 1) for k in lens]
    for d in range(1000, n_docs, 40):
        docs[d] = docs[d - 997]
    tokens = np.concatenate(docs).astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum([x.size for x in docs])]).astype(np.int64)
    groups, ng = None, 0
    if grouping == "contiguous":
        ng = n_docs // 2
        groups = (np.arange(n_docs) // 2).astype(np.int32)
    core = _core.InvertedIndex.build(tokens, offsets, n_terms, groups=groups, n_groups=ng, k1=K1, b=B)
    q_terms = []
    for _ in range(30):
        k = int(rng.integers(3, 10))
        common, other = rng.integers(0, 12, k), rng.integers(0, n_terms, k)
        t = np.where(rng.random(k) < 0.6, common, other)
        q_terms.append(np.append(t, t[0]))
    terms = np.concatenate(q_terms).astype(np.int32)
    qoff = np.concatenate([[0], np.cumsum([t.size for t in q_terms])]).astype(np.int64)
    _maxscore_equals_exhaustive_and_numpy(core, tokens, offsets, groups, ng, n_terms, terms, qoff, scale, (1, 5, 40, 100))


def _maxscore_equals_exhaustive_and_numpy(core, tokens, offsets, groups, ng, n_terms, terms, qoff, scale, ns) -> None:
    """MaxScore's top n (each of ``ns``, grouped and not) against exhaustive, bit for bit,
    and against the NumPy twin's ranking."""
    for group in (False, True):
        dense = _numpy_bm25(tokens, offsets, groups, ng, n_terms, terms, qoff, scale, group)
        for n in ns:
            ids, scores = core.topk(terms, qoff, n, scale=scale, group=group, prune="maxscore")
            ex = core.topk(terms, qoff, n, scale=scale, group=group, prune="exhaustive")
            assert np.array_equal(ids, ex[0]) and np.array_equal(scores, ex[1])
            for i in range(len(qoff) - 1):
                rid, rs = _ref_topn(dense[i], n)
                assert ids[i, :len(rid)].tolist() == rid.tolist()
                np.testing.assert_allclose(scores[i, :len(rid)], rs, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("grouping", ["none", "contiguous"])
def test_auto_from_half_a_million_documents_equals_exhaustive(grouping):
    """From 500,000 documents "auto" runs MaxScore: same ids and scores as exhaustive."""
    core, *_ = _random_index(11, 500_000, 3000, grouping=grouping, max_len=4, zipf=1.1)
    assert core.n_docs >= 500_000
    terms, qoff = _random_queries(11, 30, 3000, max_len=10)
    text_query = np.repeat(np.arange(10), 3).astype(np.int64)
    for group in (False, True):
        a = core.topk(terms, qoff, 50, scale="bounded", group=group, prune="exhaustive")
        b = core.topk(terms, qoff, 50, scale="bounded", group=group, prune="auto")
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        ca = core.candidates(terms, qoff, text_query, 10, 100, scale="raw", group=group, prune="exhaustive")
        cb = core.candidates(terms, qoff, text_query, 10, 100, scale="raw", group=group)
        assert np.array_equal(ca[0], cb[0]) and np.array_equal(ca[1], cb[1])


def test_gather_galloping_and_scanning_agree_with_dense():
    """Few candidates against long lists gallop; many candidates scan: both are exact."""
    core, *_ = _random_index(11, 20000, 50, grouping="contiguous", zipf=1.05)
    terms, qoff = _random_queries(11, 6, 50, max_len=10)
    dense = core.score_dense(terms, qoff, scale="bounded", group=True)
    tq = np.zeros(6, np.int64)
    for ids in (np.array([0, 7, 4000, 6000], np.int64), np.arange(0, core.n_groups, 2, dtype=np.int64)):
        off, vals = core.gather(terms, qoff, tq, np.array([0, ids.size], np.int64), ids, scale="bounded", group=True)
        np.testing.assert_array_equal(vals.reshape(6, ids.size), dense[:, ids])


def test_threads_do_not_change_results():
    core, *_ = _random_index(5, 3000, 200, grouping="contiguous")
    terms, qoff = _random_queries(5, 64, 200)
    tq = np.repeat(np.arange(32), 2).astype(np.int64)
    one = core.candidates(terms, qoff, tq, 32, 10, scale="bounded", group=True, threads=1)
    many = core.candidates(terms, qoff, tq, 32, 10, scale="bounded", group=True, threads=4)
    assert all(np.array_equal(a, b) for a, b in zip(one, many))
    g1 = core.gather(terms, qoff, tq, *one, scale="bounded", group=True, threads=1)
    g4 = core.gather(terms, qoff, tq, *one, scale="bounded", group=True, threads=4)
    assert all(np.array_equal(a, b) for a, b in zip(g1, g4))


def test_union_csr():
    a = (np.array([0, 2, 2, 3], np.int64), np.array([5, 1, 9], np.int64))
    b = (np.array([0, 1, 2, 4], np.int64), np.array([1, 4, 9, 0], np.int64))
    ptr, ids = _core.union_csr([a[0], b[0]], [a[1], b[1]])
    assert ptr.tolist() == [0, 2, 3, 5] and ids.tolist() == [1, 5, 4, 0, 9]


def _small():
    core, *_ = _random_index(1, 30, 10, grouping="contiguous")
    terms = np.array([0, 1, 2, 3], np.int32)
    qoff = np.array([0, 2, 4], np.int64)
    return core, terms, qoff


@pytest.mark.parametrize("call,match", [
    (lambda c, t, o: c.candidates(t, np.array([0, 3, 2], np.int64), np.zeros(2, np.int64), 1, 3), "decrease"),
    (lambda c, t, o: c.candidates(t, o, np.array([0, 1], np.int64), 1, 3), "text_query\\[1\\]=1 outside"),
    (lambda c, t, o: c.candidates(t, o, np.array([1, 0], np.int64), 2, 3), "text_query decreases"),
    (lambda c, t, o: c.candidates(t, o, np.array([0, -1], np.int64), 2, 3), "outside"),
    (lambda c, t, o: c.candidates(t, o, np.zeros(3, np.int64), 1, 3), "3 entries for 2 texts"),
    (lambda c, t, o: c.candidates(t, o, np.zeros(2, np.int64), 1, -1), "n must be"),
    (lambda c, t, o: c.candidates(t, o, np.zeros(2, np.int64), -1, 3), "n_queries"),
    (lambda c, t, o: c.candidates(t, o, np.zeros(2, np.int64), 1, 3, prune="fast"), "unknown prune"),
    (lambda c, t, o: c.gather(t, o, np.zeros(2, np.int64), np.array([0, 1], np.int64),
                              np.array([10_000], np.int64), group=True), "cand_ids\\[0\\]=10000 outside"),
    (lambda c, t, o: c.gather(t, o, np.zeros(2, np.int64), np.array([0, 2], np.int64),
                              np.array([3, 3], np.int64)), "strictly increasing"),
    (lambda c, t, o: c.gather(t, o, np.zeros(2, np.int64), np.array([0, 3], np.int64),
                              np.array([1, 2], np.int64)), "cand_ptr\\[-1\\]"),
    (lambda c, t, o: c.gather(t, o, np.zeros(2, np.int64), np.array([1, 2], np.int64),
                              np.array([1, 2], np.int64)), "cand_ptr\\[0\\]"),
    (lambda c, t, o: c.gather(t, o, np.zeros(2, np.int64), np.array([0, 2, 1], np.int64),
                              np.array([1, 2], np.int64)), "cand_ptr decreases"),
    (lambda c, t, o: c.gather(t, o, np.zeros(2, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)),
     "cand_ptr must have"),
    (lambda c, t, o: c.gather(t, o, np.array([0, 1], np.int64), np.array([0, 0], np.int64),
                              np.zeros(0, np.int64)), "outside \\[0, n_queries=1\\)"),
    (lambda c, t, o: c.gather(t, o, np.zeros(2, np.int64), np.zeros((1, 1), np.int64), np.zeros(0, np.int64)),
     "cand_ptr must be 1-d"),
    (lambda c, t, o: c.topk(np.array([0, 1, 2, 99], np.int32), o, 3), ">= n_terms"),
    (lambda c, t, o: _core.union_csr([np.array([0, 2], np.int64)], [np.array([1], np.int64)]), "ptr\\[-1\\]"),
    (lambda c, t, o: _core.union_csr([np.array([0, 1], np.int64), np.array([0, 0, 0], np.int64)],
                                     [np.array([1], np.int64), np.zeros(0, np.int64)]), "different number of rows"),
])
def test_bad_inputs_raise_value_error(call, match):
    core, terms, qoff = _small()
    with pytest.raises(ValueError, match=match):
        call(core, terms, qoff)


def test_empty_batches():
    core, *_ = _random_index(2, 50, 10, grouping="none")
    terms, qoff = np.zeros(0, np.int32), np.zeros(1, np.int64)
    ptr, ids = core.candidates(terms, qoff, np.zeros(0, np.int64), 3, 5)
    assert ptr.tolist() == [0, 0, 0, 0] and ids.size == 0
    off, vals = core.gather(terms, qoff, np.zeros(0, np.int64), ptr, ids)
    assert off.tolist() == [0] and vals.size == 0
    assert math.isfinite(core.avgdl)


def test_field_index_wrappers_follow_score_tools():
    """The FieldIndex methods toolsift search calls: candidates unioned over fields, gathered."""
    from toolsift.analyze import TermBatch
    from toolsift.config import Bm25Config
    from toolsift.index.field_index import FieldIndex, union_candidates

    _, tokens, offsets, groups, ng = _random_index(8, 300, 30, grouping="contiguous")
    fi = FieldIndex.from_batch(TermBatch(tokens, offsets), groups, n_tools=ng, n_terms=30, bm25=Bm25Config())
    plain_tok, plain_off = tokens, offsets[: ng + 1] if ng + 1 <= len(offsets) else offsets
    plain = FieldIndex.from_batch(TermBatch(plain_tok[: plain_off[-1]], plain_off), None, n_tools=len(plain_off) - 1,
                                  n_terms=30, bm25=Bm25Config())
    terms, qoff = _random_queries(8, 6, 30)
    batch = TermBatch(terms, qoff)
    tq = np.array([0, 0, 1, 1, 1, 2], np.int64)
    a = fi.candidates(batch, tq, 3, 7, scale="bounded", threads=1)
    b = plain.candidates(batch, tq, 3, 7, scale="bounded", threads=1)
    ptr, ids = union_candidates([a, b])
    for q in range(3):
        want = set(a[1][a[0][q]:a[0][q + 1]]) | set(b[1][b[0][q]:b[0][q + 1]])
        assert ids[ptr[q]:ptr[q + 1]].tolist() == sorted(want)
    keep = ids < min(fi.n_tools, plain.n_tools)  # ids valid in both fields
    kept_ptr = np.concatenate([[0], np.cumsum([keep[ptr[q]:ptr[q + 1]].sum() for q in range(3)])]).astype(np.int64)
    kept = ids[keep]
    dense = fi.score_tools(batch, scale="bounded", threads=1)
    off, vals = fi.gather(batch, tq, kept_ptr, kept, scale="bounded", threads=1)
    for i, q in enumerate(tq):
        assert np.array_equal(vals[off[i]:off[i + 1]], dense[i, kept[kept_ptr[q]:kept_ptr[q + 1]]])


def test_ties_on_the_scaled_floats_break_by_id_not_by_raw_score():
    """Documents made only of the query term have raw scores converging with length, so on
    the bounded scale distinct raw scores round to the same float: the top-n must then be
    cut by id, as on a dense row, not by the (finer) raw order."""
    lengths = np.random.default_rng(0).permutation(np.concatenate([np.arange(1, 3001), np.full(2000, 5)]))
    filler = lengths == 5
    tokens = np.concatenate([np.full(n, 1 if f else 0, np.int32) for n, f in zip(lengths, filler)])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    core = _core.InvertedIndex.build(tokens, offsets, 2)
    terms, qoff = np.array([0], np.int32), np.array([0, 1], np.int64)
    scaled = core.score_dense(terms, qoff, scale="bounded")[0]
    raw = core.score_dense(terms, qoff, scale="raw")[0]
    ids = np.flatnonzero(scaled > 0)
    order = ids[np.lexsort((ids, -scaled[ids]))]
    cuts = np.flatnonzero((scaled[order][:-1] == scaled[order][1:]) & (raw[order][:-1] < raw[order][1:])) + 1
    assert cuts.size > 10  # the construction does produce such ties
    for n in cuts[:40]:
        for prune in ("exhaustive", "maxscore"):
            got, sc = core.topk(terms, qoff, int(n), scale="bounded", prune=prune)
            assert got[0].tolist() == order[:n].tolist(), (prune, n)
            assert np.array_equal(sc[0], scaled[order[:n]])
