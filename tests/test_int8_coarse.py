"""The exact prefilter of int8 top-n scans (``_core.int8_coarse``, toolsift/int8_coarse.h)
against an independent NumPy twin: exact int8 dot products in int64, the core's float32
score, positive scores only, best first with ties to the lower key. Random rows, rows the
codebook fits badly, all-equal rows, zero rows and queries, n >= rows, one row, no rows,
real MiniLM description vectors; the binding's checks; the GIL released."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from toolsift import _core
from toolsift.index.dense import freeze



def twin_top(q_codes, q_scales, codes, scales, keys, n):
    """Per query row, the best ``n`` keys with a positive score, best first."""
    acc = q_codes.astype(np.int64) @ codes.astype(np.int64).T
    scores = (acc.astype(np.int32).astype(np.float32) * q_scales[:, None].astype(np.float32)) * scales[None, :]
    out = []
    for row in scores:
        pos = np.flatnonzero(row > 0)
        order = np.lexsort((keys[pos], -row[pos]))  # score desc, then key asc
        out.append(keys[pos][order][:n])
    return out


def core_top(q_codes, q_scales, codes, scales, keys, n, coarse):
    ids, counts = _core.int8_top(q_codes, q_scales, codes, scales, keys, n, coarse=coarse)
    return [ids[i, :c] for i, c in enumerate(counts.tolist())]


def _matrix(rng, n, d, kind):
    if kind == "wide":  # flat codes: a bad fit for the codebook, loose bounds
        codes = rng.integers(-128, 128, (n, d))
    elif kind == "equal":  # every row the same: ties decided by key alone
        codes = np.repeat(rng.normal(0, 40, (1, d)).clip(-127, 127), n, axis=0)
    elif kind == "sparse":
        codes = rng.normal(0, 40, (n, d)).clip(-127, 127) * (rng.random((n, d)) < 0.2)
    else:
        codes = rng.normal(0, 40, (n, d)).clip(-127, 127)
    codes = codes.astype(np.int8)
    scales = rng.uniform(0.001, 0.01, n).astype(np.float32)
    if kind == "equal":
        scales[:] = 0.005
    if n > 2:
        codes[1] = 0  # a zero row
        scales[2] = 0.0  # an empty document
    keys = rng.permutation(3 * n)[:n].astype(np.int64)
    return freeze(codes), freeze(scales), freeze(keys)


def _check(q_codes, q_scales, codes, scales, keys, n):
    coarse = _core.int8_coarse(codes, scales)
    want = twin_top(q_codes, q_scales, codes, scales, keys, n)
    got = core_top(q_codes, q_scales, codes, scales, keys, n, coarse)
    plain = core_top(q_codes, q_scales, codes, scales, keys, n, None)
    for w, g, p in zip(want, got, plain, strict=True):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(p, w)


@pytest.mark.parametrize("kind", ["normal", "wide", "equal", "sparse"])
@pytest.mark.parametrize("n_rows,d", [(1, 7), (2, 384), (17, 100), (300, 130), (1500, 384)])
def test_matches_twin(kind, n_rows, d):
    rng = np.random.default_rng(n_rows * 31 + d)
    codes, scales, keys = _matrix(rng, n_rows, d, kind)
    q_codes = rng.normal(0, 40, (4, d)).clip(-127, 127).astype(np.int8)
    q_codes[1] = 0  # a zero query: nothing positive
    q_scales = rng.uniform(0.001, 0.01, 4).astype(np.float32)
    for n in (1, 30, n_rows, n_rows + 5):
        _check(q_codes, q_scales, codes, scales, keys, n)


@pytest.mark.parametrize("threads", [1, 2])
def test_queries_sharing_a_pass_equal_one_at_a_time(threads):
    """Several queries of one call share step (1) (each block of 4-bit rows read and
    decoded once for all of them): every query's top n is the twin's and the one it gets
    alone, for 1 to 9 queries, on rows the codebook fits well and badly."""
    rng = np.random.default_rng(5)
    for kind in ("normal", "wide", "sparse"):
        codes, scales, keys = _matrix(rng, 1200, 384, kind)
        coarse = _core.int8_coarse(codes, scales)
        q_all = rng.normal(0, 40, (9, 384)).clip(-127, 127).astype(np.int8)
        q_all[3] = 0
        s_all = rng.uniform(0.001, 0.01, 9).astype(np.float32)
        alone = [core_top(q_all[i:i + 1], s_all[i:i + 1], codes, scales, keys, 30, coarse)[0] for i in range(9)]
        want = twin_top(q_all, s_all, codes, scales, keys, 30)
        for m in range(1, 10):
            ids, counts = _core.int8_top(q_all[:m], s_all[:m], codes, scales, keys, 30, coarse=coarse,
                                         threads=threads)
            for i in range(m):
                np.testing.assert_array_equal(ids[i, :counts[i]], want[i])
                np.testing.assert_array_equal(ids[i, :counts[i]], alone[i])


def test_no_rows():
    codes, scales = freeze(np.zeros((0, 384), np.int8)), freeze(np.zeros(0, np.float32))
    coarse = _core.int8_coarse(codes, scales)
    assert coarse.n_rows == 0
    ids, counts = _core.int8_top(np.ones((2, 384), np.int8), np.ones(2, np.float32), codes, scales,
                                 freeze(np.zeros(0, np.int64)), 30, coarse=coarse)
    assert ids.shape == (2, 0) and counts.tolist() == [0, 0]


@pytest.fixture(scope="module")
def real_matrix():
    """The demo catalogue's MiniLM description vectors (real text, the hybrid preset's
    index), queries the static encoder's vectors of real requests."""
    import importlib

    from toolsift import Query, ToolIndex
    from toolsift.adapters import demo_catalog_path, load_catalog
    from toolsift.presets import preset_config
    from toolsift.search.plan import plan_queries

    retrievers = importlib.import_module("toolsift.search.retrievers")
    ix = ToolIndex.build(load_catalog(demo_catalog_path()), config=preset_config("hybrid", threads=1))
    st, cfg = ix._state, ix.config
    live, m = st.dense["description"].live_rows()
    texts = ["send an email to my team", "book a flight to Paris", "lock the front door", "weather tomorrow",
             "convert 20 dollars to euros", "play some jazz", "what is on my calendar", "translate hello"]
    q = [retrievers._codes(plan_queries(st, cfg, [Query.from_text(t)]).fields["description"]) for t in texts]
    return m.codes, m.scales, live, np.concatenate([c for c, _ in q]), np.concatenate([s for _, s in q])


