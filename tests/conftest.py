"""Shared fixtures: the benchmark data beside the repository and small catalogues.

Tests that read the benchmark data (``../shared/data``, or ``$TOOLSIFT_TEST_DATA``) skip
with the missing path as the reason when it is absent: call :func:`dataset`, or mark the
test ``@needs_data``. Markers: ``slow`` (left out of the fast tier,
``python -m pytest -m "not slow" -n 2``, two pytest-xdist workers: tests must not share
ports, files or environment) and ``needs_data``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA = Path(os.environ.get("TOOLSIFT_TEST_DATA") or Path(__file__).resolve().parents[1].parent / "shared" / "data")
_MISSING = f"benchmark data missing: {DATA} (CI places ../shared beside the repo; or set TOOLSIFT_TEST_DATA)"

#: Decorator for tests that read DATA directly.
needs_data = pytest.mark.needs_data


def dataset(name: str) -> Path:
    """Folder of one benchmark data set; the calling test skips (naming the path) if it is
    missing."""
    path = DATA / name
    if not path.is_dir():
        pytest.skip(f"{_MISSING}: no {name}")
    return path


_SITECUSTOMIZE = """\
import atexit, os, sys


def _toolsift_modules():
    mods = sorted(m for m in sys.modules if m == "toolsift" or m.startswith("toolsift."))
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)  # python -m toolsift...
    if spec is not None and spec.name.startswith("toolsift."):
        mods.append(spec.name)
    if mods:
        with open(os.path.join({out!r}, f"sub-{{os.getpid()}}.txt"), "w") as f:
            f.write("".join(m + "\\n" for m in mods))


atexit.register(_toolsift_modules)
"""


def pytest_sessionstart(session: pytest.Session) -> None:
    """With TOOLSIFT_TEST_INSTALLED=1 (CI's run) the tests must exercise the
    installed package, not the source tree.

    With TOOLSIFT_IMPORTED_MODULES=DIR, the Pythons the tests start (the CLI, gateway
    servers) record the toolsift modules they import too, at exit: the test processes
    never import some modules that only those run (the HTTP gateway, ``__main__``). A
    ``sitecustomize`` put first on the children's PYTHONPATH does it."""
    out = os.environ.get("TOOLSIFT_IMPORTED_MODULES")
    if out:
        site = Path(out).resolve() / "_site"
        site.mkdir(parents=True, exist_ok=True)
        tmp = site / f".sitecustomize-{os.getpid()}"
        tmp.write_text(_SITECUSTOMIZE.format(out=str(Path(out).resolve())))
        tmp.replace(site / "sitecustomize.py")  # atomic: xdist workers write it at once
        paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if str(site) not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), *paths) if p)
    if os.environ.get("TOOLSIFT_TEST_INSTALLED") == "1":
        import toolsift

        src = Path(__file__).resolve().parents[1] / "src"
        where = Path(toolsift.__file__).resolve()
        if src in where.parents:
            raise pytest.UsageError(f"TOOLSIFT_TEST_INSTALLED=1 but toolsift was imported from the source tree: {where}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With TOOLSIFT_IMPORTED_MODULES=DIR, each test process (each xdist worker) writes the
    toolsift modules it imported there, for scripts/check_fast_tier_modules.py (CI checks
    that the fast tier imports every one)."""
    out = os.environ.get("TOOLSIFT_IMPORTED_MODULES")
    if out:
        import sys

        mods = sorted(m for m in sys.modules if m == "toolsift" or m.startswith("toolsift."))
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / f"{worker}-{os.getpid()}.txt").write_text("".join(m + "\n" for m in mods))


@pytest.fixture(scope="session", autouse=True)
def _no_leftovers_at_session_end():
    """The same check for the whole session (each xdist worker's): set up before any
    other fixture and torn down after all of them, so a module- or session-scoped
    fixture's process still running at the end fails the run. This process adopts its
    orphaned descendants (a child subreaper), so they stay visible to the checks."""
    from tests import _leaks

    _leaks.make_subreaper()
    before = _leaks.snapshot()
    yield
    report = _leaks.leaked(before, "the test session")
    if report:
        pytest.fail(report, pytrace=False)


@pytest.fixture(autouse=True)
def _no_leftover_processes_or_threads(request):
    """Every process and non-daemon thread a test starts ends with the test, pass or fail
    (tests/_leaks.py); a leftover fails the test at teardown and is killed."""
    from tests import _leaks

    before = _leaks.snapshot()
    yield
    report = _leaks.leaked(before, request.node.nodeid)
    if report:
        pytest.fail(report, pytrace=False)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("needs_data") is not None and not DATA.is_dir():
        pytest.skip(_MISSING)


@pytest.fixture(scope="session")
def apibank_tools():
    from toolsift.adapters import load_catalog

    return load_catalog(dataset("mftr-apibank") / "dataset/augmented_tools/apibank/gpt-4o-mini_tools.json")


@pytest.fixture(scope="session")
def demo_catalog():
    from toolsift.adapters import demo_catalog_path, load_catalog

    return load_catalog(demo_catalog_path())


@pytest.fixture(scope="session")
def demo_index(demo_catalog):
    """The demo catalogue indexed with the default config (read-only in tests)."""
    from toolsift import ToolIndex

    return ToolIndex.build(demo_catalog)


@pytest.fixture(scope="session")
def demo_bm25_index(demo_catalog):
    """The demo catalogue on BM25 alone (``preset="bm25"``, read-only in tests): where a
    test needs "no tool shares a word with the query" (the hybrid default's dense half
    gives every tool some cosine, even for gibberish)."""
    from toolsift import ToolIndex

    return ToolIndex.build(demo_catalog, preset="bm25")


@pytest.fixture(scope="session", autouse=True)
def _embedding_cache_in_tmp(tmp_path_factory):
    """Index builds use the embedding cache by default: keep the suite's entries out of the
    user's cache folder (a test that needs another folder sets its own)."""
    import os

    old = os.environ.get("TOOLSIFT_EMBED_CACHE_DIR")
    # Under pytest-xdist the workers share one folder (the run's base temp's parent), so a
    # catalogue the hybrid default embeds in one worker is a cache hit in the other: the
    # cache is made for concurrent writers (atomic entries, checked on read).
    base = tmp_path_factory.getbasetemp()
    folder = base.parent / "embed-cache-shared" if os.environ.get("PYTEST_XDIST_WORKER") else base / "embed-cache"
    folder.mkdir(exist_ok=True)
    os.environ["TOOLSIFT_EMBED_CACHE_DIR"] = str(folder)
    yield
    if old is None:
        os.environ.pop("TOOLSIFT_EMBED_CACHE_DIR", None)
    else:
        os.environ["TOOLSIFT_EMBED_CACHE_DIR"] = old
