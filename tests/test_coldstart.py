"""Cold-start defaults: formula options in the kernel, its twin and FieldScores; the
analyzer's stop lists and accent folding; k hits per search; shipped weights; the
untrained-penalty warning; the L-BFGS trainer."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace

import numpy as np
import pytest

from toolsift import ToolIndex
from toolsift.analyze import ENGLISH_STOPWORDS, NLTK_STOPWORDS, Analyzer
from toolsift.config import IndexConfig, UntrainedPenaltyWarning
from toolsift.errors import ConfigError
from toolsift.kernels import score_candidates, score_candidates_reference
from toolsift.kernels.params import (
    COLDSTART_INIT,
    DEFAULT_PARAMS,
    PAPER_PARAMS,
    ScoringParams,
    shipped_params,
)
from toolsift.schema import Parameter, Query, Tool, ToolNeed
from toolsift.scores import field_presence, presence_bits
from toolsift.train import TrainConfig, concat_pairs, make_pairs, pair_loss, train
from toolsift.train.trainer import _loss_grad, _pack, _features, _present

from .test_kernels import random_batch

RTOL, ATOL = 1e-5, 1e-5


# ------------------------------------------------------------------ formula options
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("share", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("renorm", [False, True])
def test_kernel_matches_twin_with_pooling_and_renormalisation(seed: int, share: float, renorm: bool) -> None:
    rng = np.random.default_rng(seed)
    batch = random_batch(rng, nq=5, n_tools=7, max_cands=6)
    n_tools = len(batch[9]) - 1
    bits = rng.integers(0, 16, size=n_tools).astype(np.uint8)
    params = ScoringParams(weights=tuple(rng.uniform(-0.2, 1, 4)), bias=0.1, w_req=0.3,
                           param_max_share=share, renormalize=renorm)
    got, terms = score_candidates(*batch, params, tool_fields=bits, breakdown=True)
    want, ref_terms = score_candidates_reference(*batch, params, tool_fields=bits, breakdown=True)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(terms, ref_terms, rtol=RTOL, atol=ATOL)


def test_param_max_share_one_is_the_max_and_zero_the_mean() -> None:
    rng = np.random.default_rng(3)
    batch = random_batch(rng, nq=3, n_tools=5, max_cands=5)
    _, mean_terms = score_candidates(*batch, ScoringParams(), breakdown=True)
    _, max_terms = score_candidates(*batch, ScoringParams(param_max_share=1.0), breakdown=True)
    # The max of a tool's parameter matches is never below their mean.
    assert (max_terms[:, 1] >= mean_terms[:, 1] - 1e-6).all()


def test_renormalisation_with_every_field_present_changes_nothing() -> None:
    rng = np.random.default_rng(4)
    batch = random_batch(rng, nq=4, n_tools=6, max_cands=6)
    p = ScoringParams(weights=(0.4, 0.3, 0.2, 0.1))
    np.testing.assert_allclose(score_candidates(*batch, replace(p, renormalize=True)),
                               score_candidates(*batch, p), rtol=RTOL, atol=ATOL)


def test_renormalisation_gives_a_description_only_tool_the_whole_weight() -> None:
    # One query, one need, one tool with only a description (bit 1), similarity .5.
    batch = ([0], [0], [0], [0], [1], [0], [0], np.array([[0.5, 0.9, 0.9]], np.float32),
             np.zeros(0, np.float32), [0, 0], np.zeros(0, np.uint8))
    p = ScoringParams(weights=(0.35, 0.25, 0.15, 0.25), renormalize=True)
    got = score_candidates(*batch, p, tool_fields=[1])
    # Absent response/examples score nothing, however similar; c = 1 / .35.
    assert got[0] == pytest.approx(0.5)


def test_tool_fields_length_is_checked() -> None:
    rng = np.random.default_rng(5)
    batch = random_batch(rng, nq=2, n_tools=3, max_cands=3)
    with pytest.raises(ValueError, match="tool_fields has length"):
        score_candidates(*batch, ScoringParams(renormalize=True), tool_fields=[15])


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_param_max_share_range(bad: float) -> None:
    with pytest.raises(ConfigError, match="param_max_share"):
        ScoringParams(param_max_share=bad)


def test_renormalize_must_be_bool() -> None:
    with pytest.raises(ConfigError, match="renormalize"):
        ScoringParams(renormalize=1)  # type: ignore[arg-type]


def test_params_round_trip_with_options() -> None:
    p = ScoringParams(param_max_share=0.25, renormalize=True)
    assert ScoringParams.from_dict(json.loads(json.dumps(p.to_dict()))) == p


# ---------------------------------------------------------------- small catalogue
def _tools() -> list[Tool]:
    return [
        Tool(id="w", name="get_weather", description="Current weather for a city.",
             parameters=(Parameter("city", "string", "City name"),
                         Parameter("units", "string", "celsius or fahrenheit", required=False))),
        Tool(id="e", name="sendEmail", description="Send an e-mail message.",
             parameters=(Parameter("to", "string", "Recipient address"),
                         Parameter("subject", "string", "Subject line"),
                         Parameter("body", "string", "Message text"))),
        Tool(id="c", name="café_finder", description="Find cafés nearby.", response="A list of cafés."),
        Tool(id="t", name="translate", description="Translate text between languages.",
             parameters=(Parameter("text", "string", "Text to translate"),
                         Parameter("target", "string", "Target language code")),
             examples=("translate hello to french",)),
        Tool(id="n", name="noop", description="Does nothing."),
    ]


@pytest.mark.parametrize("params", [
    DEFAULT_PARAMS, PAPER_PARAMS, COLDSTART_INIT,
    ScoringParams(weights=(0.3, 0.3, 0.2, 0.2), param_max_share=0.5, renormalize=True),
])
@pytest.mark.parametrize("query", [
    "what is the weather in paris in celsius",
    Query(needs=(ToolNeed("send a message", "sent", "email my boss"),),
          arguments={"to": "the boss address", "subject": "report"}),
])
def test_field_scores_agree_with_the_search_kernel(params: ScoringParams, query) -> None:
    index = ToolIndex.build(_tools(), config=IndexConfig(params=params))
    fs = index.field_scores([query])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UntrainedPenaltyWarning)
        want = index.score_pairs(query, [t.id for t in index.catalog])
    # A structured query is scored with the structured weights (the shipped twin of the
    # default ones; the given params otherwise).
    used = index.config.params_for(isinstance(query, Query))
    assert used == params or (params == DEFAULT_PARAMS and isinstance(query, Query))
    np.testing.assert_allclose(fs.score(used)[0], want, rtol=1e-5, atol=1e-5)


def test_field_presence_bits() -> None:
    mask = field_presence(_tools())
    assert mask.tolist() == [[True, True, False, False], [True, True, False, False],
                             [True, False, True, False], [True, True, False, True],
                             [True, False, False, False]]
    assert presence_bits(mask).tolist() == [3, 3, 5, 11, 1]


def test_search_returns_k_hits_even_without_shared_terms() -> None:
    index = ToolIndex.build(_tools(), preset="bm25")
    hits = index.search("zzz unknown words only", k=5)
    assert [h.tool.id for h in hits] == ["w", "e", "c", "t", "n"]  # catalogue order fills
    assert not any(h.matched for h in hits)
    # The hybrid default ranks the same query by its dense half, still k distinct hits.
    hybrid = ToolIndex.build(_tools()).search("zzz unknown words only", k=5)
    assert sorted(h.tool.id for h in hybrid) == ["c", "e", "n", "t", "w"]
    assert len(index.search("weather", k=len(index))) == len(index)
    assert index.search("weather", k=2)[0].tool.id == "w"
    assert len(index.search("weather", k=50)) == len(index)


# ------------------------------------------------------------------------ analyzer
def test_nltk_list_has_179_words_and_extends_lucene() -> None:
    assert len(NLTK_STOPWORDS) == 179
    # Lucene's list is not a subset ("such", "no", "not" are; "into"/"there"... check both ways)
    assert {"how", "what", "can", "which"} <= NLTK_STOPWORDS
    assert Analyzer(stopwords="en")._stop == ENGLISH_STOPWORDS  # saved indexes keep "en"


def test_default_analyzer_stems_folds_and_drops_question_words() -> None:
    an = IndexConfig().analyzer
    assert an.tokenize("How can I find Cafés running") == ["find", "cafe", "run"]
    assert Analyzer.from_dict(an.to_dict()) == an
    assert Analyzer.from_dict({"stopwords": "en"}).fold_accents is False


def test_bad_stop_list_name() -> None:
    with pytest.raises(ConfigError, match="analyzer.stopwords"):
        Analyzer(stopwords="klingon")


# ------------------------------------------------------------------ configuration
def test_reference_config_keeps_the_papers_setup() -> None:
    ref = IndexConfig.reference()
    assert ref.params == PAPER_PARAMS and ref.analyzer == Analyzer() and ref.tool_card == 0
    assert ref.bm25.k1 == 1.5 and ref.bm25.b == 0.75


def test_old_manifest_without_tool_card_loads_as_built() -> None:
    d = IndexConfig().to_dict()
    del d["tool_card"]
    assert IndexConfig.from_dict(d).tool_card == 0
    assert IndexConfig.from_dict(IndexConfig().to_dict()) == IndexConfig()


def test_shipped_weights_are_the_default_and_lodo_files_exclude_their_set() -> None:
    assert DEFAULT_PARAMS == shipped_params("default")
    assert all(w >= 0 for w in DEFAULT_PARAMS.weights)
    from toolsift.kernels.params import _WEIGHTS_DIR

    for prefix in ("lodo-", "hybrid-lodo-"):
        lodo = sorted(_WEIGHTS_DIR.glob(f"{prefix}*.json"))
        assert len(lodo) == 5
        for path in lodo:
            doc = json.loads(path.read_text())
            held = path.stem.removeprefix(prefix)
            assert doc["held_out"] == held and held not in doc["trained_on"] and len(doc["trained_on"]) == 4
            shipped_params(path.stem)
    # Hybrid weights record the BM25 share they were trained with; the default (hybrid) eval method uses it.
    from toolsift.evaluate.cold import default_config
    from toolsift.kernels.params import shipped_weights

    for held in ("mftr-apibank", "ultratool"):
        cfg, name = default_config(held, hybrid=True)
        doc = shipped_weights(f"hybrid-lodo-{held}")
        assert name == f"hybrid-lodo-{held}" and cfg.params == doc["params"]
        assert cfg.hybrid_weight == doc["index_config"]["hybrid_weight"]
        assert dict(cfg.retrievers)["description"] == "hybrid" and dict(cfg.retrievers)["parameters"] == "bm25"
    with pytest.raises(ConfigError, match="no 'nope'"):
        shipped_params("nope")


# ------------------------------------------------------------------------- warning
def test_untrained_penalty_warns_once_and_not_for_raw_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    import toolsift.config as config_mod

    monkeypatch.setattr(config_mod, "_warned", type(config_mod._warned)())
    index = ToolIndex.build(_tools(), config=IndexConfig(params=PAPER_PARAMS))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        index.search("weather in paris")
        assert not rec
        q = Query(needs=(ToolNeed("weather", "weather", "weather"),), arguments={"city": "paris"})
        index.search(q)
        index.search(q)
    assert [type(w.message) for w in rec] == [UntrainedPenaltyWarning]
    assert "untrained" in str(rec[0].message) and rec[0].filename == __file__
    trained = ToolIndex.build(_tools(), config=IndexConfig(params=replace(PAPER_PARAMS, w_req=0.37)))
    monkeypatch.setattr(config_mod, "_warned", type(config_mod._warned)())
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        trained.search(q)
    assert not rec


# ------------------------------------------------------------------------- trainer
def _pairs(seed: int, init: ScoringParams):
    index = ToolIndex.build(_tools() * 1 + [replace(t, id=t.id + "2", name=t.name + "_v2") for t in _tools()],
                            config=IndexConfig(params=init))
    qs = ["weather in paris", "email the report", "translate to german", "find a coffee place",
          Query(needs=(ToolNeed("send mail", "sent", "mail bob"),), arguments={"to": "bob", "body": "hi"})]
    fs = index.field_scores(qs)
    ids = [t.id for t in index.catalog]
    labels = {"0": ("w",), "1": ("e",), "2": ("t",), "3": ("c",), "4": ("e2",)}
    rng = np.random.default_rng(seed)
    negs = {q: tuple(rng.permutation([i for i in ids if i not in labels[q]])) for q in labels}
    return make_pairs(fs, np.arange(len(qs)), labels, negs, n_negatives=6)


@pytest.mark.parametrize("init", [PAPER_PARAMS, COLDSTART_INIT,
                                  ScoringParams(param_max_share=0.5, renormalize=True)])
def test_analytic_gradient_matches_finite_differences(init: ScoringParams) -> None:
    pairs = _pairs(0, init)
    cfg = TrainConfig(init=init, l2=1e-3, l2_penalty=1e-3)
    theta = _pack(init) + np.random.default_rng(1).normal(0, 0.1, 7)
    theta[:4] = np.abs(theta[:4])  # renormalised scores are defined for w >= 0
    feat, present = _features(pairs, init), _present(pairs, init)
    _, grad = _loss_grad(theta, pairs, cfg, feat, present)
    for j in range(7):
        e = np.zeros(7)
        e[j] = 1e-6
        num = (_loss_grad(theta + e, pairs, cfg, feat, present)[0]
               - _loss_grad(theta - e, pairs, cfg, feat, present)[0]) / 2e-6
        assert grad[j] == pytest.approx(num, rel=1e-4, abs=1e-7)


def test_lbfgs_is_deterministic_and_not_worse_than_adam() -> None:
    pairs = _pairs(2, PAPER_PARAMS)
    a = train(pairs, TrainConfig())
    b = train(pairs, TrainConfig())
    assert a.params == b.params
    adam = train(pairs, TrainConfig(optimizer="adam"))
    reg = lambda p: pair_loss(p, pairs) + 1e-4 * float(np.dot(p.weights, p.weights))  # noqa: E731
    assert reg(a.params) <= reg(adam.params) + 1e-6


def test_nonnegative_training_and_options_are_kept() -> None:
    init = ScoringParams(param_max_share=1.0)
    res = train(_pairs(3, init), TrainConfig(init=init, nonnegative=True, penalty=False))
    assert all(w >= 0 for w in res.params.weights)
    assert res.params.param_max_share == 1.0 and res.params.w_req == 0.0


def test_concat_pairs_offsets_sides() -> None:
    p1, p2 = _pairs(4, PAPER_PARAMS), _pairs(5, PAPER_PARAMS)
    both = concat_pairs([p1, p2])
    assert both.n_pairs == p1.n_pairs + p2.n_pairs
    loss = pair_loss(PAPER_PARAMS, both)
    want = (pair_loss(PAPER_PARAMS, p1) * p1.n_pairs + pair_loss(PAPER_PARAMS, p2) * p2.n_pairs) / both.n_pairs
    assert loss == pytest.approx(want)


def test_bad_optimizer_name() -> None:
    with pytest.raises(ConfigError, match="train.optimizer"):
        TrainConfig(optimizer="sgd")


@pytest.mark.parametrize("init", [PAPER_PARAMS, ScoringParams(param_max_share=0.5, renormalize=True)])
def test_compiled_full_batch_loss_matches_numpy_path(init: ScoringParams) -> None:
    from toolsift.train.trainer import _loss_grad_full

    pairs = _pairs(6, init)
    cfg = TrainConfig(init=init, l2=1e-3, l2_penalty=1e-3)
    theta = np.abs(_pack(init)) + 0.05
    feat, present = _features(pairs, init), _present(pairs, init)
    a_loss, a_grad = _loss_grad_full(theta, pairs, cfg, feat, present)
    b_loss, b_grad = _loss_grad(theta, pairs, cfg, feat, present)
    assert a_loss == pytest.approx(b_loss, rel=1e-10)
    np.testing.assert_allclose(a_grad, b_grad, rtol=1e-9, atol=1e-12)