def test_matches_twin_on_real_vectors(real_matrix):
    codes, scales, live, q_codes, q_scales = real_matrix
    for n in (1, 10, 30, codes.shape[0]):
        _check(q_codes, q_scales, codes, scales, live, n)
    # Stacked 40 times (distinct keys): ties between copies go to the lower key.
    big = freeze(np.tile(codes, (40, 1)))
    big_scales = freeze(np.tile(scales, 40))
    keys = freeze(np.arange(big.shape[0], dtype=np.int64)[::-1].copy())
    _check(q_codes, q_scales, big, big_scales, keys, 30)


def test_dense_field_uses_it_and_agrees(real_matrix, monkeypatch):
    """DenseField.top_tools with the prefilter (threshold lowered to the demo's size)
    returns what it returns without it."""
    from toolsift.index import dense_field
    from toolsift.index.dense import Int8Matrix

    codes, scales, _, q_codes, q_scales = real_matrix
    field = dense_field.DenseField(Int8Matrix(codes, scales), None, codes.shape[0])
    monkeypatch.setattr(dense_field, "COARSE_MIN_ROWS", 1)
    monkeypatch.setattr(dense_field, "COARSE_AFTER_SCANS", 0)
    assert field.coarse() is (None if not _core.int8_coarse_supported() else field.coarse())
    with_pre = field.top_tools(q_codes, q_scales, 30)
    monkeypatch.setattr(dense_field, "PREFILTER", False)
    without = field.top_tools(q_codes, q_scales, 30)
    for a, b in zip(with_pre, without, strict=True):
        np.testing.assert_array_equal(a, b)


