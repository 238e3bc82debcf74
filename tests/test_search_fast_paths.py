"""The single-query fast paths of the search equal the general path they stand in for.

Each fast path (one query's CSR rows, its candidate top-up, its duplicate-free ids, one
argument text's parameter matches, the shared term batch of a raw query, the explanation
built from whole-hit conversions) is compared with a slow, obvious twin: the code it
replaced, kept here.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from toolsift import Query, ToolIndex, ToolNeed
from toolsift.csr import row_of
from toolsift.index.dense import Int8Matrix
from toolsift.index.dense_field import DenseField
from toolsift.schema import FIELDS
from toolsift.search import retrievers
from toolsift.search.candidates import _fill, find_candidates, pack
from toolsift.search.hits import Hit, rank
from toolsift.search.plan import plan_queries
from toolsift.search.query import as_query
from toolsift.search.retrievers import _csr_unique
from toolsift.search.score import score


def test_row_of_one_row_equals_repeat():
    for ptr in (np.array([0, 0]), np.array([0, 4]), np.array([2, 7]), np.array([0, 2, 2, 5])):
        want = np.repeat(np.arange(ptr.size - 1, dtype=np.int64), np.diff(ptr))
        got = row_of(ptr)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)


def _fill_by_sets(have: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    pool = np.arange(k + have.size, dtype=np.int64)
    extra = pool[~np.isin(pool, have)][: k - have.size]
    merged = np.union1d(have, extra)
    return merged, np.isin(merged, have)


def test_fill_equals_set_operations():
    rng = np.random.default_rng(0)
    for _ in range(300):
        k = int(rng.integers(1, 40))
        have = np.unique(rng.integers(0, 3 * k + 5, size=int(rng.integers(0, k)))).astype(np.int64)
        got, found = _fill(have, k)
        want, want_found = _fill_by_sets(have, k)
        assert got.dtype == want.dtype == np.int64
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(found, want_found)


def test_csr_unique_one_query_equals_general():
    rng = np.random.default_rng(1)
    for n in (0, 1, 5, 300):
        ids = rng.integers(0, 50, size=n)
        ptr, got = _csr_unique(np.zeros(n, np.int64), ids, 1)
        # The general path: the same ids as query 0 of two (query 1 empty).
        ptr2, want = _csr_unique(np.zeros(n, np.int64), ids, 2)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(ptr, ptr2[:2])
        assert got.dtype == np.int64 and ptr.dtype == np.int64


def test_sorted_unique_equals_numpy_unique():
    from toolsift.csr import sorted_unique

    rng = np.random.default_rng(2)
    for n in (0, 1, 2, 7, 300, 20_000):
        for hi in (1, 3, 10 * n + 1):
            values = rng.integers(-5, hi, size=n).astype(np.int64)
            got = sorted_unique(values)
            np.testing.assert_array_equal(got, np.unique(values))
            assert got.dtype == np.int64


def test_csr_unique_equals_per_query_unique():
    rng = np.random.default_rng(3)
    for nq in (2, 3, 40):
        rows = np.sort(rng.integers(0, nq, size=500))
        ids = rng.integers(0, 60, size=500)
        ptr, got = _csr_unique(rows, ids, nq)
        for q in range(nq):
            np.testing.assert_array_equal(got[ptr[q]:ptr[q + 1]], np.unique(ids[rows == q]))
        assert ptr[-1] == got.size


def test_dense_field_rejects_groups_out_of_range():
    m = Int8Matrix(np.ones((3, 4), np.int8), np.ones(3, np.float32))
    with pytest.raises(ValueError, match="groups must lie in 0..1"):
        DenseField(m, np.array([0, 1, 2]), 2)
    with pytest.raises(ValueError, match="groups must lie"):
        DenseField(m, np.array([0, -1, 1]), 2)


def test_raw_query_shares_one_term_batch(demo_index):
    st, cfg = demo_index._state, demo_index.config
    plan = plan_queries(st, cfg, [as_query("send an email to my boss", "q")])
    batches = {id(plan.fields[f].terms) for f in FIELDS}
    assert len(batches) == 1
    want = st.vocab.encode_batch([cfg.analyzer.tokenize("send an email to my boss")], grow=False)
    got = plan.fields["description"].terms
    np.testing.assert_array_equal(got.terms, want.terms)
    np.testing.assert_array_equal(got.offsets, want.offsets)


def _explain_twin(st, plan, cands, q, i, score_, rank_, terms, params, matched):
    """The per-hit explanation as it was written before the fast path (numpy per hit)."""
    t = int(cands.tool[i])
    tool = st.catalog[t]
    values = terms.tolist()
    fields = {f: values[j] for j, f in enumerate(FIELDS)}
    p0, p1 = int(st.param_ptr[t]), int(st.param_ptr[t + 1])
    n_par, na = p1 - p0, int(cands.n_args[q])
    names = plan.arg_names[q]
    matches = {}
    if na and n_par:
        block = cands.ap_sims[cands.ap_off[i]:cands.ap_off[i] + na * n_par].reshape(na, n_par)
        best = block.argmax(axis=0)
        sims = block[best, np.arange(n_par)].tolist()
        for p, (b, sim) in enumerate(zip(best.tolist(), sims)):
            matches[tool.parameters[p].name] = (names[b] if sim > 0 else None, sim)
    else:
        for p in range(n_par):
            matches[tool.parameters[p].name] = (None, 0.0)
    contrib = sorted(((w * fields[f], f) for w, f in zip(params.weights, FIELDS)), reverse=True)
    parts = [f"{f} {fields[f]:.2f}" for c, f in contrib if c > 0][:2]
    why = "matches " + " and ".join(parts) if parts else ("weak lexical match" if matched else "no field matches")
    if plan.penalize[q] and params.w_req > 0:
        def key(name):  # an identifier by its words, as the reason compares names
            return " ".join(re.sub(r"(?<=[a-z0-9])(?=[A-Z])|[_\-./:]+", " ", name).casefold().split())

        given = {key(n) for n in names if n}
        missing = [p.name for p in tool.parameters
                   if p.required and matches[p.name][1] < params.tau and key(p.name) not in given]
        if missing:
            why += "; no argument for required " + ", ".join(missing)
    return Hit(tool=tool, score=score_, rank=rank_, fields=fields, penalty=float(terms[4]),
               parameters=matches, why=why, matched=matched)


def _rank_twin(st, plan, cands, scores, terms, matched, k, params):
    out = []
    for q in range(len(plan)):
        lo, hi = int(cands.ptr[q]), int(cands.ptr[q + 1])
        tools, s = cands.tool[lo:hi], scores[lo:hi]
        order = np.lexsort((tools, -s))[:k]
        hits = []
        for r, j in enumerate(order, 1):
            m = bool(matched[lo + j])
            if terms is None:
                hits.append(Hit(tool=st.catalog[int(tools[j])], score=float(s[j]), rank=r, matched=m))
            else:
                hits.append(_explain_twin(st, plan, cands, q, lo + int(j), float(s[j]), r, terms[lo + j], params, m))
        out.append(hits)
    return out


QUERIES = [
    "send an email to my boss",
    "weather",
    "zzzz qqqq",  # matches nothing: every hit is a top-up
    Query(needs=(ToolNeed("convert 100 dollars to euros", "convert currency", "converted amount"),
                 ToolNeed("email the result", "send an email", "")),
          arguments={"amount": "money amount", "to": "recipient address", "currency": "target currency"}),
    Query(needs=(ToolNeed("book a flight", "flight booking", "a booking reference"),),
          arguments={"destination": "city"}),
]


@pytest.mark.parametrize("explain", [False, True])
@pytest.mark.parametrize("k", [1, 5, 60])
@pytest.mark.parametrize("demo_index", ["hybrid", "bm25"], indirect=True)
def test_rank_equals_per_hit_twin(demo_index, explain, k):
    st, cfg = demo_index._state, demo_index.config
    for queries in ([as_query(q, "q") for q in QUERIES], [as_query(QUERIES[0], "q")], [as_query(QUERIES[3], "q")]):
        for params in (cfg.params, cfg.structured_scoring):
            plan = plan_queries(st, cfg, queries)
            fr = retrievers(st, cfg)
            ptr, tool, matched = find_candidates(st, plan, fr, n=cfg.candidates, k=k)
            cands = pack(st, plan, fr, ptr, tool)
            scores, terms = score(st, cands, params, breakdown=explain)
            got = rank(st, plan, cands, scores, terms, matched, k, params)
            want = _rank_twin(st, plan, cands, scores, terms, matched, k, params)
            assert got == want
            assert all(type(h.score) is float and type(h.matched) is bool for hs in got for h in hs)


def test_hybrid_single_search_equals_its_batch_row(demo_catalog):
    """One raw query takes the single-text shortcuts (dense candidates without the CSR
    union, the static encoder's one-text path, encode_texts' one call); the same query
    inside a batch of several takes the general ones: same hits, same scores."""
    from toolsift import ToolIndex
    from toolsift.presets import preset_config

    index = ToolIndex.build(demo_catalog, config=preset_config("hybrid", dense_candidates=7))
    texts = ["send an email to my boss", "weather in Paris tomorrow", "?!", "zzzz qqqq", "refund order 42"]
    batch = index.search_batch(texts + ["book a flight"], k=12)
    for text, want in zip(texts, batch):
        got = index.search(text, k=12)
        assert [(h.id, h.score) for h in got] == [(h.id, h.score) for h in want]


@pytest.mark.parametrize("preset", ["hybrid", "bm25"])
def test_search_of_text_equals_the_query_path(demo_catalog, preset):
    """``ToolIndex.search(text)`` makes no Query on the engine's one-call paths and splits
    a multi-step request once (search.search_text); ``search(Query.from_text(text))``
    takes search.run. Same hits, scores, ranks and evidence; the same error for bad text."""
    from toolsift.errors import QueryError

    index = ToolIndex.build(demo_catalog, preset=preset)
    texts = ["send an email to my boss", "get the weather in Paris, then send an email to Bob",
             "First book a flight to Rome. After that, reserve a hotel and email me the receipt.",
             "Wetter in Zürich morgen", "?!", "zzzz qqqq"]
    for text in texts:
        for k in (1, 5, 30):
            got = index.search(text, k=k)
            want = index.search(Query.from_text(text), k=k)
            assert [_bare(h) for h in got] == [_bare(h) for h in want], text
    for bad in ("", "   ", "x" * 100_001, "bad \ud800 surrogate"):
        with pytest.raises(QueryError) as by_text:
            index.search(bad)
        with pytest.raises(QueryError) as by_query:
            index.search(Query.from_text(bad))
        assert str(by_text.value) == str(by_query.value)


def _bare(h: Hit) -> tuple:
    return h.tool.id, h.score, h.rank, h.matched, h.why


@pytest.mark.parametrize("k", [1, 5, 60])
@pytest.mark.parametrize("demo_index", ["hybrid", "bm25"], indirect=True)
def test_why_only_explanation_equals_the_full_one(demo_index, k):
    """``explain="why"`` (what the gateway asks for) gives the same hits and the same
    reason, missing-argument clause included, without the breakdown's dicts."""
    from benchmarks.http_load import queries

    many = list(QUERIES) + list(queries()) + ["delete", "get the stock price of ACME", "translate text to french"]
    for q in many:
        full = demo_index.search(q, k=k, explain=True)
        why = demo_index.search(q, k=k, explain="why")
        assert [_bare(h) for h in why] == [_bare(h) for h in full]
        assert why == [dataclasses.replace(h, fields=None, penalty=None, parameters=None) for h in full]
        assert all(h.why and h.fields is None and h.parameters is None for h in why)
    # The shipped weights give the penalty no weight, so no reason names a missing
    # argument (tests/test_structured_scoring.py checks the clause where it has one).
    assert not any("no argument for required" in (h.why or "") for q in QUERIES
                   for h in demo_index.search(q, k=k, explain="why"))
    batch = demo_index.search_batch(many, k=k, explain="why")
    assert [[_bare(h) for h in hs] for hs in batch] == [[_bare(h) for h in demo_index.search(q, k=k, explain=True)]
                                                       for q in many]


