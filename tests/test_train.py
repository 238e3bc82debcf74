"""The NumPy trainer: analytic gradients against finite differences, loss goes down,
runs are deterministic, and the no-penalty ablation really has no penalty."""

from __future__ import annotations

import numpy as np
import pytest

from toolsift.kernels.params import ScoringParams
from toolsift.scores import FieldScores
from toolsift.train import TrainConfig, make_pairs, pair_loss, train
from toolsift.train import trainer as T


def _toy(seed: int = 0, nq: int = 30, nt: int = 25) -> tuple[FieldScores, dict, dict]:
    rng = np.random.default_rng(seed)
    n_params = rng.integers(0, 4, size=nt)
    param_tool = np.repeat(np.arange(nt), n_params)
    base = rng.random((nq, nt, 4)).astype(np.float32)
    psims = rng.random((nq, param_tool.size)).astype(np.float32)
    labels, negs = {}, {}
    for q in range(nq):
        rel = rng.choice(nt, size=2, replace=False)
        base[q, rel] += 0.3  # relevant tools score higher on average
        labels[str(q)] = tuple(f"t{r}" for r in rel)
        negs[str(q)] = tuple(f"t{r}" for r in rng.permutation(nt) if r not in rel)
    fs = FieldScores([str(i) for i in range(nq)], [f"t{i}" for i in range(nt)], base, psims,
                     rng.random(nq) < 0.7, param_tool.astype(np.int64), rng.random(param_tool.size) < 0.6)
    return fs, labels, negs


def test_pairs_reproduce_field_scores():
    fs, labels, negs = _toy()
    pairs = make_pairs(fs, range(10), labels, negs, n_negatives=5)
    params = ScoringParams(weights=(0.3, 0.2, 0.4, 0.1), tau=0.4, w_req=0.2, w_opt=0.1)
    full = fs.score(params)
    s, *_ = T._forward(T._pack(params), pairs, params.alpha)
    assert pairs.n_pairs == 10 * 2 * 5
    # Every side's score equals the dense FieldScores score of its (query, tool).
    tool_pos = {t: i for i, t in enumerate(fs.tool_ids)}
    k = 0
    for q in range(10):
        rel = labels[str(q)]
        ng = [n for n in negs[str(q)] if n not in rel][:5]
        for p in rel:
            for n in ng:
                assert s[pairs.pos[k]] == pytest.approx(full[q, tool_pos[p]] - params.bias, abs=1e-9)
                assert s[pairs.neg[k]] == pytest.approx(full[q, tool_pos[n]] - params.bias, abs=1e-9)
                k += 1


def test_gradient_matches_finite_differences():
    fs, labels, negs = _toy(1)
    pairs = make_pairs(fs, range(20), labels, negs, n_negatives=8)
    theta = T._pack(ScoringParams(weights=(0.3, -0.2, 0.4, 0.1), tau=0.45, w_req=0.3, w_opt=0.2))
    cfg = TrainConfig(l2=0.0)
    init = ScoringParams()

    def loss(th):
        return pair_loss(T._unpack(th, init, True), pairs)

    # The trainer's own loss-and-gradient (used by L-BFGS-B and Adam) against central
    # differences of the independent pair_loss.
    _, grad = T._loss_grad(theta, pairs, cfg, T._features(pairs, init), T._present(pairs, init))
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = 1e-6
        num = (loss(theta + e) - loss(theta - e)) / 2e-6
        assert grad[i] == pytest.approx(num, rel=1e-4, abs=1e-7), i
    assert cfg.l2 == 0.0


def test_training_lowers_the_loss_and_is_deterministic():
    fs, labels, negs = _toy(2)
    pairs = make_pairs(fs, range(30), labels, negs)
    start = pair_loss(ScoringParams(), pairs)
    a = train(pairs, TrainConfig(epochs=100))
    b = train(pairs, TrainConfig(epochs=100))
    assert a.params == b.params and a.losses == b.losses
    assert pair_loss(a.params, pairs) < start
    assert a.losses[-1] < a.losses[0]
    mb1 = train(pairs, TrainConfig(epochs=20, batch_size=16, seed=3))
    mb2 = train(pairs, TrainConfig(epochs=20, batch_size=16, seed=3))
    assert mb1.params == mb2.params


def test_no_penalty_ablation():
    fs, labels, negs = _toy(3)
    res = train(make_pairs(fs, range(30), labels, negs), TrainConfig(epochs=50, penalty=False))
    assert res.params.w_req == 0.0 and res.params.w_opt == 0.0
    np.testing.assert_allclose(fs.penalty(res.params), 0.0)


def test_bad_config_and_empty_pairs():
    from toolsift.errors import ConfigError

    with pytest.raises(ConfigError, match="epochs"):
        TrainConfig(epochs=0)
    with pytest.raises(ConfigError, match="lr"):
        TrainConfig(lr=-1)
    fs, labels, negs = _toy(4)
    with pytest.raises(ConfigError, match="no training pairs"):
        train(make_pairs(fs, [], labels, negs))
