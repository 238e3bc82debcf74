"""The C++ boundary (issue 24, item 8): what the kernels read after the GIL is released is
what was validated, and document counts are checked before any int32 cast.

* a writable array the caller still holds is copied before validation (another thread
  could change it between the check and the read); a read-only array owning its data is
  read in place (zero-copy, proven by equal addresses);
* an index built from writable NumPy buffers keeps its own copy, so scribbling on them
  afterwards changes nothing;
* more documents than int32 ids hold is a ValueError naming the limit.
"""

from __future__ import annotations

import mmap
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

from toolsift import _core


def _small_index_arrays():
    """Three documents over four terms, as CSR postings (term-major)."""
    indptr = np.array([0, 2, 3, 5, 6], np.int64)
    doc_ids = np.array([0, 2, 1, 0, 1, 2], np.int32)
    tfs = np.array([1, 2, 1, 1, 3, 1], np.int32)
    doc_len = np.array([2, 4, 3], np.int32)
    return indptr, doc_ids, tfs, doc_len


def test_writable_caller_array_is_copied_read_only_owned_is_not():
    a = np.arange(10, dtype=np.int32)
    assert _core._stable_address(a) != a.ctypes.data  # writable, held by the caller: a copy
    a.flags.writeable = False
    assert _core._stable_address(a) == a.ctypes.data  # read-only and owning its data: zero-copy
    view = np.arange(10, dtype=np.int32)[2:]
    view.flags.writeable = False  # read-only view of a writable base: still a copy
    assert _core._stable_address(view) != view.ctypes.data


def test_index_from_writable_buffers_keeps_its_own_copy():
    indptr, doc_ids, tfs, doc_len = _small_index_arrays()
    idx = _core.InvertedIndex.from_arrays(indptr, doc_ids, tfs, doc_len)
    terms, offsets = np.array([0, 2, 3], np.int32), np.array([0, 3], np.int64)
    before = idx.score_dense(terms, offsets)
    # The caller's buffers change after validation: ids far out of range, zero lengths.
    doc_ids[:] = 2_000_000_000
    tfs[:] = -7
    doc_len[:] = 0
    indptr[1:] = 5
    np.testing.assert_array_equal(idx.score_dense(terms, offsets), before)


def test_read_only_arrow_columns_stay_zero_copy():
    indptr, doc_ids, tfs, doc_len = (pa.array(a) for a in _small_index_arrays())
    idx = _core.InvertedIndex.from_arrays(indptr, doc_ids, tfs, doc_len)
    view = np.asarray(idx.column("doc_ids"))
    assert view.ctypes.data == doc_ids.buffers()[1].address  # the Arrow buffer itself


def test_document_count_beyond_int32_is_a_clear_error(tmp_path):
    """2**31 documents (a sparse memory-mapped doc_len, never read): refused before the
    int32 cast instead of wrapping to negative ids."""
    n = 2**31
    path = tmp_path / "doc_len.bin"
    with open(path, "wb") as fh:
        fh.truncate(4 * n)  # sparse: no disk, no memory
    with open(path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        doc_len = pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(mm)])
        indptr, doc_ids, tfs = pa.array([0], pa.int64()), pa.array([], pa.int32()), pa.array([], pa.int32())
        with pytest.raises(ValueError, match="int32"):
            _core.InvertedIndex.from_arrays(indptr, doc_ids, tfs, doc_len)
    finally:
        del doc_len
        mm.close()


RACE = textwrap.dedent("""
    import threading
    import numpy as np
    from toolsift import _core
    from tests.test_core_boundary import _small_index_arrays

    idx = _core.InvertedIndex.from_arrays(*(a.copy() for a in _small_index_arrays()))
    good = np.array([0, 1, 2, 3] * (1 << 18), np.int32)  # ~1M terms: the kernel runs long enough to be raced
    offsets = np.array([0, good.size], np.int64)
    expect = idx.score_dense(good, offsets, threads=1)
    terms = good.copy()
    stop = threading.Event()

    def scribble():
        # Flip the caller's array between valid ids and ids far outside the vocabulary.
        while not stop.is_set():
            terms[:] = 1_000_000_000
            terms[:] = good

    t = threading.Thread(target=scribble)
    t.start()
    bad = 0
    try:
        for _ in range(300):
            try:
                got = idx.score_dense(terms, offsets, threads=1)
            except ValueError:
                continue  # validated while out of range: refused, fine
            if not np.array_equal(got, expect):
                bad += 1
    finally:
        stop.set()
        t.join()
    print("bad", bad)
""")


def test_array_changed_by_another_thread_during_a_call(tmp_path):
    """A thread scribbles on the terms array while another scores it: every call scores
    what it validated (or refuses it). Run in a child process: reading unchecked ids
    may crash the interpreter, which must not take the test session with it."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True, timeout=300, cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "bad 0", proc.stdout


def test_absurd_group_count_is_refused_not_allocated():
    """n_groups = 2**31 - 1 (a fuzzer's edge value) on a three-document index: refused
    with a ValueError before the engine allocates two int64 words per group (34 GB).
    Run under a 3 GB address-space limit, so that allocating instead fails loudly
    (MemoryError) rather than meeting the out-of-memory killer."""
    code = textwrap.dedent("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, resource.RLIM_INFINITY))
        import numpy as np
        from toolsift import _core
        tokens, offsets = np.array([0, 1, 1], np.int32), np.array([0, 2, 3], np.int64)
        groups = np.array([0, 1], np.int32)
        for make in (lambda: _core.InvertedIndex.build(tokens, offsets, 2, groups=groups, n_groups=2**31 - 1),
                     lambda: _core.InvertedIndex.from_arrays(np.array([0, 1, 2], np.int64), np.array([0, 1], np.int32),
                                                             np.array([1, 1], np.int32), np.array([1, 1], np.int32),
                                                             groups=groups, n_groups=2**31 - 1)):
            try:
                make()
            except ValueError as exc:
                assert "memory" in str(exc), exc
            else:
                raise AssertionError("accepted")
        idx = _core.InvertedIndex.build(tokens, offsets, 2, groups=groups, n_groups=5)
        print(idx.n_groups)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "5"
