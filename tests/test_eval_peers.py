"""Cold-start eval methods and peer retrievers on APIBank (toolsift.evaluate.cold/peers)."""

from __future__ import annotations


import numpy as np
import pytest

from toolsift.evaluate import MftrDataset, evaluate
from toolsift.evaluate.cold import COLD_METHODS, flat_text, openai_tool
from toolsift.evaluate.methods import run_method
from toolsift.evaluate.peers import PEERS

from .conftest import dataset

# The whole-dataset runs are slow (left out of the fast tier, python -m pytest -m "not slow");
# the peer wrappers' small-catalogue test and the tie rule's are fast.
slow = pytest.mark.slow

_BM25_METHODS = ("default-bm25", "bm25s-fulldoc", "peer-ratel", "peer-toolpicker", "peer-dehydrator")


@pytest.fixture(scope="module")
def apibank() -> MftrDataset:
    return MftrDataset.load(dataset("mftr-apibank"))


@slow
@pytest.mark.parametrize("method", COLD_METHODS)
def test_method_runs_on_apibank(apibank, method):
    out = run_method(apibank, method)
    ids = {t.id for t in apibank.raw_tools}
    assert set(out.run) == {q.id for q in apibank.queries}
    assert all(set(docs) <= ids and len(docs) <= 100 for docs in out.run.values())
    # A BM25 peer may find nothing for a query sharing no word with any tool; rarely.
    assert sum(bool(docs) for docs in out.run.values()) >= 0.9 * len(out.run)
    res = evaluate(apibank.qrels(), out.run, metrics=("ndcg@10", "recall@10"))
    for m in ("ndcg@10", "recall@10"):
        assert 0.0 <= res.mean[m] <= 1.0
    # Better than chance by a wide margin: a retriever that works at all.
    assert res.mean["recall@10"] > 0.3
    note = out.notes[0]
    assert note["labels"] is False and note["feedback"] is False
    # The structured methods' queries are the data set's LLM rewrites, and say so.
    from toolsift.evaluate.cold import STRUCTURED_METHODS

    assert (note["llm"] is False) == (method not in STRUCTURED_METHODS)


@slow
def test_default_is_toolindex_search(apibank):
    """``default`` is exactly ToolIndex.build(catalog) + search with the default (hybrid)
    preset (ties re-ranked by the cold runs' shared tie rule), and ``default-bm25`` the same
    with preset="bm25"."""
    from toolsift import ToolIndex
    from toolsift.evaluate.cold import default_config, tie_keys
    from toolsift.presets import DEFAULT_PRESET, preset_config

    keys = dict(zip([t.id for t in apibank.raw_tools], tie_keys([t.id for t in apibank.raw_tools])))
    for method, hybrid in (("default", True), ("default-bm25", False)):
        out = run_method(apibank, method)
        cfg = default_config(apibank.root.name, hybrid=hybrid)[0]
        assert cfg.retrievers == preset_config(DEFAULT_PRESET if hybrid else "bm25").retrievers
        index = ToolIndex.build(apibank.raw_tools, config=cfg)
        for q in apibank.queries[:10]:
            expected = [h.id for h in sorted(index.search(q.text, k=100), key=lambda h: (-h.score, keys[h.id]))]
            got = sorted(out.run[q.id], key=out.run[q.id].get, reverse=True)
            assert got == expected


@slow
def test_cold_methods_ignore_feedback_and_folds(apibank):
    a = run_method(apibank, "bm25s-fulldoc", feedback=True)
    b = run_method(apibank, "bm25s-fulldoc", feedback=False, docs="rules")
    assert a.run == b.run


