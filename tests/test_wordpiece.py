"""The WordPiece fast path (toolsift.encoders.wordpiece) against the reference
``tokenizers`` package: the same ids for every text it accepts, and ``None`` (hand the
text to ``tokenizers``) for the texts it must not handle."""

from __future__ import annotations

import json
import random
import string

import pytest

from toolsift.encoders.models import VENDORED_TOKENIZER
from toolsift.encoders.static import StaticEncoder, load_tokenizer
from toolsift.encoders.wordpiece import FastWordPiece

from .conftest import dataset, needs_data


@pytest.fixture(scope="module")
def pair():
    fast = FastWordPiece.from_file(VENDORED_TOKENIZER)
    assert fast is not None  # the vendored tokenizer is BERT-uncased
    return fast, load_tokenizer(VENDORED_TOKENIZER)


def _check(fast, ref, texts):
    taken = 0
    for t in texts:
        got = fast.ids(t)
        if got is not None:
            taken += 1
            assert got == ref.encode(t, add_special_tokens=False).ids, t
    return taken


@needs_data
def test_same_ids_as_tokenizers_on_shared_set_texts(pair):
    from toolsift.adapters import load_catalog
    from toolsift.adapters.benchmark import load_queries

    fast, ref = pair
    texts = []
    for ds in ("apibank", "toolink"):
        root = dataset(f"mftr-{ds}") / "dataset"
        for tool in load_catalog(root / f"from_toolret/{ds}/tools.json"):
            texts += [tool.name, tool.description or ""]
        texts += [q.text for q in load_queries(root / f"train_and_test/{ds}/fold_0/test_queries.json")]
    assert len(texts) > 500
    assert _check(fast, ref, texts) > 0.5 * len(texts)


def test_same_ids_on_random_ascii_and_hard_words(pair):
    fast, ref = pair
    rnd = random.Random(7)
    alphabet = string.ascii_letters + string.digits + string.punctuation + "    \t\n\r"
    texts = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 60))) for _ in range(3000)]
    # Added tokens, whole and broken, inside random text.
    pieces = ["[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]", "[cls]", "[MASK", "CLS]", "[", "]"]
    texts += ["".join(rnd.choice(pieces + ["ab", " ", "x1"]) for _ in range(rnd.randint(1, 8))) for _ in range(500)]
    texts += ["x" * 99, "y" * 100, "z" * 101, "unaffable", "get_user_by_id", "HTTP2/JSON-RPC", "e-mail",
              "it's 5:30pm", "a  b   c", "###", "##ing", "snake_case_and_CamelCase", "1234567890" * 12,
              "list [1, 2]", "tab\there", "line\nbreak\r\n"]
    specials = ("[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]")
    # Every text without an added token takes the fast path.
    assert _check(fast, ref, texts) == sum(not any(s in t for s in specials) for t in texts) > 2500


@pytest.mark.parametrize("text", ["café", "東京", "[CLS] hi", "x[SEP]y", "[MASK]", "\x00", "a\x01b", "del\x7f"])
def test_leaves_other_texts_to_tokenizers(pair, text):
    fast, ref = pair
    assert fast.ids(text) is None
    # ... and the encoder still gives the reference ids for them.
    assert StaticEncoder().token_ids([text]) == [ref.encode(text, add_special_tokens=False).ids]


def test_not_used_for_other_tokenizer_shapes(tmp_path):
    doc = json.loads(VENDORED_TOKENIZER.read_text(encoding="utf-8"))
    doc["normalizer"]["lowercase"] = False  # cased: lower-casing words would be wrong
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert FastWordPiece.from_file(path) is None
    assert FastWordPiece.from_file(tmp_path / "missing.json") is None


def test_cache_is_bounded(pair, monkeypatch):
    import toolsift.encoders.wordpiece as wp

    fast, ref = pair
    monkeypatch.setattr(wp, "_CACHE_WORDS", 10)
    fast._cache.clear()
    words = [f"word{i}" for i in range(50)]
    for w in words:
        assert fast.ids(w) == ref.encode(w, add_special_tokens=False).ids
    assert len(fast._cache) <= 10
