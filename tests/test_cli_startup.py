"""What a fresh ``toolsift search`` process on a saved index imports: on a BM25 index the command
loads the index and prints the explained table without Numba, SciPy (which Numba
imports), pandas (which pyarrow's ``to_numpy`` imports) or pydantic (config checks of
values toolsift wrote itself are skipped, toolsift.checking.trusted). Checked on the
process's ``sys.modules`` after the command ran, and on the imports it *tried* (a finder
first on ``sys.meta_path`` records them), so a heavy import is caught whether or not that
package is installed where the tests run; no timing is asserted (the numbers are in
docs/results/startup-2026-11-28b.md and startup-2026-11-28d.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("numba", "llvmlite", "scipy", "pandas", "pydantic", "pydantic_core")

# Runs the CLI in-process (as `python -m toolsift` does), then reports what it imported or
# tried to import (pyarrow imports pandas only when it is installed).
_WRAPPER = """
import contextlib, io, json, sys
heavy = {heavy!r}
tried = set()
class Tried:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in heavy:
            tried.add(name)
        return None
sys.meta_path.insert(0, Tried())
from toolsift.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    status = main(sys.argv[1:])
print(json.dumps({{"status": status, "out": out.getvalue(), "blas": blas_threads(),
                  "heavy": sorted(tried | set(m for m in sys.modules if m.split(".")[0] in heavy)),
                  "loaded": sorted(m for m in sys.modules if (m + ".").startswith({watched!r}))}}))
"""

# Modules a search loads only when it needs them: the decomposer's need and argument rules
# (the step splitter, toolsift.decompose.steps, is all a multi-step request uses) and
# numpy.ma (which np.unique imports on its first call).
WATCHED = ("toolsift.decompose.", "numpy.ma.")  # a module matches with "." appended

# The thread count OpenBLAS runs with, asked of the library NumPy loaded (None when this
# NumPy build has no OpenBLAS of its own).
_BLAS_THREADS = """
def blas_threads():
    import ctypes, glob, os, numpy
    libs = os.path.join(os.path.dirname(numpy.__file__), os.pardir, "numpy.libs")
    for path in glob.glob(os.path.join(libs, "*openblas*")):
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                     "openblas_get_num_threads"):
            if hasattr(lib, name):
                return getattr(lib, name)()
    return None
