"""The one-call hybrid search of a raw request (toolsift.search.hybrid_text, the C++
``HybridText``) against the fused hybrid path it replaces for one-step raw requests
(toolsift.search.fused_hybrid.run_hybrid, itself held to the general path by
tests/test_fused_hybrid.py): the same tools, ranks, ``matched`` flags and the very same
float32 scores, on every raw query of the five benchmark sets; its C++ WordPiece against
``tokenizers``; the texts and indexes it hands back to the Python path."""

from __future__ import annotations

import random
import threading
from dataclasses import replace

import pytest

from toolsift import Query, ToolIndex
from toolsift.presets import preset_config
from toolsift.search import fused_hybrid, retrievers
from toolsift.search.evidence import hit_evidence
from toolsift.search.hybrid_text import text_searcher
from toolsift.search.needs import readings_of, request_steps, run_steps

from ._fused_cases import MFTR, hybrid_setting_variants
from ._fused_cases import mftr as _mftr
from ._fused_cases import ultratool as _ultratool


def _exact(got, want, what: str) -> None:
    assert [(h.id, h.rank, h.matched, h.score) for h in got] == [(h.id, h.rank, h.matched, h.score) for h in want], what


def _compare(index, texts: list[str], k: int) -> tuple[int, int]:
    """Every one-step raw text through the one-call path against run_hybrid; returns
    (texts the engine answered, texts it handed back)."""
    st, cfg = index._state, index.config
    fr = retrievers(st, cfg)
    search = text_searcher(st, cfg, fr)
    assert search is not None
    taken = handed = 0
    for text in texts:
        q = Query.from_text(text)
        if request_steps(st, cfg, [q]) != [None]:
            continue
        got = search(text, k)
        if got is None:
            handed += 1
            continue
        (want,) = fused_hybrid.run_hybrid(st, cfg, [q], fr, k=k, params=cfg.params)
        _exact(got, want, text)
        taken += 1
    return taken, handed


# Whole-dataset comparisons embed thousands of tools: APIBank (101 tools) in the fast
# tier, the larger sets in the slow tier (CI runs both).
@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n == "apibank" else pytest.mark.slow) for n in MFTR])
def test_hybrid_text_equals_fused_hybrid_mftr(name):
    tools, raw, _ = _mftr(name)
    index = ToolIndex.build(tools, config=preset_config("hybrid"))
    taken, handed = _compare(index, raw, k=10)
    assert taken > 0.9 * (taken + handed), (taken, handed)


@pytest.mark.slow
def test_hybrid_text_equals_fused_hybrid_ultratool():
    tools, raw, _ = _ultratool()
    index = ToolIndex.build(tools, config=preset_config("hybrid"))
    taken, handed = _compare(index, raw, k=10)
    assert taken > 0.9 * (taken + handed), (taken, handed)


@pytest.fixture(scope="module")
def apibank():
    tools, raw, _ = _mftr("apibank")
    return ToolIndex.build(tools, config=preset_config("hybrid")), raw


def test_hybrid_text_settings(apibank):
    """A small candidate cut, k beyond the catalogue, another hybrid weight and dense
    candidate rule, a need field left BM25, no intent in the parameters field."""
    index, raw = apibank
    for ix in hybrid_setting_variants(index):
        for k in (1, 10, 500):
            taken, _ = _compare(ix, raw[:40], k=k)
            assert taken > 30, (ix.config, k)


def test_search_takes_the_one_call_path_and_answers_alike(apibank, monkeypatch):
    index, raw = apibank
    st, cfg = index._state, index.config
    fr = retrievers(st, cfg)
    one_step = [t for t in raw if request_steps(st, cfg, [Query.from_text(t)]) == [None]][:30]
    want = [fused_hybrid.run_hybrid(st, cfg, [Query.from_text(t)], fr, k=10, params=cfg.params)[0] for t in one_step]
    calls = []
    engine = text_searcher(st, cfg, fr).engine
    monkeypatch.setattr(text_searcher(st, cfg, fr), "engine", _Counting(engine, calls))
    for text, w in zip(one_step, want):
        _exact(index.search(text, k=10), w, text)
    assert len(calls) >= len(one_step)


