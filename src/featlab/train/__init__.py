"""Training: the replica-batched trainer, per-replica losses, Mixup / Midpoint Mixup, the image trainer."""

from .loop import EnsembleOptimizer, TrainResult, train
from .mixup import MidpointMixup, Mixup, mixup_cross_entropy, random_pairing, sample_beta, soft_target_cross_entropy
from .objectives import cross_entropy, logistic

__all__ = ["EnsembleOptimizer", "TrainResult", "train", "cross_entropy", "logistic", "Mixup", "MidpointMixup",
           "mixup_cross_entropy", "soft_target_cross_entropy", "random_pairing", "sample_beta"]