def test_explain_rejects_other_strings(demo_index):
    from toolsift.errors import QueryError

    for bad in ("yes", "full", ""):
        with pytest.raises(QueryError, match="explain"):
            demo_index.search("weather", explain=bad)
        with pytest.raises(QueryError, match="explain"):
            demo_index.search_batch(["weather"], explain=bad)


def _unfused(fr: dict) -> dict:
    """The same retrievers with their BM25 (halves) of a subclass: the search then takes
    the general path (one engine call per field, NumPy and the pack kernels, a hybrid
    field's own gather and mix) instead of the fused one."""
    from toolsift.search.retrievers import Bm25Retriever, HybridRetriever

    class General(Bm25Retriever):
        pass

    def general(r):
        g = General.__new__(General)
        g.__dict__.update(r.__dict__)
        g.lexical = g
        return g

    out = {}
    for f, r in fr.items():
        if isinstance(r, HybridRetriever):
            h = HybridRetriever.__new__(HybridRetriever)
            h.__dict__.update(r.__dict__)
            h.bm25 = h.lexical = general(r.bm25)
            out[f] = h
        else:
            out[f] = general(r)
    return out


@pytest.mark.parametrize("examples", [True, False])
@pytest.mark.parametrize("k", [1, 10, 60])
def test_fused_hybrid_candidates_and_pack_equal_the_general_path(demo_catalog, k, examples):
    """Hybrid fields: their BM25 halves go through the fused engine calls and the
    dense halves are mixed into the packed scores afterwards; the general path gathers
    and mixes field by field. Same arrays, bit for bit."""
    from toolsift import ToolIndex
    from toolsift.presets import preset_config
    from toolsift.search.retrievers import HybridRetriever

    from dataclasses import replace

    tools = list(demo_catalog) if examples else [replace(t, examples=()) for t in demo_catalog]
    index = ToolIndex.build(tools, config=preset_config("hybrid", dense_candidates=5))
    st, cfg = index._state, index.config
    fr = retrievers(st, cfg)
    assert sum(isinstance(r, HybridRetriever) for r in fr.values()) == 3
    # Without examples, that field's dense half is empty and scores w * BM25.
    assert fr["examples"].dense_empty is not examples
    slow = _unfused(fr)
    raw = [as_query(q, "q") for q in [*QUERIES, "zzzz qqqq", "delete", "a", "what is the weather in Paris"]]
    for batch in ([q] for q in raw):
        _same_candidates(st, cfg, batch, fr, slow, k)
    _same_candidates(st, cfg, raw, fr, slow, k)  # mixed: some queries have several needs
    _same_candidates(st, cfg, [q for q in raw if len(q.needs) == 1], fr, slow, k)  # one need each


