"""The top-n selection kernel (toolsift.kernels.select) against a plain NumPy twin."""

from __future__ import annotations

import numpy as np
import pytest

from toolsift.kernels.select import top_positive


def _twin(scores, rows, groups, n_keys, n):
    """Per key its best positive score, then the n best keys (ties: the lower key)."""
    keys = rows if groups is None else groups[rows]
    best = np.full(n_keys, -np.inf)
    pos = scores > 0
    np.maximum.at(best, keys[pos], scores[pos].astype(np.float64))
    have = np.flatnonzero(np.isfinite(best))
    order = np.lexsort((have, -best[have]))
    return np.sort(have[order][:n])


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_matches_numpy_twin(seed, grouped):
    rng = np.random.default_rng(seed)
    n_keys = int(rng.integers(1, 300))
    n_rows = n_keys * (3 if grouped else 1)
    groups = np.sort(rng.integers(0, n_keys, n_rows)) if grouped else None
    m = int(rng.integers(0, n_rows + 1))
    rows = rng.choice(n_rows, m, replace=False).astype(np.int64)
    # Coarse scores: many ties, negatives and zeros, which never count.
    scores = (rng.integers(-4, 12, m) / 8).astype(np.float32)
    for n in (1, 5, 50, 1000):
        got = np.sort(top_positive(scores, rows, groups, n_keys, n))
        np.testing.assert_array_equal(got, _twin(scores, rows, groups, n_keys, n))


def test_scratch_is_left_clean_and_reuse_is_safe():
    scores = np.array([0.5, 0.9, 0.1, 0.7], np.float32)
    rows = np.arange(4, dtype=np.int64)
    first = top_positive(scores, rows, None, 4, 2)
    np.testing.assert_array_equal(np.sort(first), [1, 3])
    np.testing.assert_array_equal(np.sort(top_positive(scores, rows, None, 4, 2)), [1, 3])


@pytest.mark.parametrize("bad", [
    dict(scores=np.ones(3, np.float32), rows=np.arange(2), n=1),
    dict(scores=np.ones(2, np.float32), rows=np.array([0, 5]), n=1),
    dict(scores=np.ones(2, np.float32), rows=np.array([-1, 0]), n=1),
    dict(scores=np.ones(2, np.float32), rows=np.arange(2), n=0),
    dict(scores=np.ones(2, np.float32), rows=np.array([1, 1]), n=1),
])
def test_bad_input_is_a_value_error(bad):
    with pytest.raises(ValueError):
        top_positive(bad["scores"], bad["rows"], None, 3, bad["n"])


@pytest.mark.parametrize("seed", range(4))
def test_fused_scan_top_equals_scan_then_select(seed):
    """The core's one-pass scan + selection (kernels.int8.top_trusted, used by a dense
    field without groups) against the full scan followed by this module's kernel and
    the NumPy twin: coarse codes make many ties and non-positive scores."""
    from toolsift.index.dense import freeze
    from toolsift.kernels.int8 import scan, top_trusted

    rng = np.random.default_rng(seed)
    n_rows, d = int(rng.integers(1, 700)), int(rng.integers(1, 70))
    codes = freeze(rng.integers(-2, 3, (n_rows, d)).astype(np.int8))
    scales = freeze(np.full(n_rows, 0.01, np.float32))
    q_codes = rng.integers(-2, 3, (5, d)).astype(np.int8)
    q_scales = np.full(5, 0.01, np.float32)
    keys = freeze(np.sort(rng.choice(3 * n_rows, n_rows, replace=False)).astype(np.int64))
    full = scan(q_codes, q_scales, codes, scales)
    for n in (1, 7, 100, 1000):
        got = top_trusted(q_codes, q_scales, codes, scales, keys, n)
        for i in range(5):
            want = top_positive(full[i], keys, None, 3 * n_rows, n)
            np.testing.assert_array_equal(np.sort(got[i]), np.sort(want))
            np.testing.assert_array_equal(np.sort(got[i]), _twin(full[i], keys, None, 3 * n_rows, n))