class _Counting:
    def __init__(self, engine, calls):
        self._engine, self._calls = engine, calls

    def search_hits(self, text, k):
        self._calls.append(text)
        return self._engine.search_hits(text, k)

    def __getattr__(self, name):  # learn, set_floor: the engine's own
        return getattr(self._engine, name)


def test_engine_made_hits_match_by_the_null_floor_rule():
    """The Hit objects HybridText makes (search_hits) against the arrays it returns
    (search_text) wrapped in Python by hit_evidence's rule: a fresh engine asks for a need
    field's floor the first time a hit only that field's dense half found needs it, then
    gives the same hits, ``matched`` flags included."""
    tools, raw, _ = _mftr("apibank")
    index = ToolIndex.build(tools, config=preset_config("hybrid"))
    st, cfg = index._state, index.config
    fr = retrievers(st, cfg)
    search = text_searcher(st, cfg, fr)
    engine, halves = search.engine, search._halves
    asked, dense_only = set(), 0
    for text in raw:
        got = engine.search_hits(text, 10)
        while type(got) is tuple:
            for word in got:
                engine.learn(word, [st.vocab.lookup(t, -1) for t in cfg.analyzer.tokenize(word)])
            got = engine.search_hits(text, 10)
        if got is None:
            continue
        while type(got) is int:
            assert got not in asked and halves[got] is not None
            asked.add(got)
            engine.set_floor(got, float(halves[got].null_floor))
            got = engine.search_hits(text, 10)
        tool, score, found, lexical, cos = engine.search_text(text, 10)
        dense_only += int((found & ~lexical).sum())
        want = hit_evidence(found, lexical, cos, halves)
        assert [(h.id, h.rank, h.score, h.matched) for h in got] == [
            (st.catalog[t].id, r, s, m) for r, (t, s, m) in enumerate(zip(tool.tolist(), score.tolist(), want), 1)], text
        assert all(h.why is None and h.fields is None for h in got)
    assert asked and dense_only > 0  # the floors were asked for and decided hits


def test_engine_made_hits_check_their_arguments(apibank):
    index, _ = apibank
    st, cfg = index._state, index.config
    engine = text_searcher(st, cfg, retrievers(st, cfg)).engine
    with pytest.raises(ValueError, match="field"):
        engine.set_floor(3, 0.1)
    with pytest.raises(ValueError, match="number"):
        engine.set_floor(0, float("nan"))
    with pytest.raises(ValueError, match="k must be"):
        engine.search_hits("book a flight", 0)


@pytest.mark.parametrize("text", ["réserver un vol pour Paris", "book a [CLS] flight", "book a\x07 flight",
                                  "book a [MASK] flight"])
def test_texts_outside_the_fast_path_are_analysed_in_python(apibank, text):
    """The engine's analysers do not take these texts (not ASCII, added tokens, control
    characters): Python analyses them and the same engine call searches them
    (HybridText.search_ids), with run_hybrid's answer, reasons alike."""
    index, _ = apibank
    st, cfg = index._state, index.config
    fr = retrievers(st, cfg)
    search = text_searcher(st, cfg, fr)
    (want,) = fused_hybrid.run_hybrid(st, cfg, [Query.from_text(text)], fr, k=10, params=cfg.params)
    _exact(search(text, 10), want, text)
    assert search.engine.search_text(text, 10) is None  # its words taught: not the engine's analysers'
    _exact(index.search(text, k=10), want, text)
    (general,) = index.search_batch([text], k=10, explain="why")
    assert [(h.id, h.score, h.why) for h in search.why(text, 10)] == [(h.id, h.score, h.why) for h in general]