def test_dense_field_builds_it_after_its_first_scans(real_matrix, monkeypatch):
    """The first COARSE_AFTER_SCANS scans of a field go without the prefilter (a short
    process never pays for building it); the next one builds it; the ids never change."""
    from toolsift.index import dense_field
    from toolsift.index.dense import Int8Matrix

    codes, scales, _, q_codes, q_scales = real_matrix
    field = dense_field.DenseField(Int8Matrix(codes, scales), None, codes.shape[0])
    monkeypatch.setattr(dense_field, "COARSE_MIN_ROWS", 1)
    monkeypatch.setattr(dense_field, "COARSE_AFTER_SCANS", 3)
    built = []
    real = _core.int8_coarse
    monkeypatch.setattr(_core, "int8_coarse", lambda *a, **kw: built.append(1) or real(*a, **kw))
    first = field.top_tools(q_codes, q_scales, 30)
    for scan in range(2, 6):
        for a, b in zip(field.top_tools(q_codes, q_scales, 30), first, strict=True):
            np.testing.assert_array_equal(a, b)
        assert len(built) == (int(_core.int8_coarse_supported()) if scan > 3 else 0), scan


def test_binding_checks():
    rng = np.random.default_rng(3)
    codes, scales, keys = _matrix(rng, 50, 64, "normal")
    q, qs = np.ones((1, 64), np.int8), np.ones(1, np.float32)
    coarse = _core.int8_coarse(codes, scales)
    with pytest.raises(ValueError, match="read-only"):
        _core.int8_coarse(codes.copy(), scales)
    view = codes.copy().view()
    view.flags.writeable = False  # read-only view of a writable base: could still change
    with pytest.raises(ValueError, match="read-only"):
        _core.int8_coarse(view, scales)
    with pytest.raises(ValueError, match="finite"):
        _core.int8_coarse(codes, freeze(np.full(50, np.nan, np.float32)))
    with pytest.raises(ValueError, match="dim"):
        _core.int8_coarse(freeze(np.zeros((3, 0), np.int8)), freeze(np.ones(3, np.float32)))
    with pytest.raises(ValueError, match="one entry per row"):
        _core.int8_coarse(codes, freeze(np.ones(49, np.float32)))
    other, other_scales, _ = _matrix(rng, 50, 64, "normal")
    with pytest.raises(ValueError, match="other codes"):
        _core.int8_top(q, qs, other, other_scales, keys, 5, coarse=coarse)
    with pytest.raises(ValueError, match="q_scales"):
        _core.int8_top(q, -qs, codes, scales, keys, 5, coarse=coarse)
    with pytest.raises(TypeError):
        _core.int8_top(q, qs, codes, scales, keys, 5, coarse="not a prefilter")
    assert coarse.n_rows == 50 and coarse.dim == 64 and len(coarse.levels) == 16
    assert coarse.nbytes == 64 * 64 + 64 * 4  # 50 rows padded to 64: 4-bit codes of 128 dims, one bound


def test_releases_the_gil():
    """Another Python thread runs while a long prefiltered scan is in the core."""
    rng = np.random.default_rng(4)
    codes, scales, keys = _matrix(rng, 20_000, 384, "wide")  # loose bounds: many rows read
    coarse = _core.int8_coarse(codes, scales)
    q = rng.normal(0, 40, (200, 384)).clip(-127, 127).astype(np.int8)
    qs = np.full(200, 0.01, np.float32)
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    try:
        start = time.perf_counter()
        _core.int8_top(q, qs, codes, scales, keys, 30, coarse=coarse)
        end = time.perf_counter()
    finally:
        done.set()
        t.join()
    assert sum(start < x < end for x in ticks) >= 2


# ------------------------------------------------------------------ IVF probes (int8_probe_top)

