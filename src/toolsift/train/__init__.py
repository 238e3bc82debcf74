"""Learning MFTR scoring parameters from labelled queries."""

from .pairs import PairSet, concat_pairs, make_pairs
from .trainer import TrainConfig, TrainResult, pair_loss, train

__all__ = ["PairSet", "concat_pairs", "TrainConfig", "TrainResult", "make_pairs", "pair_loss", "train"]