@pytest.mark.parametrize("k", [1, 5, 60])
def test_fused_bm25_candidates_and_pack_equal_the_general_path(demo_bm25_index, k):
    from benchmarks.http_load import queries

    st, cfg = demo_bm25_index._state, demo_bm25_index.config  # every field BM25: the fused path
    fr = retrievers(st, cfg)
    assert all(type(r).__name__ == "Bm25Retriever" for r in fr.values())  # the fused path is the one taken
    slow = _unfused(fr)
    raw = [as_query(q, "q") for q in [*QUERIES, *queries(), "zzzz qqqq", "delete", "a"]]
    for batch in ([q] for q in raw):
        _same_candidates(st, cfg, batch, fr, slow, k)
    _same_candidates(st, cfg, raw, fr, slow, k)


def _same_candidates(st, cfg, batch, fr, slow, k):
    plan = plan_queries(st, cfg, batch)
    got = find_candidates(st, plan, fr, n=cfg.candidates, k=k)
    want = find_candidates(st, plan, slow, n=cfg.candidates, k=k)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    ptr, tool, _ = got
    fast, general = pack(st, plan, fr, ptr, tool), pack(st, plan, slow, ptr, tool)
    for name in ("ptr", "tool", "n_needs", "n_args", "penalize", "need_sims", "need_off", "ap_sims", "ap_off"):
        a, b = getattr(fast, name), getattr(general, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        np.testing.assert_array_equal(a, b, err_msg=name)
    assert fast.need_sims.size and fast.ap_sims.size  # both layouts were exercised


def test_pack_fields_rejects_inconsistent_input(demo_bm25_index):
    from toolsift import _core

    st, cfg = demo_bm25_index._state, demo_bm25_index.config  # BM25 fields: pack_fields' input
    fr = retrievers(st, cfg)
    plan = plan_queries(st, cfg, [as_query("send an email to my boss", "q")])
    ptr, tool, _ = find_candidates(st, plan, fr, n=cfg.candidates, k=5)
    need = [plan.fields[f] for f in ("description", "response", "examples")]
    par = plan.fields["parameters"]

    def call(tool=tool, need_ptr=plan.need_ptr, param_ptr=st.param_ptr):
        return _core.pack_fields([fr[f].fi.core for f in ("description", "response", "examples")],
                                 [t.terms.terms for t in need], [t.terms.offsets for t in need],
                                 [t.owner for t in need], fr["parameters"].fi.core, par.terms.terms,
                                 par.terms.offsets, par.owner, ptr, tool, need_ptr, plan.arg_ptr, param_ptr,
                                 "bounded", 1)

    call()
    with pytest.raises(ValueError, match="outside"):
        call(tool=np.where(tool == tool[-1], 10_000, tool))
    with pytest.raises(ValueError, match="need_ptr"):
        call(need_ptr=np.array([0, 2]))
    with pytest.raises(ValueError, match="param_ptr"):
        call(param_ptr=st.param_ptr[:3])
    with pytest.raises(ValueError, match="param_ptr decreases"):
        call(param_ptr=st.param_ptr[::-1].copy())


@pytest.mark.parametrize("preset", ["bm25", "hybrid"])
def test_one_raw_query_plan_equals_the_general_plan(demo_catalog, preset):
    from toolsift.presets import preset_config
    from toolsift.search.plan import _plan

    index = ToolIndex.build(demo_catalog, config=preset_config(preset))
    st, cfg = index._state, index.config
    # "?!": no token of weight, a zero vector.
    for text in ["send an email to my boss", "weather", "zzzz qqqq", "Ünïcode naïve café 42", "a", "?!"]:
        q = as_query(text, "q")
        got, want = plan_queries(st, cfg, [q]), _plan(st, cfg, [q])
        assert got.queries == want.queries and got.arg_names == want.arg_names
        np.testing.assert_array_equal(got.penalize, want.penalize)
        assert got.penalize.dtype == want.penalize.dtype
        for f in FIELDS:
            a, b = got.fields[f], want.fields[f]
            assert a.texts == b.texts
            if f in st.dense:  # the same unit vector and int8 codes, bit for bit
                assert a.vectors.dtype == b.vectors.dtype == np.float32
                np.testing.assert_array_equal(a.vectors, b.vectors)
                for x, y in zip(a.codes, b.codes):
                    assert x.dtype == y.dtype
                    np.testing.assert_array_equal(x, y)
                assert not a.vectors.flags.writeable and not a.codes[0].flags.writeable
            else:
                assert a.vectors is None and b.vectors is None and a.codes is b.codes is None
            for x, y in ((a.ptr, b.ptr), (a.owner, b.owner), (a.terms.terms, b.terms.terms),
                         (a.terms.offsets, b.terms.offsets)):
                assert x.dtype == y.dtype
                np.testing.assert_array_equal(x, y)
            assert not a.owner.flags.writeable and not a.terms.terms.flags.writeable
    assert bool(st.dense) == (preset == "hybrid")


def test_why_equals_sorting_every_contribution():
    """The one-pass reason equals the sort it replaced, on random similarities, weights
    (zero and negative ones included) and ties."""
    import random

    from toolsift.search.hits import _why

    def by_sort(values, weights, matched):
        fields = dict(zip(FIELDS, values))
        contrib = sorted(zip([w * v for w, v in zip(weights, values)], FIELDS), reverse=True)
        parts = [f"{f} {fields[f]:.2f}" for c, f in contrib if c > 0][:2]
        return "matches " + " and ".join(parts) if parts else ("weak lexical match" if matched else "no field matches")

    rng = random.Random(0)
    for _ in range(20_000):
        values = [rng.choice([0.0, 0.5, rng.random()]) for _ in range(5)]
        weights = tuple(rng.choice([0.0, 0.25, -0.1, rng.random()]) for _ in range(4))
        matched = rng.random() < 0.5
        assert _why(values, weights, matched) == by_sort(values, weights, matched)


def test_query_from_text_equals_the_checked_constructor():
    from toolsift.errors import QueryError

    for text in ["send an email", "  padded  ", "Ünïcode ☃", "x" * 1000]:
        got = Query.from_text(text)
        want = Query(needs=(ToolNeed(text, text, text),), arguments={}, text=text)
        assert got == want and hash(got.needs) == hash(want.needs) and type(got.needs) is tuple
        assert got.needs[0] == ToolNeed(text, text, text)
    for bad in ["", "   ", "a\ud800b", "x" * 100_001, 3]:
        with pytest.raises(QueryError):
            Query.from_text(bad)



@pytest.fixture
def demo_index(request, demo_index, demo_bm25_index):
    """The conftest's demo index (the hybrid default), or its BM25 twin for a test
    parametrized ``indirect`` with ``"bm25"``: the fast paths must equal their twins on both."""
    return demo_bm25_index if getattr(request, "param", "hybrid") == "bm25" else demo_index
