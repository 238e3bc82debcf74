"""Batch analysis for builds (``Analyzer.analyse_many``) against the per-text tokenizer."""

from __future__ import annotations

import numpy as np
import pytest

from toolsift.analyze import Analyzer, Vocabulary

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
                                Analyzer(stopwords=None, lowercase=False), Analyzer(stemmer="english")])
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
