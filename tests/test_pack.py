"""The compiled packing of field scores equals a plain NumPy transpose."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from toolsift.kernels.pack import pack_needs, pack_params


def _ranges(starts, counts):
    return np.concatenate([np.arange(s, s + c) for s, c in zip(starts, counts)] + [np.zeros(0, np.int64)])


def _reference(ptr, tool, need_ptr, arg_ptr, param_ptr, desc, resp, ex, par):
    need_rows, need_off, ap, ap_off = [], [], [], []
    text_block = 0
    arg_block = 0
    row = 0
    out = 0
    for q in range(len(ptr) - 1):
        cands = tool[ptr[q]:ptr[q + 1]]
        nc, nn, na = len(cands), need_ptr[q + 1] - need_ptr[q], arg_ptr[q + 1] - arg_ptr[q]
        d = desc[text_block:text_block + nn * nc].reshape(nn, nc)
        r = resp[text_block:text_block + nn * nc].reshape(nn, nc)
        e = ex[text_block:text_block + nn * nc].reshape(nn, nc)
        text_block += nn * nc
        counts = param_ptr[cands + 1] - param_ptr[cands]
        width = int(counts.sum())
        p = par[arg_block:arg_block + na * width].reshape(na, width)
        arg_block += na * width
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int)
        for j in range(nc):
            need_off.append(row)
            need_rows.extend(np.stack([d[:, j], r[:, j], e[:, j]], axis=1))
            row += nn
            ap_off.append(out)
            block = p[:, starts[j]:starts[j] + counts[j]]
            ap.extend(block.ravel())
            out += block.size
    return (np.array(need_rows, np.float32).reshape(-1, 3), np.array(need_off, np.int64),
            np.array(ap, np.float32), np.array(ap_off, np.int64))


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_pack_equals_numpy_reference(seed):
    rng = np.random.default_rng(seed)
    n_tools = int(rng.integers(1, 12))
    param_ptr = np.concatenate([[0], np.cumsum(rng.integers(0, 4, n_tools))]).astype(np.int64)
    nq = int(rng.integers(1, 5))
    per_q = [np.sort(rng.choice(n_tools, int(rng.integers(0, n_tools + 1)), replace=False)) for _ in range(nq)]
    ptr = np.concatenate([[0], np.cumsum([len(c) for c in per_q])]).astype(np.int64)
    tool = np.concatenate(per_q + [np.zeros(0, int)]).astype(np.int64)
    need_ptr = np.concatenate([[0], np.cumsum(rng.integers(1, 4, nq))]).astype(np.int64)
    arg_ptr = np.concatenate([[0], np.cumsum(rng.integers(0, 3, nq))]).astype(np.int64)
    nc = np.diff(ptr)
    m = int((np.diff(need_ptr) * nc).sum())
    widths = np.array([int((param_ptr[c + 1] - param_ptr[c]).sum()) for c in per_q])
    k = int((np.diff(arg_ptr) * widths).sum())
    desc, resp, ex = (rng.random(m, dtype=np.float32) for _ in range(3))
    par = rng.random(k, dtype=np.float32)
    ref = _reference(ptr, tool, need_ptr, arg_ptr, param_ptr, desc, resp, ex, par)
    need_sims, need_off = pack_needs(ptr, tool, need_ptr, desc, resp, ex)
    ap_sims, ap_off = pack_params(ptr, tool, arg_ptr, param_ptr, par)
    np.testing.assert_array_equal(need_sims, ref[0])
    np.testing.assert_array_equal(need_off, ref[1])
    np.testing.assert_array_equal(ap_sims, ref[2])
    # Offsets of candidates with an empty block are never read; compare the others.
    has = (np.diff(arg_ptr)[np.repeat(np.arange(nq), nc)] * (param_ptr[tool + 1] - param_ptr[tool])) > 0
    np.testing.assert_array_equal(ap_off[has], ref[3][has])


def test_pack_rejects_wrong_sizes():
    ptr = np.array([0, 2], np.int64)
    tool = np.array([0, 1], np.int64)
    with np.testing.assert_raises_regex(ValueError, "description scores: expected 2"):
        pack_needs(ptr, tool, np.array([0, 1], np.int64), np.zeros(3, np.float32), np.zeros(2, np.float32),
                   np.zeros(2, np.float32))
