"""Feature Averaging (Li, Pan, Lyu, Li; ICLR 2025): gradient descent averages cluster features, which makes
the network non-robust; fine-grained (k-class) labels decouple the features and restore robustness."""

from ...runs.registry import register_paper
from .coverage import RESULTS

register_paper("feature-averaging", "Feature Averaging (Li, Pan, Lyu, Li; ICLR 2025)", prefix="fa", results=RESULTS)

# import order = registration order = catalogue order: not sorted
# isort: off
from . import synthetic, ablations, deep, embeddings  # noqa: E402,F401  (each registers its experiments)
from . import phase  # noqa: E402,F401  (fa-phase)
# isort: on
from .data import MultiClusterDistribution, orthogonal_centres  # noqa: E402

__all__ = ["MultiClusterDistribution", "orthogonal_centres"]
