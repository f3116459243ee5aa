from .twolayer import EnsembleTwoLayer, binary_readout, logit_margin_readout, relu
from . import reference

__all__ = ["EnsembleTwoLayer", "binary_readout", "logit_margin_readout", "relu", "reference"]
