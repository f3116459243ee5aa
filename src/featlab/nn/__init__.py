"""Models: replica-batched two-layer networks with every read-out, activations, image networks."""

from .activations import SmoothedReLU, smoothed_relu
from .twolayer import EnsembleTwoLayer, binary_readout, logit_margin_readout, relu

__all__ = ["EnsembleTwoLayer", "binary_readout", "logit_margin_readout", "relu", "SmoothedReLU", "smoothed_relu"]
