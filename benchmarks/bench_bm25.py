"""Per-field BM25 batch throughput: the C++ core against bm25s on the same corpus, in the
same run, same tokens, top-10 per query."""

from __future__ import annotations

import time

import pytest

import bm25s

from toolsift import _core
from toolsift.analyze import Analyzer, Vocabulary
from toolsift.index.fields import field_documents

from .conftest import report


def _best_of(fn, n=5):
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("corpus", ["apigen", "combined"])
def test_bm25_topk_vs_bm25s(benchmark, request, corpus, threads):
    tools, bqs = request.getfixturevalue(corpus)
    docs = field_documents(tools, name_in_description=False)["description"].texts
    texts = [q.text for q in bqs]
    an = Analyzer()
    vocab = Vocabulary()
    batch = vocab.encode_batch([an.tokenize(d) for d in docs], grow=True)
    core = _core.InvertedIndex.build(batch.terms, batch.offsets, len(vocab))
    qb = vocab.encode_batch([an.tokenize(t) for t in texts], grow=False)

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)
    q_tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False)

    def ours():
        core.topk(qb.terms, qb.offsets, 10, threads=threads)

    def theirs():
        retriever.retrieve(q_tokens, k=10, show_progress=False, n_threads=threads)

    theirs()  # numba compile of bm25s' selection, outside the timing
    t_ours = _best_of(ours)
    t_theirs = _best_of(theirs)
    ratio = t_theirs / t_ours
    benchmark.extra_info.update({"ours_qps": len(texts) / t_ours, "bm25s_qps": len(texts) / t_theirs,
                                 "speedup": ratio})
    report(f"bm25 top-10 {corpus:<8} {len(docs):>5} docs, {len(texts)} queries, {threads} thread(s): "
           f"toolsift {len(texts) / t_ours:,.0f} q/s, bm25s {len(texts) / t_theirs:,.0f} q/s -> {ratio:.1f}x")
    benchmark(ours)