def test_non_ascii_requests_of_the_sets_take_the_engine_alike():
    """Every non-ASCII raw query of the four MFTR sets (accents, CJK, symbols), one-step or
    multi-step, through the engine against the Python paths it replaces."""
    from toolsift.search.needs import readings_of, run_steps

    texts, tools = [], []
    for name in MFTR:
        t, raw, _ = _mftr(name)
        tools.extend(t)
        texts.extend(x for x in raw if not x.isascii())
    assert len(texts) >= 10
    index = ToolIndex.build(tools, config=preset_config("hybrid"))
    st, cfg = index._state, index.config
    fr = retrievers(st, cfg)
    search = text_searcher(st, cfg, fr)
    for text in texts:
        q = Query.from_text(text)
        (steps,) = request_steps(st, cfg, [q])
        if steps is None:
            (want,) = fused_hybrid.run_hybrid(st, cfg, [q], fr, k=10, params=cfg.params)
            got = search(text, 10)
        else:
            (want,) = run_steps(st, cfg, [q], [steps], fr, k=10, explain=False, params=cfg.params)
            got = search.steps(readings_of(text, steps), 10)
        _exact(got, want, text)


def test_an_added_token_in_another_case_is_plain_text(apibank):
    """``[MASK]`` is matched verbatim only (not normalised): in lower case it is words and
    punctuation, which the one-call path takes, with run_hybrid's answer."""
    index, _ = apibank
    st, cfg = index._state, index.config
    fr = retrievers(st, cfg)
    text = "BOOK A [mask] FLIGHT"
    got = text_searcher(st, cfg, fr)(text, 10)
    assert got is not None
    (want,) = fused_hybrid.run_hybrid(st, cfg, [Query.from_text(text)], fr, k=10, params=cfg.params)
    _exact(got, want, text)


def test_wordpiece_twin_equals_tokenizers(apibank):
    """The C++ WordPiece gives tokenizers' ids on every text its fast path takes: the
    benchmark's queries and tool texts, and random strings of words, digits, punctuation,
    whitespace and over-long words."""
    from toolsift.index.query_table import query_encoder_for

    index, raw = apibank
    st, cfg = index._state, index.config
    engine = text_searcher(st, cfg, retrievers(st, cfg)).engine
    tok = query_encoder_for(st, cfg)._tokenizer
    rng = random.Random(0)
    # Long words of vocabulary pieces (the longest-match search is bounded by the longest
    # vocabulary entry) and of letters no piece joins, up to and past max_chars (100).
    pieces = ["book", "flights", "Paris", "unbelievably", "x" * 120, "3.5", "$", "(", "e-mail", "don't", "\t", "\n",
              "  ", "_", "~", "{", "ATM", "re-schedule", "CamelCaseWord", "a1b2c3", "[", "]", "##ing",
              "internationalizationcounterrevolutionaries", "qzx" * 33, "un" + "believable" * 9, "z" * 100]
    texts = raw + [t.description for t in st.catalog] + [
        "".join(rng.choice(pieces) + rng.choice(["", " ", ",", ". "]) for _ in range(rng.randint(0, 30)))
        for _ in range(500)]
    checked = 0
    for text in texts:
        got = engine.token_ids(text)
        if got is None:
            continue
        assert got == tok.encode(text, add_special_tokens=False).ids, text
        checked += 1
    assert checked > 0.8 * len(texts)


