from .base import Batch
from .clusters import MultiClusterDistribution, orthogonal_centres

__all__ = ["Batch", "MultiClusterDistribution", "orthogonal_centres"]
