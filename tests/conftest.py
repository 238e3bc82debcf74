"""Shared fixtures: the benchmark data beside the repository and small catalogues."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def dataset(name: str) -> Path:
    """Folder of one benchmark data set; the test fails (not skips) if it is missing."""
    path = DATA / name
    assert path.is_dir(), f"benchmark data missing: {path} (CI places ../shared beside the repo)"
    return path


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


@pytest.fixture(scope="session", autouse=True)
def _embedding_cache_in_tmp(tmp_path_factory):
    """Index builds use the embedding cache by default: keep the suite's entries out of the
    user's cache folder (a test that needs another folder sets its own)."""
    import os

    old = os.environ.get("TOOLSIFT_EMBED_CACHE_DIR")
    os.environ["TOOLSIFT_EMBED_CACHE_DIR"] = str(tmp_path_factory.mktemp("embed-cache"))
    yield
    if old is None:
        os.environ.pop("TOOLSIFT_EMBED_CACHE_DIR", None)
    else:
        os.environ["TOOLSIFT_EMBED_CACHE_DIR"] = old
