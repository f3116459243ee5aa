from .loop import EnsembleOptimizer, TrainResult, train
from .objectives import cross_entropy, logistic

__all__ = ["EnsembleOptimizer", "TrainResult", "train", "cross_entropy", "logistic"]
