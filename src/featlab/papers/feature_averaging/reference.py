"""Reference networks of the Feature Averaging paper (Def 4.1, Appendix D) built from a distribution's centres.

Each is an :class:`EnsembleTwoLayer` with the same replica axis as the distribution, so the probes and attacks
that measure trained networks measure these too.
"""

from __future__ import annotations

import torch

from ...nn.twolayer import EnsembleTwoLayer
from .data import MultiClusterDistribution


def feature_averaging(dist: MultiClusterDistribution, bias: float = 0.0) -> EnsembleTwoLayer:
    """f_FA(x) = ReLU(<Σ_{J+}μ_j, x> + b) − ReLU(<Σ_{J−}μ_j, x> + b) (Def 4.1; App. D.1 with b± = b)."""
    W = dist.class_sums()  # (E, 2, d)
    A = torch.tensor([[1.0], [-1.0]], dtype=W.dtype, device=W.device)
    b = torch.full((dist.E, 2), bias, dtype=W.dtype, device=W.device)
    return EnsembleTwoLayer(W.clone(), A, b)


def feature_decoupled(dist: MultiClusterDistribution) -> EnsembleTwoLayer:
    """f_dec(x) = Σ_{J+} ReLU(<μ_j, x> − d/2) − Σ_{J−} ReLU(<μ_l, x> − d/2) (Thm D.3): (√d/3)-robust."""
    W = dist.mu.clone()
    A = dist.signs[:, None].to(W.dtype)
    b = torch.full((dist.E, dist.k), -dist.d / 2, dtype=W.dtype, device=W.device)
    return EnsembleTwoLayer(W, A, b)


def nonrobust_multiclass(dist: MultiClusterDistribution) -> EnsembleTwoLayer:
    """Prop 4.8 / Thm D.4: k-class net, h = 1, f_j(x) = ReLU(<μ_j + Σ_{l∈J_s} μ_l, x>), s the class of cluster j.

    It fits the fine-grained labels, yet its binary read-out breaks at radius Ω(√(d/k)): robustness needs GD's
    implicit bias, not just fine labels.
    """
    sums = dist.class_sums()  # (E, 2, d)
    own = torch.where(dist.positive[None, :, None], sums[:, :1], sums[:, 1:])  # (E, k, d)
    W = dist.mu + own
    A = torch.eye(dist.k, dtype=W.dtype, device=W.device)
    return EnsembleTwoLayer(W, A, None)