@pytest.mark.slow  # builds the 6,417 pooled tools' hybrid index twice (embeddings cached)
@pytest.mark.parametrize("dense", ["ivf", "scan"])
def test_the_prefilter_joins_with_the_same_hits(dense):
    """The pooled catalogue's description field is large enough for the 4-bit prefilter
    (COARSE_MIN_ROWS). As the default builds it, the field has an IVF index (ivf_min_docs)
    whose probe takes the prefilter of its listed rows from the first search, as
    IvfIndex.probe_top does; scanned exactly (no IVF), it takes the scan's prefilter after
    COARSE_AFTER_SCANS searches. Either way the hits before and after are the fused hybrid
    path's."""
    from toolsift.evaluate.pooled import load_pseudo
    from toolsift.index.dense_field import COARSE_AFTER_SCANS

    ds = load_pseudo("pooled")
    config = preset_config("hybrid") if dense == "ivf" else replace(preset_config("hybrid"), ivf_min_docs=10**9)
    index = ToolIndex.build(ds.tools, config=config)
    st, cfg = index._state, index.config
    fr = retrievers(st, cfg)
    dn = fr["description"].dense.dn
    search = text_searcher(st, cfg, fr)
    if dense == "ivf":
        assert dn.ivf is not None and dn.ivf.n_lists == 80
        assert search._scanned == [] and dn.ivf._coarse not in (None, False)  # given to the engine when made
    else:
        assert dn.ivf is None and search._scanned, "the description field should take a prefilter"
    texts = [q.text for q in ds.queries if request_steps(st, cfg, [Query.from_text(q.text)]) == [None]]
    texts = texts[:COARSE_AFTER_SCANS + 40]
    for i, text in enumerate(texts):
        got = search(text, 10)
        (want,) = fused_hybrid.run_hybrid(st, cfg, [Query.from_text(text)], fr, k=10, params=cfg.params)
        _exact(got, want, f"{i}: {text}")
    assert search._scanned == []
    if dense == "scan":
        assert dn.coarse() is not None


def test_concurrent_searches_answer_as_one_at_a_time(apibank):
    index, raw = apibank
    texts = raw[:60]
    want = {t: [(h.id, h.score) for h in index.search(t, k=10)] for t in texts}
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        order = texts[:]
        random.Random(seed).shuffle(order)
        try:
            for t in order:
                assert [(h.id, h.score) for h in index.search(t, k=10)] == want[t]
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def _compare_steps(index, texts: list[str], k: int) -> int:
    """Every multi-step raw text through the one-call path against run_steps; returns how many."""
    st, cfg = index._state, index.config
    fr = retrievers(st, cfg)
    search = text_searcher(st, cfg, fr)
    n = 0
    for text in texts:
        q = Query.from_text(text)
        steps = request_steps(st, cfg, [q])
        if steps == [None]:
            continue
        got = search.steps(readings_of(text, steps[0]), k)
        assert got is not None, text
        (want,) = run_steps(st, cfg, [q], steps, fr, k=k, explain=False, params=cfg.params)
        _exact(got, want, text)
        n += 1
    return n


def test_ivf_fields_take_the_engine_and_answer_as_the_python_path(demo_catalog):
    """IVF fields probed in the engine (a row per tool: APIBank's descriptions in 2 lists;
    grouped rows: the demo's examples in 3), one probe each, against the Python path's
    probes, one-step and multi-step."""
    tools, raw, _ = _mftr("apibank")
    requests = ["look up the weather in Paris, then book a table for two and after that send the receipt by email",
                "First find my meetings for tomorrow; once done, cancel the first one and notify Bob."]
    for catalog, texts in ((tools, raw + requests), (demo_catalog, requests + ["snap a photo of the porch",
                                                                             "turn on the lights in the kitchen"])):
        index = ToolIndex.build(catalog, config=replace(preset_config("hybrid"), ivf_min_docs=1, ivf_nprobe=1))
        ivfs = [d.ivf for d in index._state.dense.values() if d.ivf is not None]
        assert any(v.n_lists > 1 for v in ivfs), [v.n_lists for v in ivfs]
        taken, handed = _compare(index, texts, 10)
        assert taken >= 2 and handed == 0
        assert _compare_steps(index, texts, 10) >= 2


def test_scans_split_over_threads_answer_alike(monkeypatch):
    """With the threshold at 0 the index's threads reach the engine's scans (which split
    only scans of many row blocks, toolsift/parallel.h): the same hits."""
    import toolsift.search.hybrid_text as ht

    tools, raw, _ = _mftr("apibank")
    monkeypatch.setattr(ht, "SERIAL_WORK", 0)
    index = ToolIndex.build(tools, config=replace(preset_config("hybrid"), threads=2))
    taken, _ = _compare(index, raw[:40], k=10)
    assert taken > 30
