"""Learn MFTR weights with a pairwise logistic loss and Adam, in NumPy.

Loss over pairs (relevant tool t+, hard negative t−) of the same query::

    L = mean log(1 + exp(−(S(q,t+) − S(q,t−)))) + λ‖w‖²

Parameters: field weights ``w`` (free), ``τ = sigmoid(u)`` in (0, 1), ``w_req =
softplus(r)`` and ``w_opt = softplus(o)`` (non-negative), ``α`` fixed. The bias cancels
in every pair and stays at its initial value. Gradients are analytic. Training is
full-batch by default, so a run is a pure function of its inputs; with ``batch_size``
the pair order comes from a NumPy generator seeded with ``seed``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError
from ..kernels.params import DEFAULT_PARAMS, ScoringParams
from .pairs import PairSet

__all__ = ["TrainConfig", "TrainResult", "train", "pair_loss"]


@dataclass(frozen=True)
class TrainConfig:
    """Optimiser settings.

    Attributes:
        epochs: Passes over the pairs.
        lr: Adam learning rate.
        l2: Weight decay on the field weights.
        l2_penalty: Weight decay on ``w_req`` and ``w_opt``.
        penalty: Learn the missing-parameter penalty; ``False`` trains the field
            weights only and returns ``w_req = w_opt = 0`` (the no-penalty ablation).
        batch_size: Pairs per step; 0 = all pairs (full batch).
        seed: Seed of the pair shuffling (mini-batch only).
        init: Starting parameters (``alpha`` and ``bias`` are kept).
    """

    epochs: int = 300
    lr: float = 0.05
    l2: float = 1e-4
    l2_penalty: float = 0.0
    penalty: bool = True
    batch_size: int = 0
    seed: int = 0
    init: ScoringParams = DEFAULT_PARAMS

    def __post_init__(self) -> None:
        if not isinstance(self.epochs, int) or self.epochs < 1:
            raise ConfigError(f"train.epochs must be an integer >= 1, got {self.epochs!r}")
        if not (isinstance(self.lr, (int, float)) and self.lr > 0 and math.isfinite(self.lr)):
            raise ConfigError(f"train.lr must be a positive number, got {self.lr!r}")
        if not (isinstance(self.l2, (int, float)) and self.l2 >= 0):
            raise ConfigError(f"train.l2 must be >= 0, got {self.l2!r}")
        if not isinstance(self.batch_size, int) or self.batch_size < 0:
            raise ConfigError(f"train.batch_size must be an integer >= 0, got {self.batch_size!r}")


@dataclass
class TrainResult:
    """Learned parameters and the loss after each epoch."""

    params: ScoringParams
    losses: list[float] = field(default_factory=list)


def _softplus(x: float) -> float:
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


def _inv_softplus(y: float) -> float:
    y = max(y, 1e-6)
    return y + math.log(-math.expm1(-y))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x))


def _unpack(theta: np.ndarray, init: ScoringParams, penalty: bool) -> ScoringParams:
    return ScoringParams(
        weights=tuple(float(v) for v in theta[:4]), bias=init.bias, alpha=init.alpha,
        tau=float(1.0 / (1.0 + math.exp(-theta[4]))) if penalty else init.tau,
        w_req=_softplus(float(theta[5])) if penalty else 0.0,
        w_opt=_softplus(float(theta[6])) if penalty else 0.0,
    )


def _forward(theta: np.ndarray, pairs: PairSet, alpha: float, penalty: bool = True):
    """Scores of all sides and, per side, dS/dθ for the penalty parameters."""
    w = theta[:4]
    if not penalty:
        z = np.zeros(pairs.base.shape[0])
        return pairs.base @ w, z, z, z, 0.5
    tau = 1.0 / (1.0 + math.exp(-theta[4]))
    w_req, w_opt = _softplus(theta[5]), _softplus(theta[6])
    n = pairs.base.shape[0]
    sig = _sigmoid(alpha * (tau - pairs.param_sims))
    active = pairs.penalized[pairs.param_side]
    sig = np.where(active, sig, 0.0)
    req = pairs.param_required
    pw = np.where(req, w_req, w_opt)
    pen = np.bincount(pairs.param_side, weights=sig * pw, minlength=n)
    # dP/dτ = Σ pw·α·σ(1−σ); dP/dw_req = Σ_req σ; dP/dw_opt = Σ_opt σ.
    d_tau = np.bincount(pairs.param_side, weights=pw * alpha * sig * (1.0 - sig), minlength=n)
    d_req = np.bincount(pairs.param_side, weights=np.where(req, sig, 0.0), minlength=n)
    d_opt = np.bincount(pairs.param_side, weights=np.where(req, 0.0, sig), minlength=n)
    s = pairs.base @ w - pen
    return s, d_tau, d_req, d_opt, tau


def pair_loss(params: ScoringParams, pairs: PairSet) -> float:
    """Mean pairwise logistic loss of ``params`` on ``pairs`` (no regularisation)."""
    theta = _pack(params)
    s, *_ = _forward(theta, pairs, params.alpha)
    d = s[pairs.pos] - s[pairs.neg]
    return float(np.mean(np.logaddexp(0.0, -d))) if d.size else 0.0


def _pack(p: ScoringParams) -> np.ndarray:
    tau = min(max(p.tau, 1e-4), 1 - 1e-4)
    return np.array([*p.weights, math.log(tau / (1 - tau)), _inv_softplus(p.w_req), _inv_softplus(p.w_opt)])


def train(pairs: PairSet, config: TrainConfig = TrainConfig(), *, progress: bool = False) -> TrainResult:
    """Fit scoring parameters on ``pairs``.

    Args:
        pairs: Training pairs from :func:`~toolsift.train.pairs.make_pairs`.
        config: Optimiser settings.
        progress: Show a progress bar over epochs.

    Returns:
        The learned parameters and the loss per epoch.

    Raises:
        ConfigError: ``pairs`` is empty.
    """
    if pairs.n_pairs == 0:
        raise ConfigError("no training pairs: do the training queries have labels and negatives?")
    init = config.init
    theta = _pack(init)
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    b1, b2, eps = 0.9, 0.999, 1e-8
    rng = np.random.default_rng(config.seed)
    bs = config.batch_size or pairs.n_pairs
    losses: list[float] = []
    step = 0
    epochs = range(config.epochs)
    if progress:
        from tqdm.auto import tqdm

        epochs = tqdm(epochs, desc="train", leave=False)
    for _ in epochs:
        order = np.arange(pairs.n_pairs) if bs >= pairs.n_pairs else rng.permutation(pairs.n_pairs)
        total = 0.0
        for start in range(0, pairs.n_pairs, bs):
            idx = order[start:start + bs]
            s, d_tau, d_req, d_opt, tau = _forward(theta, pairs, init.alpha, config.penalty)
            pi, ni = pairs.pos[idx], pairs.neg[idx]
            d = s[pi] - s[ni]
            total += float(np.sum(np.logaddexp(0.0, -d)))
            g_d = -_sigmoid(-d) / idx.size  # dL/dΔ
            grad = np.zeros_like(theta)
            grad[:4] = g_d @ (pairs.base[pi] - pairs.base[ni]) + 2 * config.l2 * theta[:4]
            # S = base·w − P, so dS/dθ_pen = −dP/dθ_pen; chain through τ = σ(u), w = softplus(r).
            grad[4] = -(g_d @ (d_tau[pi] - d_tau[ni])) * tau * (1 - tau)
            wr, wo = _softplus(float(theta[5])), _softplus(float(theta[6]))
            grad[5] = (-(g_d @ (d_req[pi] - d_req[ni])) + 2 * config.l2_penalty * wr) * _sigmoid(np.array(theta[5]))
            grad[6] = (-(g_d @ (d_opt[pi] - d_opt[ni])) + 2 * config.l2_penalty * wo) * _sigmoid(np.array(theta[6]))
            step += 1
            m = b1 * m + (1 - b1) * grad
            v = b2 * v + (1 - b2) * grad * grad
            theta = theta - config.lr * (m / (1 - b1**step)) / (np.sqrt(v / (1 - b2**step)) + eps)
        losses.append(total / pairs.n_pairs)
    return TrainResult(_unpack(theta, init, config.penalty), losses)
