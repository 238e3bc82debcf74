"""Cold-start eval methods and peer retrievers on APIBank (toolsift.evaluate.cold/peers)."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest

from toolsift.evaluate import MftrDataset, evaluate
from toolsift.evaluate.cold import COLD_METHODS, flat_text, openai_tool, run_cold
from toolsift.evaluate.methods import MethodUnavailable, run_method
from toolsift.evaluate.peers import PeerUnavailable

from .conftest import dataset

_BM25_METHODS = ("default", "bm25s-fulldoc", "peer-ratel", "peer-toolpicker", "peer-dehydrator")


@pytest.fixture(scope="module")
def apibank() -> MftrDataset:
    return MftrDataset.load(dataset("mftr-apibank"))


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
    assert note["labels"] is False and note["llm"] is False and note["feedback"] is False


def test_default_is_toolindex_search(apibank):
    """``default`` is exactly ToolIndex.build(catalog) + search, in search order."""
    from toolsift import ToolIndex

    out = run_method(apibank, "default")
    index = ToolIndex.build(apibank.raw_tools)
    for q in apibank.queries[:10]:
        expected = [h.id for h in index.search(q.text, k=100)]
        got = sorted(out.run[q.id], key=out.run[q.id].get, reverse=True)
        assert got == expected


def test_cold_methods_ignore_feedback_and_folds(apibank):
    a = run_method(apibank, "bm25s-fulldoc", feedback=True)
    b = run_method(apibank, "bm25s-fulldoc", feedback=False, docs="rules")
    assert a.run == b.run


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
    pos = {t: i for i, t in enumerate(ids)}
    for q in apibank.queries:
        qt = bm25s.tokenize([q.text], stopwords="en", stemmer=stem, return_ids=False, show_progress=False)[0]
        scores = dict(zip(ids, ref.get_scores(qt) / (1.5 + 1)))
        positive = [t for t in ids if scores[t] > 0]
        got = sorted(out.run[q.id], key=lambda t: -out.run[q.id][t])
        # The run is a ranking: the tools with a positive score first, by score, ties by
        # catalogue position (scores agree to float precision, so compare with a margin).
        assert set(got[:len(positive)]) == set(positive)
        for a, b in zip(got, got[1:len(positive)]):
            assert scores[a] >= scores[b] - 1e-4 * max(scores[a], 1.0)
            if abs(scores[a] - scores[b]) < 1e-9:
                assert pos[a] < pos[b]


def test_cold_runs_break_ties_by_catalogue_position():
    """Every score-based cold method ranks ties as ToolIndex.search does, by position."""
    from toolsift.evaluate.cold import scores_run

    scores = np.array([[0.5, 1.0, 0.5, 1.0, 0.0]], np.float32)
    run = scores_run(scores, ["q"], ["e", "d", "c", "b", "a"])
    assert sorted(run["q"], key=lambda t: -run["q"][t]) == ["d", "b", "e", "c", "a"]


def test_flat_text_covers_schema_words():
    schema = {"type": "function", "function": {
        "name": "getWeatherForecast", "description": "Weather ahead.",
        "parameters": {"type": "object", "properties": {
            "city_name": {"type": "string", "description": "The city."},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "where": {"type": "object", "properties": {"zip_code": {"description": "Postal code."}}}}}}}
    text = flat_text(schema)
    for word in ("getWeatherForecast", "get Weather Forecast", "Weather ahead.", "city_name", "city name",
                 "The city.", "celsius", "fahrenheit", "zip code", "Postal code."):
        assert word in text


@pytest.mark.parametrize("peer", ["ratel", "toolpicker", "dehydrator"])
def test_peer_returns_corpus_ids(apibank, peer):
    from toolsift.evaluate.peers import PEERS

    cat = apibank.raw_tools
    ranked, note = PEERS[peer](cat, [openai_tool(t) for t in cat], ["get the user token with my password"], k=5)
    ids = {t.id for t in cat}
    assert 0 < len(ranked[0]) <= 5 and set(ranked[0]) <= ids
    assert len(set(ranked[0])) == len(ranked[0])
    assert "GetUserToken" in [cat.get(i).name for i in ranked[0][:3]]
    assert note["peer"]


def test_missing_peer_names_the_extra(apibank, monkeypatch):
    monkeypatch.setitem(sys.modules, "ratel_ai", None)
    with pytest.raises(PeerUnavailable, match=r"toolsift\[peers\]") as exc:
        run_method(apibank, "peer-ratel")
    assert isinstance(exc.value, MethodUnavailable)


def test_unknown_method_is_a_clear_error(apibank):
    with pytest.raises(ValueError, match="unknown method 'bm25-fulldoc'.*bm25s-fulldoc"):
        run_method(apibank, "bm25-fulldoc")
    with pytest.raises(ValueError, match="unknown cold-start method"):
        run_cold("nope", apibank.raw_tools, [("q", "text")])


def test_cli_table_shows_cold_methods_side_by_side(apibank):
    from toolsift.cli import main

    out = io.StringIO()
    rc = main(["eval", str(apibank.root), "--method", "fulldoc,default,bm25s-fulldoc,peer-ratel", "--quiet",
               "--no-feedback"], out=out)
    text = out.getvalue()
    assert rc == 0
    for m in ("fulldoc", "default", "bm25s-fulldoc", "peer-ratel"):
        assert f"\n{m} " in text
    assert "no labels, no LLM, no feedback" in text


def test_cli_bad_method_is_an_error(apibank, capsys):
    from toolsift.cli import main

    assert main(["eval", str(apibank.root), "--method", "bm25s", "--quiet"], out=io.StringIO()) == 2
    assert "unknown method(s) bm25s" in capsys.readouterr().err


def test_ultratool_cold_method():
    from toolsift.evaluate import UltraToolDataset
    from toolsift.evaluate.ultratool import run_ultratool

    ds = UltraToolDataset.load(dataset("ultratool"))
    out = run_ultratool(ds, "peer-ratel")
    names = {t.id for t in ds.tools}
    assert len(out.run) == len(ds.queries)
    assert all(set(d) <= names for d in out.run.values())
    res = evaluate(ds.qrels(), out.run, metrics=("ndcg@10",))
    assert 0.0 < res.mean["ndcg@10"] <= 1.0
