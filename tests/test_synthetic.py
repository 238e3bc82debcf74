"""The synthetic scale-benchmark catalogue: deterministic, unique, recombined (not copied)
from the real shared tools, with their field statistics."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from benchmarks.synthetic import (
    BLOCK,
    TOOLS_PER_SERVICE,
    DonorPool,
    flat_document,
    real_tools,
    synthetic_chunks,
    synthetic_tools,
)
from toolsift import Parameter, Tool


@pytest.fixture(scope="module")
def real():
    return real_tools()


@pytest.fixture(scope="module")
def pool(real):
    return DonorPool.from_tools(real)


@pytest.fixture(scope="module")
def sample(pool):
    return list(synthetic_tools(20_000, pool=pool, seed=7))


def test_real_pool_is_the_four_mftr_sets(real):
    assert len(real) == 6417
    assert len({t.id for t in real}) == len(real)


def test_same_seed_same_tools_other_seed_other_tools(pool, sample):
    again = [t.to_dict() for t in synthetic_tools(3000, pool=pool, seed=7)]
    assert again == [t.to_dict() for t in sample[:3000]]
    other = [t.to_dict() for t in synthetic_tools(3000, pool=pool, seed=8)]
    assert sum(a["name"] == b["name"] for a, b in zip(again, other)) < 30


def test_prefix_and_chunking_do_not_change_tools(pool, sample):
    # Crosses a block boundary: tool i must not depend on n or on the chunk size.
    n = BLOCK + 500
    whole = [t.to_dict() for t in sample[:n]]
    chunked = [t.to_dict() for c in synthetic_chunks(n, pool=pool, seed=7, chunk=777) for t in c]
    assert chunked == whole
    assert all(len(c) <= 777 for c in synthetic_chunks(2000, pool=pool, seed=7, chunk=777))


def test_streams_without_building_everything(pool):
    first = list(itertools.islice(synthetic_tools(10**9, pool=pool, seed=1), 5))
    assert [t.id for t in first] == [f"syn1-{i}" for i in range(5)]


def test_ids_and_names_unique(sample):
    assert len({t.id for t in sample}) == len(sample)
    assert len({t.name for t in sample}) == len(sample)


def test_collisions_get_suffixes_and_stay_unique():
    tiny = [Tool(id=f"t{i}", name=n, description="Does a thing. And more.")
            for i, n in enumerate(["get_weather", "get_news", "get_stock_price", "list_files"])]
    tools = list(synthetic_tools(5000, pool=tiny, seed=0))
    names = [t.name for t in tools]
    assert len(set(names)) == len(names)
    assert any(re.search(r"_\d+$", n) for n in names)


def test_recombined_from_real_parts_not_copied(real, pool, sample):
    real_names = {t.name for t in real}
    # Every description opens with a real first sentence, or its opening up to a clause
    # boundary (the splice point).
    openings: dict[str, list[str]] = {}
    for h, c in zip(pool.heads, pool.cuts):
        if h:
            openings.setdefault(h.split(" ", 1)[0], []).append(h[:c] if c else h)
    real_params = {(p.name, p.type, p.description) for t in real for p in t.parameters}
    real_docs = {(t.description, tuple(p.name for p in t.parameters)) for t in real}
    real_descriptions = {t.description for t in real}
    verbs, objects = set(pool.verbs), set(pool.objects)
    copies = same_description = 0
    for t in sample[:5000]:
        assert t.name not in real_names
        service, verb, rest = t.name.split("_", 2)
        assert service.isalpha() and verb in verbs
        assert rest in objects or re.sub(r"_\d+$", "", rest) in objects
        assert t.description == "" or any(t.description.startswith(h)
                                          for h in openings.get(t.description.split(" ", 1)[0], ()))
        assert all((p.name, p.type, p.description) in real_params for p in t.parameters)
        assert len({p.name for p in t.parameters}) == len(t.parameters)
        copies += (t.description, tuple(p.name for p in t.parameters)) in real_docs
        same_description += t.description in real_descriptions
    # A first sentence without a clause boundary is kept whole (about 6% of real ones),
    # so a description can equal a real one, and with no parameter swapped, a whole tool
    # can too; both only rarely.
    assert same_description < 0.15 * 5000
    assert copies < 0.05 * 5000


def test_field_statistics_close_to_real(real, sample):
    def stats(tools):
        return {
            "description chars": np.mean([len(t.description) for t in tools]),
            "description words": np.mean([len(t.description.split()) for t in tools]),
            "parameters": np.mean([len(t.parameters) for t in tools]),
            "response chars": np.mean([len(t.response) for t in tools]),
            "flat words": np.mean([len(flat_document(t).split()) for t in tools]),
        }

    want, got = stats(real), stats(sample)
    for key in want:
        if want[key] == 0:
            assert got[key] == 0, key
        else:
            assert 0.65 <= got[key] / want[key] <= 1.5, (key, want[key], got[key])


def test_vocabulary_grows_with_the_catalogue(pool, sample):
    def services(tools):
        return {t.name.split("_", 1)[0] for t in tools}

    small, large = services(sample[:2000]), services(sample)
    assert len(small) == pytest.approx(2000 / TOOLS_PER_SERVICE, rel=0.05)
    assert len(large) == pytest.approx(len(sample) / TOOLS_PER_SERVICE, rel=0.05)


def test_bad_arguments_named(pool):
    with pytest.raises(ValueError, match="n must be"):
        list(synthetic_tools(-1, pool=pool))
    with pytest.raises(ValueError, match="chunk must be"):
        list(synthetic_chunks(10, pool=pool, chunk=0))
    with pytest.raises(ValueError, match="no tools"):
        DonorPool.from_tools([])
    with pytest.raises(ValueError, match="no verb"):
        DonorPool.from_tools([Tool(id="a", name="x", parameters=(Parameter("p"),))])
