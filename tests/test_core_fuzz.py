"""Randomized input at the C++ binding boundary (toolsift._core): malformed CSR, offsets,
ids, dtypes and shapes raise ValueError/TypeError naming the problem, never crash the
process; whatever is accepted gives results inside the declared bounds.

A crash (segfault, abort) kills the pytest process, so every example that returns at all
has passed the "never a crash" half; the assertions check the other half.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolsift import _core

TYPED = (ValueError, TypeError, OverflowError)
FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])

# Integers around every boundary the checks care about: negatives, zero, small ids,
# sizes just past the end, and values that overflow 32-bit arithmetic.
edge_ints = st.one_of(st.integers(-3, 12), st.sampled_from([-(2**31), 2**31 - 1, 2**40, -(2**40)]))


def _arr(values: list[int], dtype) -> np.ndarray:
    return np.array([int(np.clip(v, np.iinfo(dtype).min, np.iinfo(dtype).max)) for v in values], dtype=dtype)


dtypes = st.sampled_from([np.int32, np.int64, np.float64, np.uint8])


@st.composite
def columns(draw):
    """Mostly-valid postings with one or more random corruptions."""
    n_terms = draw(st.integers(0, 5))
    n_docs = draw(st.integers(0, 6))
    indptr = sorted(draw(st.lists(st.integers(0, 8), min_size=n_terms, max_size=n_terms)))
    indptr = [0, *indptr]
    nnz = indptr[-1]
    doc_ids = draw(st.lists(st.integers(0, max(n_docs - 1, 0)), min_size=nnz, max_size=nnz))
    tfs = draw(st.lists(st.integers(1, 4), min_size=nnz, max_size=nnz))
    doc_len = draw(st.lists(st.integers(0, 9), min_size=n_docs, max_size=n_docs))
    cols = [indptr, doc_ids, tfs, doc_len]
    for _ in range(draw(st.integers(0, 3))):
        which = draw(st.integers(0, 3))
        if draw(st.booleans()) and cols[which]:
            i = draw(st.integers(0, len(cols[which]) - 1))
            cols[which][i] = draw(edge_ints)
        else:
            cols[which] = draw(st.lists(edge_ints, max_size=8))
    dts = [np.int64, np.int32, np.int32, np.int32]
    if draw(st.integers(0, 9)) == 0:
        dts[draw(st.integers(0, 3))] = draw(dtypes)
    return [_arr(c, dt) if np.issubdtype(dt, np.integer) else np.array(c, dtype=dt) for c, dt in zip(cols, dts)]


@FUZZ
@given(cols=columns(), grouped=st.booleans(), groups=st.lists(edge_ints, max_size=7), n_groups=edge_ints)
def test_from_arrays_rejects_or_validates(cols, grouped, groups, n_groups):
    kwargs = {"groups": _arr(groups, np.int32), "n_groups": int(np.clip(n_groups, 0, 2**31 - 1))} if grouped else {}
    try:
        core = _core.InvertedIndex.from_arrays(*cols, **kwargs)
    except TYPED as exc:
        assert str(exc)
        return
    # Accepted: the invariants the engine relies on really hold.
    indptr, doc_ids = cols[0], cols[1]
    assert indptr[0] == 0 and np.all(np.diff(indptr) >= 0) and indptr[-1] == len(doc_ids)
    assert np.all((doc_ids >= 0) & (doc_ids < core.n_docs))
    assert np.all(cols[2] > 0)
    terms = np.arange(core.n_terms, dtype=np.int32)
    out = core.score_dense(terms, np.array([0, len(terms)], np.int64))
    assert out.shape == (1, core.n_docs) and np.all(np.isfinite(out))


@st.composite
def query_batches(draw, n_terms: int):
    terms = draw(st.lists(edge_ints, max_size=8))
    offsets = sorted(draw(st.lists(st.integers(0, len(terms)), max_size=4)))
    offsets = [0, *offsets, len(terms)]
    if draw(st.booleans()):
        offsets = draw(st.lists(edge_ints, min_size=0, max_size=5))
    return _arr(terms, np.int32), _arr(offsets, np.int64)


@pytest.fixture(scope="module")
def core():
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 6, size=60).astype(np.int32)
    offsets = np.array([0, 5, 5, 17, 30, 41, 60], np.int64)
    return _core.InvertedIndex.build(tokens, offsets, 6, groups=np.array([0, 0, 1, 2, 2, 3], np.int32), n_groups=5)


@FUZZ
@given(batch=query_batches(6), k=edge_ints, scale=st.sampled_from(["raw", "bounded", "linear", "nope"]),
       group=st.booleans(), prune=st.sampled_from(["auto", "exhaustive", "maxscore", "bad"]))
def test_queries_reject_or_stay_in_bounds(core, batch, k, scale, group, prune):
    terms, offsets = batch
    width = core.n_groups if group else core.n_docs
    try:
        dense = core.score_dense(terms, offsets, scale=scale, group=group)
    except TYPED as exc:
        assert str(exc)
    else:
        assert dense.shape == (len(offsets) - 1, width) and np.all(np.isfinite(dense))
    try:
        ids, scores = core.topk(terms, offsets, k, scale=scale, group=group, prune=prune)
    except TYPED as exc:
        assert str(exc)
    else:
        assert ids.shape == scores.shape == (len(offsets) - 1, k)
        assert np.all((ids >= -1) & (ids < width))


@st.composite
def gather_inputs(draw):
    terms, offsets = draw(query_batches(6))
    text_query = draw(st.lists(edge_ints, max_size=6))
    cand_ptr = draw(st.lists(edge_ints, max_size=5))
    cand_ids = draw(st.lists(edge_ints, max_size=10))
    if draw(st.booleans()):  # a mostly-valid shape, to get past the first checks
        n_texts = max(len(offsets) - 1, 0)
        text_query = [0] * n_texts
        cand_ids = sorted(set(draw(st.lists(st.integers(-1, 7), max_size=6))))
        cand_ptr = [0, len(cand_ids)]
    return terms, offsets, _arr(text_query, np.int64), _arr(cand_ptr, np.int64), _arr(cand_ids, np.int64)


@FUZZ
@given(inputs=gather_inputs(), group=st.booleans(), n=edge_ints, n_queries=edge_ints)
def test_gather_and_candidates_reject_or_stay_in_bounds(core, inputs, group, n, n_queries):
    terms, offsets, text_query, cand_ptr, cand_ids = inputs
    width = core.n_groups if group else core.n_docs
    try:
        off, scores = core.gather(terms, offsets, text_query, cand_ptr, cand_ids, group=group)
    except TYPED as exc:
        assert str(exc)
    else:
        assert off[0] == 0 and off[-1] == len(scores) and np.all(np.isfinite(scores))
        assert np.all((cand_ids >= 0) & (cand_ids < width))
    try:
        ptr, ids = core.candidates(terms, offsets, text_query, n_queries, n, group=group)
    except TYPED as exc:
        assert str(exc)
    else:
        assert ptr[0] == 0 and ptr[-1] == len(ids)
        assert np.all((ids >= 0) & (ids < width))


@FUZZ
@given(rows=st.lists(st.tuples(st.lists(edge_ints, max_size=5), st.lists(edge_ints, max_size=8)), max_size=3))
def test_union_csr_rejects_or_unions(rows):
    ptrs = [_arr(p, np.int64) for p, _ in rows]
    ids = [_arr(i, np.int64) for _, i in rows]
    try:
        ptr, out = _core.union_csr(ptrs, ids)
    except TYPED as exc:
        assert str(exc)
        return
    assert ptr[0] == 0 and ptr[-1] == len(out)
    for r in range(len(ptr) - 1):
        want = sorted({int(x) for p, i in zip(ptrs, ids) for x in i[p[r]:p[r + 1]]})
        assert list(out[ptr[r]:ptr[r + 1]]) == want


@FUZZ
@given(text=st.binary(max_size=40), offsets=st.lists(edge_ints, max_size=5), lowercase=st.booleans())
def test_interner_rejects_or_interns(text, offsets, lowercase):
    interner = _core.Interner(lowercase)
    off = _arr(offsets, np.int64)
    try:
        ids, counts = interner.intern(text, off)
    except TYPED as exc:
        assert str(exc)
        assert len(interner) == 0  # nothing interned from rejected input
        return
    assert len(counts) == len(off) - 1 and counts.sum() == len(ids)
    assert np.all((ids >= 0) & (ids < len(interner)))
