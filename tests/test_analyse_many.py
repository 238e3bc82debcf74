"""Batch analysis for builds (``Analyzer.analyse_many``) against the per-text tokenizer."""

from __future__ import annotations

import numpy as np
import pytest

from toolsift.analyze import Analyzer, Vocabulary
from toolsift.errors import ConfigError

TEXTS = [
    "Send an e-mail to the given address", "", "the and of", "Café résumé naïve CAFÉ",
    "running runs ran runner", "send_email sendEmail SEND", "x y z", "Résumé of the running café",
    "数据 查询 データ", "emails emailing emailed", "the", "send send send the the email",
]


def _reference(an: Analyzer, texts: list[str], vocab: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
    """One text at a time through ``tokenize`` (the query-path analyser)."""
    toks = [an.tokenize(t) for t in texts]
    lens = np.array([len(x) for x in toks], dtype=np.int64)
    return vocab.add_all([w for x in toks for w in x]), lens


@pytest.mark.parametrize("an", [Analyzer(), Analyzer(stopwords="nltk", stemmer="english", fold_accents=True),
                                Analyzer(stopwords=None, lowercase=False), Analyzer(stemmer="english"),
                                Analyzer(stopwords="nltk", stemmer="english", fold_accents=True, exact_forms=True),
                                Analyzer(stemmer="english", exact_forms=True)])
@pytest.mark.parametrize("chunk", [1, 3, 1000])
def test_same_ids_lengths_and_vocabulary_as_tokenize(an, chunk):
    rng = np.random.default_rng(7)
    texts = [TEXTS[i] for i in rng.integers(0, len(TEXTS), 60)]
    v_ref, v_new = Vocabulary(["seed", "email"]), Vocabulary(["seed", "email"])
    # Two fields in a row share the vocabulary, as in DocumentTokens.analyse.
    for part in (texts[:25], texts[25:]):
        want_terms, want_lens = _reference(an, part, v_ref)
        terms, lens = an.analyse_many(part, v_new, chunk=chunk)
        assert terms.dtype == np.int32 and lens.dtype == np.int64
        np.testing.assert_array_equal(terms, want_terms)
        np.testing.assert_array_equal(lens, want_lens)
    assert v_new.to_list() == v_ref.to_list()


def test_empty_input():
    terms, lens = Analyzer().analyse_many([], Vocabulary())
    assert terms.size == 0 and lens.size == 0


def test_exact_forms_keep_each_word_beside_its_stem():
    an = Analyzer(stopwords="nltk", stemmer="english", exact_forms=True)
    # A word whose stem is itself gives one term; any other gives its stem, then itself.
    assert an.tokenize("the running email runs") == ["run", "running", "email", "run", "runs"]
    assert Analyzer(stopwords="nltk", stemmer="english").tokenize("the running email runs") == ["run", "email", "run"]
    with pytest.raises(ConfigError, match="exact_forms .* needs a stemmer"):
        Analyzer(exact_forms=True)  # no stemmer: it would change nothing (issue 37, item 8)
    # A manifest written before that check loads as what it always was.
    assert Analyzer.from_dict({"stopwords": "en", "exact_forms": True}) == Analyzer()
    assert Analyzer.from_dict(an.to_dict()) == an
    assert "exact_forms" not in Analyzer(stemmer="english").to_dict()  # older manifests unchanged


def test_exact_forms_rank_the_exact_name_first():
    """Stemming alone merges near-duplicate names; the exact form tells them apart."""
    from toolsift import IndexConfig, ToolIndex

    tools = [{"name": "list_users", "description": "Lists the users of a team."},
             {"name": "list_user", "description": "Listed user of a team."}]
    stem = Analyzer(stopwords="nltk", stemmer="english")
    both = Analyzer(stopwords="nltk", stemmer="english", exact_forms=True)
    q = "lists the users of a team"
    plain = ToolIndex.build(tools, config=IndexConfig(analyzer=stem)).search(q, k=2)
    exact = ToolIndex.build(tools, config=IndexConfig(analyzer=both)).search(q, k=2)
    assert plain[0].score == pytest.approx(plain[1].score)  # identical terms after stemming
    assert exact[0].tool.name == "list_users" and exact[0].score > exact[1].score