@slow
def test_bm25s_fulldoc_matches_rank_bm25(apibank):
    """Same text, same tokens (bm25s's tokenizer, English stop words, PyStemmer), scored
    independently by rank_bm25 with Lucene's idf: the same tools and scores. Lucene's BM25
    (and so bm25s's) drops the constant (k1 + 1) numerator factor rank_bm25 keeps."""
    import bm25s
    import Stemmer
    from rank_bm25 import BM25Okapi

    docs = [flat_text(openai_tool(t)) for t in apibank.raw_tools]
    stem = Stemmer.Stemmer("english").stemWords
    tok = bm25s.tokenize(docs, stopwords="en", stemmer=stem, return_ids=False, show_progress=False)

    class LuceneIdf(BM25Okapi):
        def _calc_idf(self, nd):
            self.idf = {w: np.log(1 + (self.corpus_size - f + 0.5) / (f + 0.5)) for w, f in nd.items()}

    ref = LuceneIdf(tok, k1=1.5, b=0.75)
    out = run_method(apibank, "bm25s-fulldoc")
    ids = [t.id for t in apibank.raw_tools]
    for q in apibank.queries:
        qt = bm25s.tokenize([q.text], stopwords="en", stemmer=stem, return_ids=False, show_progress=False)[0]
        scores = dict(zip(ids, ref.get_scores(qt) / (1.5 + 1)))
        positive = [t for t in ids if scores[t] > 0]
        got = sorted(out.run[q.id], key=lambda t: -out.run[q.id][t])
        # The run is a ranking: the tools with a positive score first, by score (scores
        # agree to float precision, so compare with a margin).
        assert set(got[:len(positive)]) == set(positive)
        for a, b in zip(got, got[1:len(positive)]):
            assert scores[a] >= scores[b] - 1e-4 * max(scores[a], 1.0)


def test_cold_runs_break_ties_by_a_neutral_key():
    """Every score-based cold method ranks ties by the same fixed hash of the tool id:
    not by catalogue position, not by id spelling."""
    from toolsift.evaluate.cold import scores_run, tie_keys

    ids = ["e", "d", "c", "b", "a"]
    scores = np.array([[0.5, 1.0, 0.5, 1.0, 0.0]], np.float32)
    run = scores_run(scores, ["q"], ids)
    got = sorted(run["q"], key=lambda t: -run["q"][t])
    keys = dict(zip(ids, tie_keys(ids)))
    assert got == sorted(ids, key=lambda t: (-scores[0, ids.index(t)], keys[t]))
    # The same tools in another catalogue order rank the same.
    rev = scores_run(scores[:, ::-1].copy(), ["q"], ids[::-1])
    assert sorted(rev["q"], key=lambda t: -rev["q"][t]) == got


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_peer_wrappers_find_the_obvious_tool_in_the_demo_catalogue(demo_catalog, peer):
    """Each peer, handed the catalogue as its wrapper hands it any data set: catalogue ids
    back, best first, at most k, and the one obvious tool on top for a query naming it."""
    schemas = [openai_tool(t) for t in demo_catalog]
    queries = ["turn off the kitchen lights", "refund the last payment from customer 4411"]
    ranked, note = PEERS[peer](demo_catalog, schemas, queries, k=5)
    ids = {t.id for t in demo_catalog}
    assert len(ranked) == len(queries) and note["peer"]
    for got in ranked:
        assert 0 < len(got) <= 5 and len(set(got)) == len(got) and set(got) <= ids
    assert ranked[0][0] == "control_lights"
    assert "refund_payment" in ranked[1][:3]


def test_default_is_the_default_preset_and_old_names_still_work():
    """``default`` is the preset a new index gets (hybrid); ``default-bm25`` the bm25 one;
    the names from before (``default-hybrid*``) resolve to today's methods."""
    from toolsift.evaluate.cold import _RUNNERS, BASELINE_METHODS, METHOD_ALIASES, canonical_method
    from toolsift.presets import DEFAULT_PRESET

    assert DEFAULT_PRESET == "hybrid" and _RUNNERS["default"].__name__ == "_default_hybrid"
    assert _RUNNERS["default-bm25"].__name__ == "_default_bm25"
    assert canonical_method("default-hybrid") == "default"
    assert canonical_method("default-hybrid-onevector") == "default-onevector"
    assert canonical_method("default-bm25") == "default-bm25"
    assert not set(METHOD_ALIASES) & set(COLD_METHODS)
    assert set(METHOD_ALIASES.values()) <= set(COLD_METHODS)
    assert {"default", "default-bm25"} <= set(BASELINE_METHODS)
