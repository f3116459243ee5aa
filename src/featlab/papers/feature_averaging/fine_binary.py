"""The binary net's training objective, and the ``fine-binary`` rival's (config ``binary_supervision``).

The paper trains the binary net f (§3.2: 2m neurons with biases, second layer ±1/m fixed) on the logistic loss of
the binary labels y (eq. 1); that is ``binary_supervision='coarse'``, the default. The rival ``'fine'`` trains the
*same* net from the same small init, at the same η and T, on §4.2's fine-grained supervision instead: the
cross-entropy of the cluster labels ỹ_i, where cluster j's logit is the mean activation of the binary net's
neurons assigned to it — neuron (s, r) to cluster J_s[r mod |J_s|], the assignment of Thm D.3's decoupled network
(and of ``init='decoupled'``). After training it is read out and attacked as the paper's binary f. So it is the
paper's own fix (fine labels, Thm 4.7) applied to the binary net: a net trained to the same clean accuracy by
decoupling instead of averaging.
"""

from __future__ import annotations

import torch

from ...train.objectives import cross_entropy, logistic


def cluster_assignment(positive: torch.Tensor, m: int) -> torch.Tensor:
    """(2m, k): row (s, r) is the mean-weight of neuron (s, r) in its cluster's logit — 1/(number of neurons on
    that cluster) at cluster J_s[r mod |J_s|], 0 elsewhere. ``positive``: J+ as a (k,) boolean mask."""
    pos, neg = positive.nonzero().flatten(), (~positive).nonzero().flatten()
    r = torch.arange(m, device=positive.device)
    cluster = torch.cat([pos[r % len(pos)], neg[r % len(neg)]])  # as in common._binary_start's decoupled init
    A = torch.zeros(2 * m, positive.numel(), dtype=torch.float64, device=positive.device)
    A[torch.arange(2 * m, device=positive.device), cluster] = 1.0
    return A / A.sum(0, keepdim=True).clamp_min(1)


def binary_objective(cfg, dist, tr):
    """(net, z) → the binary net's loss from its pre-activations z = <w, x> + b on the training points:
    FA eq. 1 (logistic loss of f on y) for ``coarse``; for ``fine`` (the rival), the cross-entropy of the cluster
    labels ỹ (§4.2) with logits ReLU(z) @ :func:`cluster_assignment`."""
    if getattr(cfg, "binary_supervision", "coarse") == "coarse":
        return lambda net, z: logistic(net.head(z), tr.y)
    A = cluster_assignment(dist.positive, cfg.m).to(dtype=tr.x.dtype, device=tr.x.device)
    return lambda net, z: cross_entropy(net.activation(z) @ A, tr.cluster)


def supervision_ok(cfg) -> tuple[bool, str]:
    """The rival needs a neuron for every cluster of each class: m ≥ max(|J+|, |J−|) (Assumption 4.3's
    m ∈ [max(|J+|, |J−|), k], Remark A.5)."""
    if getattr(cfg, "binary_supervision", "coarse") == "coarse":
        return True, ""
    pos = len(set(cfg.positive_set()))
    need = max(pos, cfg.k - pos)
    return cfg.m >= need, (f"must be >= max(|J+|, |J−|) = {need} for binary_supervision='fine' (one neuron per "
                           f"cluster of its class); got m={cfg.m}")