"""


def _search(*args: str, env: dict[str, str] | None = None) -> dict:
    proc = subprocess.run([sys.executable, "-c", _BLAS_THREADS + _WRAPPER.format(heavy=HEAVY, watched=WATCHED), "search", *args],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def bm25_index(tmp_path_factory, demo_catalog):
    from toolsift import ToolIndex

    path = tmp_path_factory.mktemp("cli-startup") / "idx"
    ToolIndex.build(demo_catalog, preset="bm25", graph=True).save(path)
    return str(path)


def test_cli_search_imports_no_numba_scipy_pandas_or_pydantic(bm25_index):
    got = _search(bm25_index, "email the quarterly report to my manager")
    assert got["status"] == 0 and "send_email" in got["out"] and "matches description" in got["out"], got["out"]
    assert got["heavy"] == [], got["heavy"]


@pytest.mark.parametrize("extra", [["--json"], ["-k", "20"]])
def test_cli_search_variants_stay_light(bm25_index, extra):
    got = _search(bm25_index, "will it rain in Lisbon tomorrow?", *extra)
    assert got["status"] == 0 and got["heavy"] == [], got
    if extra == ["--json"]:
        hits = json.loads(got["out"])["hits"]
        assert hits and all("fields" in h and "why" in h for h in hits)


def test_cli_search_of_an_unmatched_query_stays_light(bm25_index):
    """The table's no-match hint lives beside the structured query's pydantic models; it
    is printed without them."""
    got = _search(bm25_index, "zzyzx qqqq")
    assert got["status"] == 0 and "no tool matches any word" in got["out"], got["out"]
    assert got["heavy"] == [], got["heavy"]



def test_cli_search_of_a_hybrid_index_stays_light(tmp_path, demo_index):
    """The default (hybrid) index: the static query encoder and the int8 scan are the C++
    core's, and the explanation is the NumPy formula's, so a one-step request imports no
    Numba either. (A request that splits into steps still scores its readings with the
    Numba kernel: toolsift.search.needs.)"""
    assert demo_index.config.uses_dense
    demo_index.save(tmp_path / "idx")
    got = _search(str(tmp_path / "idx"), "snap a photo of the porch")
    assert got["status"] == 0 and "get_camera_snapshot" in got["out"], got["out"]
    assert got["heavy"] == [], got["heavy"]
    assert got["loaded"] == [], got["loaded"]


def test_cli_search_of_a_hybrid_index_with_sparse_fields_stays_light(tmp_path, demo_catalog):
    """A catalogue where no tool has examples (a dense field without rows: an Arrow column
    of no chunks) and few have a response (a mostly-empty field, stored as its non-empty
    rows with their tools): reading either column imported pandas through pyarrow
    (``combine_chunks`` of no chunks, ``to_numpy``), ~0.25 s of the command's CPU."""
    from dataclasses import replace

    from toolsift import Catalog, ToolIndex

    tools = [replace(t, examples=(), response=t.response if i % 4 == 0 else "") for i, t in enumerate(demo_catalog)]
    index = ToolIndex.build(Catalog(tools))
    assert index.config.uses_dense
    index.save(tmp_path / "idx")
    got = _search(str(tmp_path / "idx"), "snap a photo of the porch")
    assert got["status"] == 0 and "get_camera_snapshot" in got["out"], got["out"]
    assert got["heavy"] == [], got["heavy"]


def test_cli_search_of_a_multi_step_request_loads_only_the_splitter(tmp_path, demo_index):
    """A request that splits into steps imports the step splitter, not the decomposer's
    need and argument rules (toolsift.decompose loads its names lazily); gibberish, whose
    dense-only hits need the null floors, imports no numpy.ma either."""
    demo_index.save(tmp_path / "idx")
    got = _search(str(tmp_path / "idx"), "get the weather in Paris, then send an email to Bob")
    assert got["status"] == 0 and "get_current_weather" in got["out"], got["out"]
    loaded = set(got["loaded"])
    assert "toolsift.decompose.steps" in loaded, got
    assert not loaded & {"toolsift.decompose.rules", "toolsift.decompose.arguments", "toolsift.decompose.tasks"}, got
    got = _search(str(tmp_path / "idx"), "qwxyzzy blorft")
    assert got["status"] == 0 and got["loaded"] == [], got["loaded"]


def _env_without_blas_settings(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    return {**env, **extra}


def test_cli_search_runs_numpy_with_one_blas_thread(bm25_index):
    """OpenBLAS's idle workers spin ~0.1 CPU-s in a short process; `search` does no BLAS
    work, so it starts NumPy with one thread (docs/results/startup-2026-11-28c.md)."""
    got = _search(bm25_index, "email the quarterly report", env=_env_without_blas_settings())
    assert got["status"] == 0
    if got["blas"] is not None:  # this NumPy has its own OpenBLAS: ask it
        assert got["blas"] == 1, got["blas"]


@pytest.mark.parametrize("var", ["OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"])
def test_cli_search_keeps_a_thread_count_the_user_chose(bm25_index, var):
    got = _search(bm25_index, "email the quarterly report", env=_env_without_blas_settings(**{var: "2"}))
    assert got["status"] == 0
    if got["blas"] is not None:
        assert got["blas"] == 2, got["blas"]


def test_only_short_commands_limit_blas_threads(monkeypatch):
    from toolsift import cli

    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delitem(sys.modules, "numpy", raising=False)  # as in a fresh process
    cli._one_blas_thread("index")  # k-means multiplies large matrices: every core
    assert "OPENBLAS_NUM_THREADS" not in os.environ
    cli._one_blas_thread("search")
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