@pytest.mark.parametrize("kind", ["normal", "wide", "equal", "sparse"])
@pytest.mark.parametrize("n", [1, 7, 30, 500])
@pytest.mark.parametrize("threads", [1, 2])
def test_probe_top_with_coarse_equals_the_twin_over_the_probed_lists(kind, n, threads):
    """An IVF probe through the prefilter: lists of uneven sizes (empty ones, lists that
    start and end inside a 16-row block), each query its own probed lists, in any order.
    The ids are the twin's over exactly the probed rows, best first, ties to the lower id;
    the probe without the prefilter keeps the same set."""
    rng = np.random.default_rng(hash((kind, n)) % 2**32)
    rows, d, k = 700, 96, 23
    codes, scales, _ = _matrix(rng, rows, d, kind)
    sizes = rng.multinomial(rows, rng.dirichlet(np.ones(k) * 0.7))
    sizes[4] += sizes[3]
    sizes[3] = 0  # an empty list
    list_ptr = freeze(np.concatenate(([0], np.cumsum(sizes))).astype(np.int64))
    list_ids = freeze(rng.permutation(5 * rows)[:rows].astype(np.int64))
    q_codes = rng.normal(0, 40, (6, d)).clip(-127, 127).astype(np.int8)
    q_codes[5] = 0  # a zero query: nothing positive
    q_scales = rng.uniform(0.001, 0.01, 6).astype(np.float32)
    probes = [rng.choice(k, p, replace=False) for p in (1, 3, 8, k, 5, 4)]
    probe_ptr = np.concatenate(([0], np.cumsum([p.size for p in probes]))).astype(np.int64)
    flat = np.concatenate(probes).astype(np.int64)
    coarse = _core.int8_coarse(codes, scales)
    ids, counts = _core.int8_probe_top(q_codes, q_scales, codes, scales, list_ptr, list_ids, probe_ptr, flat, n,
                                       threads=threads, coarse=coarse)
    plain, plain_counts = _core.int8_probe_top(q_codes, q_scales, codes, scales, list_ptr, list_ids, probe_ptr,
                                               flat, n, threads=threads)
    for i, p in enumerate(probes):
        sel = np.concatenate([np.arange(list_ptr[c], list_ptr[c + 1]) for c in p])
        want = twin_top(q_codes[i:i + 1], q_scales[i:i + 1], codes[sel], scales[sel], list_ids[sel], n)[0]
        assert ids[i, :counts[i]].tolist() == want.tolist()
        assert sorted(plain[i, :plain_counts[i]].tolist()) == sorted(want.tolist())


def test_probe_top_rejects_a_prefilter_of_other_rows():
    rng = np.random.default_rng(5)
    codes, scales, _ = _matrix(rng, 64, 32, "normal")
    other, other_scales, _ = _matrix(rng, 64, 32, "normal")
    q, qs = codes[:2].copy(), np.ones(2, np.float32)
    args = (np.array([0, 30, 64], np.int64), np.arange(64, dtype=np.int64), np.array([0, 1, 2], np.int64),
            np.array([0, 1], np.int64), 5)
    with pytest.raises(ValueError, match="other codes"):
        _core.int8_probe_top(q, qs, codes, scales, *args, coarse=_core.int8_coarse(other, other_scales))
    with pytest.raises(TypeError, match="Int8Coarse"):
        _core.int8_probe_top(q, qs, codes, scales, *args, coarse="no")


# ------------------------------------------------- IVF lists without a row copy (int8_probe_top_rows)

