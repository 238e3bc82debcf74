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
    from toolsift.adapters import load_catalog
    from toolsift.adapters import demo_catalog_path

    return load_catalog(demo_catalog_path())


@pytest.fixture(scope="session")
def demo_index(demo_catalog):
    """The demo catalogue indexed with the default config (read-only in tests)."""
    from toolsift import ToolIndex

    return ToolIndex.build(demo_catalog)
