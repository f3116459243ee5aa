"""Random Feature Amplification (Frei, Chatterji, Bartlett; JMLR 2023): early-stopped GD on XOR clusters with
label noise fits the clean points, not the noisy ones, and amplifies weak random features."""

from ...runs.registry import register_paper

register_paper("feature-amplification", "Random Feature Amplification (Frei, Chatterji, Bartlett; JMLR 2023)",
               prefix="rfa")

from . import theorem1, amplification, figures  # noqa: E402,F401  (each registers its experiments)
from .data import XORClusterDistribution  # noqa: E402

__all__ = ["XORClusterDistribution"]
