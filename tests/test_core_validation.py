"""The C++ core checks every array at the binding boundary: bad input raises ValueError
naming the problem, never crashes or reads out of bounds."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from toolsift import _core


def _good():
    return (np.array([0, 2, 3], np.int64), np.array([0, 1, 1], np.int32), np.array([1, 2, 1], np.int32),
            np.array([1, 3], np.int32))


def test_good_arrays_load():
    core = _core.InvertedIndex.from_arrays(*_good())
    assert (core.n_terms, core.n_docs, core.nnz) == (2, 2, 3)


@pytest.mark.parametrize("mutate,match", [
    (lambda a: (np.array([1, 2, 3], np.int64), *a[1:]), "indptr\\[0\\]"),
    (lambda a: (np.array([0, 3, 2], np.int64), *a[1:]), "decreasing"),
    (lambda a: (np.array([0, 2, 9], np.int64), *a[1:]), "indptr\\[-1\\]"),
    (lambda a: (a[0], np.array([0, 5, 1], np.int32), *a[2:]), "outside"),
    (lambda a: (a[0], np.array([1, 0, 1], np.int32), *a[2:]), "increasing"),
    (lambda a: (a[0], np.array([0, -1, 1], np.int32), *a[2:]), "outside"),
    (lambda a: (*a[:2], np.array([1, 0, 1], np.int32), a[3]), "positive"),
    (lambda a: (*a[:2], np.array([1, 2], np.int32), a[3]), "differ"),
    (lambda a: (*a[:3], np.array([1, -3], np.int32)), "negative"),
    (lambda a: (np.array([0.0, 2.0, 3.0]), *a[1:]), "integer"),
    (lambda a: (a[0], np.array([0, 1, 1], np.int64), *a[2:]), "4-byte"),
    (lambda a: (a[0], np.arange(6, dtype=np.int32)[::2], *a[2:]), "contiguous"),
    (lambda a: (a[0], np.zeros((3, 1), np.int32), *a[2:]), "1-d"),
    (lambda a: (a[0], pa.array([0, 1, None], pa.int32()), *a[2:]), "nulls"),
    (lambda a: (a[0], pa.array([0, 1, 1], pa.int64()), *a[2:]), "Arrow type"),
    (lambda a: (a[0], "not an array", *a[2:]), "expected an Arrow array or a buffer"),
])
def test_bad_columns_are_rejected(mutate, match):
    with pytest.raises(ValueError, match=match):
        _core.InvertedIndex.from_arrays(*mutate(_good()))


def test_bad_groups_are_rejected():
    a = _good()
    with pytest.raises(ValueError, match="doc_group"):
        _core.InvertedIndex.from_arrays(*a, groups=np.array([0, 7], np.int32), n_groups=2)
    with pytest.raises(ValueError, match="one entry per document"):
        _core.InvertedIndex.from_arrays(*a, groups=np.array([0], np.int32), n_groups=2)


def test_build_rejects_bad_tokens_and_offsets():
    with pytest.raises(ValueError, match="outside"):
        _core.InvertedIndex.build(np.array([0, 5], np.int32), np.array([0, 2], np.int64), 3)
    with pytest.raises(ValueError, match="non-decreasing"):
        _core.InvertedIndex.build(np.array([0, 1], np.int32), np.array([0, 2, 1, 2], np.int64), 3)
    with pytest.raises(ValueError, match="len\\(tokens\\)"):
        _core.InvertedIndex.build(np.array([0, 1], np.int32), np.array([0, 5], np.int64), 3)
    with pytest.raises(ValueError, match="k1"):
        _core.InvertedIndex.build(np.array([0], np.int32), np.array([0, 1], np.int64), 1, k1=-1.0)
    with pytest.raises(ValueError, match="b must"):
        _core.InvertedIndex.build(np.array([0], np.int32), np.array([0, 1], np.int64), 1, b=1.5)
    with pytest.raises(ValueError, match="method"):
        _core.InvertedIndex.build(np.array([0], np.int32), np.array([0, 1], np.int64), 1, method="bm42")


def test_queries_are_checked():
    core = _core.InvertedIndex.from_arrays(*_good())
    with pytest.raises(ValueError, match=">= n_terms"):
        core.score_dense(np.array([0, 2], np.int32), np.array([0, 2], np.int64))
    with pytest.raises(ValueError, match="offsets"):
        core.topk(np.array([0, 1], np.int32), np.array([0, 3], np.int64), 2)
    with pytest.raises(ValueError, match="decrease"):
        core.score_dense(np.array([0, 1], np.int32), np.array([0, 2, 1, 2], np.int64))
    with pytest.raises(ValueError, match="k must"):
        core.topk(np.array([0], np.int32), np.array([0, 1], np.int64), -1)
    # Negative term ids are unknown words: skipped, not an error.
    assert core.score_dense(np.array([-1], np.int32), np.array([0, 1], np.int64)).sum() == 0
    # An empty batch is fine.
    assert core.score_dense(np.zeros(0, np.int32), np.array([0], np.int64)).shape == (0, 2)


def test_core_outlives_its_python_inputs():
    import gc

    a = _good()
    core = _core.InvertedIndex.from_arrays(*(pa.array(x) for x in a))
    before = core.score_dense(np.array([0, 1], np.int32), np.array([0, 2], np.int64))
    del a
    gc.collect()
    after = core.score_dense(np.array([0, 1], np.int32), np.array([0, 2], np.int64))
    np.testing.assert_array_equal(before, after)
