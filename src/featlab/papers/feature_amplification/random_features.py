"""The random-features rival of Random Feature Amplification (Frei, Chatterji, Bartlett 2023): the net of eq. (1)
with its first layer W frozen at its init W^{(0)} and its second layer a trained instead (``train_layer=second``).

It is the "no amplification" net the paper's abstract contrasts with: "at initialization, the vast majority of
neurons function as random features that are only weakly correlated with useful features"; here they stay so, and
only the read-out over those random features φ(W^{(0)} x) is learned — a linear model on fixed random ReLU features
(the kernel regime §1 sets aside). One thing changes: which layer GD moves. The features are computed once (W never
moves), so GD on a is a logistic regression on the (E, n, m) feature matrix Φ.

Step size [featlab's choice; the paper trains W only]: the mean logistic loss of Φa has Hessian ≼ ΦᵀΦ/(4n), so GD
on a is stable at 1/L with L = σ_max(Φ)²/(4n), taken per replica — the largest step the loss's smoothness allows;
App. E's α = 0.1 is W's step, scaled to features of order 1, while φ(W^{(0)}x) is of order ω√d ≪ 1 here.
"""

from __future__ import annotations

import torch

from ...nn.twolayer import EnsembleTwoLayer
from ...train.loop import train
from ...train.objectives import logistic
from ...utils import torch_threads


def smoothness_step(phi: torch.Tensor) -> torch.Tensor:
    """(E,) the step 1/L of GD on the mean logistic loss of Φa, L = σ_max(Φ)²/(4n) per replica (Φ: (E, n, m))."""
    n = phi.shape[1]
    top = torch.linalg.matrix_norm(phi, ord=2)  # σ_max per replica
    return 4 * n / top.clamp_min(torch.finfo(phi.dtype).tiny).square()


def second_layer_gd(net: EnsembleTwoLayer, tr, steps: int, seeds, probe=None, probe_every: int = 10,
                    prefix: str = "", desc: str = "random features", threads: int = 1):
    """Full-batch GD on the second layer a of eq. (1), W frozen at W^{(0)} (never handed to the optimiser, so it
    stays bitwise equal). a starts at the paper's ±1/√m (one copy per replica) and is installed in ``net`` as a
    per-replica read-out (E, m, 1), so ``net(x)`` and the probes read the trained a at every step."""
    with torch.no_grad():
        phi = net.features(tr.x)  # (E, n, m): the random features φ(W^{(0)} x), fixed
    E, M = phi.shape[0], phi.shape[2]
    a = net.A[:, 0].detach().to(phi).expand(E, M).clone().requires_grad_(True)  # (E, m), a_j = ±1/√m
    net.A = a[..., None]  # a view: GD's in-place steps on a show through net(x) (the probes read them)
    lr = smoothness_step(phi)
    y = tr.y
    with torch_threads(threads):
        res = train([a], lambda step: logistic(torch.einsum("enm,em->en", phi, a), y), steps, seeds=seeds, lr=lr,
                    probe=probe, probe_every=probe_every, prefix=prefix, desc=desc)
    net.A = a.detach()[..., None]  # the trained read-out, out of the graph
    return res