@pytest.mark.parametrize("kind", ["normal", "wide", "equal", "sparse"])
@pytest.mark.parametrize("n", [1, 7, 30, 500])
@pytest.mark.parametrize("threads", [1, 2])
def test_probe_top_rows_equals_the_twin_and_the_list_copy(kind, n, threads):
    """IVF lists that hold row ids only: the prefilter is built over the matrix's listed
    rows in list order (``int8_coarse(rows=list_ids)``) and the int8 rows are read from
    the matrix. The ids are the twin's over exactly the probed rows (best first, ties to
    the lower id) and those of the probe over a list-order copy with its own prefilter;
    the two prefilters are the same codebook and size."""
    rng = np.random.default_rng(hash(("rows", kind, n)) % 2**32)
    n_rows, d, k = 900, 96, 23
    codes, scales, _ = _matrix(rng, n_rows, d, kind)
    listed = np.sort(rng.choice(n_rows, 700, replace=False))  # 200 rows in no list
    sizes = rng.multinomial(listed.size, rng.dirichlet(np.ones(k) * 0.7))
    sizes[4] += sizes[3]
    sizes[3] = 0  # an empty list
    list_ptr = freeze(np.concatenate(([0], np.cumsum(sizes))).astype(np.int64))
    list_ids = freeze(rng.permutation(listed).astype(np.int64))
    q_codes = rng.normal(0, 40, (6, d)).clip(-127, 127).astype(np.int8)
    q_codes[5] = 0  # a zero query: nothing positive
    q_scales = rng.uniform(0.001, 0.01, 6).astype(np.float32)
    probes = [rng.choice(k, p, replace=False) for p in (1, 3, 8, k, 5, 4)]
    probe_ptr = np.concatenate(([0], np.cumsum([p.size for p in probes]))).astype(np.int64)
    flat = np.concatenate(probes).astype(np.int64)
    coarse = _core.int8_coarse(codes, scales, rows=list_ids)
    ids, counts = _core.int8_probe_top_rows(q_codes, q_scales, codes, scales, list_ptr, list_ids, probe_ptr, flat,
                                            n, threads=threads, coarse=coarse)
    copy_codes, copy_scales = freeze(codes[list_ids]), freeze(scales[list_ids])
    copy_coarse = _core.int8_coarse(copy_codes, copy_scales)
    assert coarse.levels == copy_coarse.levels and coarse.nbytes == copy_coarse.nbytes
    by_copy, copy_counts = _core.int8_probe_top(q_codes, q_scales, copy_codes, copy_scales, list_ptr, list_ids,
                                                probe_ptr, flat, n, threads=threads, coarse=copy_coarse)
    for i, p in enumerate(probes):
        rows = np.concatenate([list_ids[list_ptr[c]:list_ptr[c + 1]] for c in p])
        want = twin_top(q_codes[i:i + 1], q_scales[i:i + 1], codes[rows], scales[rows], rows, n)[0]
        assert ids[i, :counts[i]].tolist() == want.tolist()
        assert by_copy[i, :copy_counts[i]].tolist() == want.tolist()


def test_probe_top_rows_checks_its_prefilter_and_rows():
    rng = np.random.default_rng(6)
    codes, scales, _ = _matrix(rng, 64, 32, "normal")
    list_ids = freeze(np.arange(63, -1, -1, dtype=np.int64))
    q, qs = codes[:2].copy(), np.ones(2, np.float32)
    args = (np.array([0, 30, 64], np.int64), list_ids, np.array([0, 1, 2], np.int64), np.array([0, 1], np.int64), 5)
    coarse = _core.int8_coarse(codes, scales, rows=list_ids)
    ids, counts = _core.int8_probe_top_rows(q, qs, codes, scales, *args, coarse=coarse)
    for i, rows in enumerate((np.arange(63, 33, -1), np.arange(33, -1, -1))):  # list 0 holds rows 63..34
        want = twin_top(q[i:i + 1], qs[i:i + 1], codes[rows], scales[rows], rows, 5)[0]
        assert ids[i, :counts[i]].tolist() == want.tolist()
    assert counts[0] == 5
    with pytest.raises(ValueError, match="rows=list_ids"):  # a prefilter of all rows, not of the lists
        _core.int8_probe_top_rows(q, qs, codes, scales, *args, coarse=_core.int8_coarse(codes, scales))
    with pytest.raises(ValueError, match="rows=list_ids"):  # other list ids than the prefilter's
        _core.int8_probe_top_rows(q, qs, codes, scales, args[0], freeze(list_ids.copy()), *args[2:], coarse=coarse)
    with pytest.raises(TypeError, match="Int8Coarse"):
        _core.int8_probe_top_rows(q, qs, codes, scales, *args, coarse=None)
    with pytest.raises(ValueError, match="chosen rows"):  # int8_top takes no prefilter of chosen rows
        _core.int8_top(q, qs, codes, scales, np.arange(64, dtype=np.int64), 5, coarse=coarse)
    with pytest.raises(ValueError, match="out of range"):
        _core.int8_coarse(codes, scales, rows=freeze(np.array([0, 64], np.int64)))
    with pytest.raises(ValueError, match="read-only rows"):
        _core.int8_coarse(codes, scales, rows=np.arange(4, dtype=np.int64))
    with pytest.raises(ValueError, match="is not a list"):
        _core.int8_probe_top_rows(q, qs, codes, scales, *args[:3], np.array([0, 2], np.int64), 5, coarse=coarse)
