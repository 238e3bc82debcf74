"""The C++ interner (ASCII analysis for builds) against the Python analyzer: the same
words from the same texts, on the shared sets' texts and on generated ASCII strings."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import DATA, dataset
from toolsift import _core
from toolsift.adapters import load_catalog
from toolsift.analyze import TOKEN_PATTERN, Analyzer, Vocabulary
from toolsift.index.fields import field_documents

_SPLIT = re.compile(TOKEN_PATTERN).findall
ASCII = st.text(alphabet=st.characters(max_codepoint=127), max_size=60)
# Word characters and separators dense enough to give many short and repeated words.
WORDY = st.text(alphabet=st.sampled_from(list("aAbB_1 9zZ.-\t\n,eE")), max_size=40)


def _interned(texts: list[str], *, lowercase: bool = True, interner=None) -> list[list[str]]:
    it = interner if interner is not None else _core.Interner(lowercase)
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    ids, counts = it.intern("".join(texts).encode("ascii"), offsets)
    assert ids.dtype == np.int32 and counts.dtype == np.int64 and counts.size == len(texts)
    words = it.words()
    out, pos = [], 0
    for c in counts:
        out.append([words[i] for i in ids[pos:pos + c]])
        pos += c
    assert pos == ids.size
    return out


def _python_words(text: str, *, lowercase: bool = True) -> list[str]:
    return _SPLIT(text.lower() if lowercase else text)


@pytest.fixture(scope="module")
def shared_texts() -> list[str]:
    """Every field document and tool name of the mftr sets' tool files."""
    dataset("mftr-apibank")  # skips when the benchmark data is absent
    texts: list[str] = []
    files = sorted(DATA.glob("mftr-*/dataset/from_toolret/*/tools.json"))
    assert len(files) == 4
    for f in files + sorted(DATA.glob("mftr-*/dataset/augmented_tools/*/*.json")):
        cat = load_catalog(f)
        docs = field_documents(cat, name_in_description=True, split_identifiers=True, tool_card=2)
        texts += [t for d in docs.values() for t in d.texts] + [t.name for t in cat]
    assert len(texts) > 10_000
    return texts


def test_same_words_as_the_regex_on_the_shared_texts(shared_texts):
    ascii_texts = [t for t in shared_texts if t.isascii()]
    assert len(ascii_texts) > 0.9 * len(shared_texts)
    for lowercase in (True, False):
        got = _interned(ascii_texts, lowercase=lowercase)
        assert got == [_python_words(t, lowercase=lowercase) for t in ascii_texts]


@pytest.mark.parametrize("an", [Analyzer(), Analyzer(stopwords="nltk"), Analyzer(stopwords=None, lowercase=False),
                                Analyzer(stemmer="english")])
def test_analyse_many_equals_tokenize_on_the_shared_texts(shared_texts, an):
    texts = shared_texts[:20_000]
    v_ref, v_new = Vocabulary(), Vocabulary()
    toks = [an.tokenize(t) for t in texts]
    want = v_ref.add_all([w for x in toks for w in x])
    terms, lens = an.analyse_many(texts, v_new)
    np.testing.assert_array_equal(terms, want)
    np.testing.assert_array_equal(lens, [len(x) for x in toks])
    assert v_new.to_list() == v_ref.to_list()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(ASCII, WORDY), max_size=12), st.booleans())
def test_same_words_as_the_regex_on_generated_ascii(texts, lowercase):
    assert _interned(texts, lowercase=lowercase) == [_python_words(t, lowercase=lowercase) for t in texts]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(ASCII, WORDY, st.text(max_size=20)), max_size=15), st.integers(1, 5),
       st.sampled_from([Analyzer(), Analyzer(stopwords=None, lowercase=False), Analyzer(stemmer="english")]))
def test_analyse_many_mixing_ascii_and_other_texts(texts, chunk, an):
    # Non-ASCII texts take the Python path between ASCII runs: ids must still come out
    # in first-seen order, as one tokenize() at a time gives them.
    v_ref, v_new = Vocabulary(["seed"]), Vocabulary(["seed"])
    toks = [an.tokenize(t) for t in texts]
    want = v_ref.add_all([w for x in toks for w in x])
    terms, lens = an.analyse_many(texts, v_new, chunk=chunk)
    np.testing.assert_array_equal(terms, want)
    np.testing.assert_array_equal(lens, [len(x) for x in toks])
    assert v_new.to_list() == v_ref.to_list()


def test_ids_are_stable_across_calls_and_words_lists_only_new_ones():
    it = _core.Interner(True)
    assert _interned(["Send email", "send SMS"], interner=it) == [["send", "email"], ["send", "sms"]]
    assert len(it) == 3 and it.words(2) == ["sms"] and it.words(3) == []
    ids, counts = it.intern(b"EMAIL ab", np.array([0, 8]))
    assert ids.tolist() == [1, 3] and counts.tolist() == [2] and it.words(3) == ["ab"]


def test_bad_input_is_refused():
    it = _core.Interner(True)
    with pytest.raises(ValueError, match="offsets"):
        it.intern(b"abc", np.array([0, 5]))
    with pytest.raises(ValueError, match="offsets"):
        it.intern(b"abc", np.array([2, 1]))
    with pytest.raises(ValueError, match="offsets"):
        it.intern(b"abc", np.array([-1, 2]))
    with pytest.raises(ValueError, match="offsets"):
        it.intern(b"abc", np.zeros(0, np.int64))
    with pytest.raises(ValueError, match="non-ASCII"):
        it.intern("café au lait".encode(), np.array([0, 13]))
    with pytest.raises((IndexError, ValueError)):
        it.words(5)
    assert len(it) == 0  # nothing was interned by the refused calls
