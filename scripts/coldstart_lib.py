"""Shared helpers of the cold-start scripts: load the five shared sets as (catalogue, raw
queries, qrels), the flat bm25s Full-Doc baseline, a ratel-style flat baseline, and
scoring of :class:`~toolsift.scores.FieldScores` under a given :class:`ScoringParams`.

Cold start means: the raw tools as the user has them, the raw query text, no labels,
no LLM, no feedback examples.
"""

from __future__ import annotations

import os
import pickle
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolsift.evaluate.datasets import MftrDataset, UltraToolDataset
from toolsift.evaluate.metrics import evaluate
from toolsift.schema import Catalog
from toolsift.scores import scores_to_run

#: The shared benchmark data: ``$TOOLSIFT_DATA``, else ``../shared/data`` beside the repository.
DATA = Path(os.environ.get("TOOLSIFT_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
SETS = ("mftr-apibank", "mftr-apigen", "mftr-gorilla-huggingface", "mftr-toolink", "ultratool")
SHORT = {"mftr-apibank": "APIBank", "mftr-apigen": "APIGen", "mftr-gorilla-huggingface": "Gorilla",
         "mftr-toolink": "ToolLink", "ultratool": "UltraTool"}
METRICS = ("ndcg@10", "recall@10")


@dataclass
class ColdSet:
    """One benchmark as a new user sees it."""

    name: str
    catalog: Catalog
    query_ids: list[str]
    texts: list[str]
    qrels: dict[str, dict[str, int]]


def load_set(name: str) -> ColdSet:
    """Load one shared set (cached in a pickle under /tmp; the data never enters the repo)."""
    cache = Path(os.environ.get("TMPDIR", "/tmp")) / f"toolsift_coldset_{name}.pkl"
    if cache.is_file():
        return pickle.loads(cache.read_bytes())
    if name == "ultratool":
        ds = UltraToolDataset.load(DATA / name)
        out = ColdSet(name, ds.tools, [q.id for q in ds.queries], [q.question for q in ds.queries], ds.qrels())
    else:
        ds = MftrDataset.load(DATA / name)
        out = ColdSet(name, ds.raw_tools, [q.id for q in ds.queries], [q.text for q in ds.queries], ds.qrels())
    cache.write_bytes(pickle.dumps(out))
    return out


def measure(cs: ColdSet, scores: np.ndarray, rows: np.ndarray | None = None) -> dict[str, float]:
    """N@10 and R@10 (pytrec_eval through toolsift.evaluate.metrics) of dense scores."""
    ids = cs.query_ids if rows is None else [cs.query_ids[r] for r in rows]
    run = scores_to_run(scores, ids, [t.id for t in cs.catalog], depth=100)
    qrels = {q: cs.qrels[q] for q in ids}
    return evaluate(qrels, run, metrics=METRICS).mean


def flat_text(tool) -> str:
    """The Full-Doc text: name, description, parameter names and descriptions (the
    adapters append string enum values to a parameter's description)."""
    parts = [tool.name, tool.description]
    for p in tool.parameters:
        parts += [p.name, p.description]
    return " ".join(x for x in parts if x)


def bm25s_fulldoc(cs: ColdSet) -> np.ndarray:
    """bm25s over one flat document per tool: lowercase, its English stop words, k1 1.5,
    b .75 (its defaults). Dense ``[nq, nt]`` scores."""
    import bm25s

    corpus = bm25s.tokenize([flat_text(t) for t in cs.catalog], stopwords="en", show_progress=False)
    ret = bm25s.BM25()
    ret.index(corpus, show_progress=False)
    vocab = corpus.vocab
    out = np.zeros((len(cs.texts), len(cs.catalog)), dtype=np.float32)
    for i, q in enumerate(bm25s.tokenize(cs.texts, stopwords="en", return_ids=False, show_progress=False)):
        toks = [w for w in q if w in vocab]
        if toks:
            out[i] = ret.get_scores(toks)
    return out


_SPLIT = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[_\-./:]+")
_WORD = re.compile(r"(?u)\b\w\w+\b")


def _fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def ratel_text(tool) -> str:
    """ratel-ai's bag of words: name whole and split, description, parameter keys whole
    and split, parameter descriptions (enum values included by the adapters)."""
    parts = [tool.name, " ".join(_SPLIT.split(tool.name)), tool.description]
    for p in tool.parameters:
        parts += [p.name, " ".join(_SPLIT.split(p.name)), p.description]
    return " ".join(x for x in parts if x)


def ratel_like(cs: ColdSet) -> np.ndarray:
    """A re-implementation of ratel-ai's ranking (see :func:`ratel_text`): NLTK's 179
    English stop words, Snowball English stemming, accent folding, BM25 k1 .9 b .4."""
    import bm25s
    import Stemmer

    from toolsift.analyze import NLTK_STOPWORDS

    stem = Stemmer.Stemmer("english")

    def tok(text: str) -> list[str]:
        words = [w for w in _WORD.findall(_fold(text).lower()) if w not in NLTK_STOPWORDS]
        return stem.stemWords(words)

    docs = [tok(ratel_text(t)) for t in cs.catalog]
    ret = bm25s.BM25(k1=0.9, b=0.4)
    ret.index(_as_tokenized(docs), show_progress=False)
    vocab = set(w for d in docs for w in d)
    out = np.zeros((len(cs.texts), len(cs.catalog)), dtype=np.float32)
    for i, q in enumerate(cs.texts):
        toks = [w for w in tok(q) if w in vocab]
        if toks:
            out[i] = ret.get_scores(toks)
    return out


def _as_tokenized(docs: list[list[str]]):
    import bm25s

    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(w, len(vocab)) for w in d] for d in docs]
    return bm25s.tokenization.Tokenized(ids=ids, vocab=vocab)
