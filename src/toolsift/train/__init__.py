"""Learning MFTR scoring parameters from labelled queries."""

from .pairs import PairSet, make_pairs
from .trainer import TrainConfig, TrainResult, pair_loss, train

__all__ = ["PairSet", "TrainConfig", "TrainResult", "make_pairs", "pair_loss", "train"]
