"""Models: replica-batched two-layer networks with every read-out, activations, image networks."""

from .activations import SmoothedReLU, smoothed_relu
from .twolayer import (
    EnsembleTwoLayer,
    binary_readout,
    logit_margin_readout,
    patch_logits,
    positive_mask,
    relu,
    sign_prediction,
)

__all__ = ["EnsembleTwoLayer", "binary_readout", "logit_margin_readout", "patch_logits", "positive_mask", "relu",
           "sign_prediction", "SmoothedReLU", "smoothed_relu"]
