"""Objectives: the losses the trainers minimise.

* Per-replica losses (the replica-batched trainer, :mod:`.loop`): each returns a (E,) tensor, the mean loss of
  every replica. Summing the (E,) vector before ``backward`` gives every replica exactly its own gradient (replicas
  share no parameters), which is what lets E seeds train in one computation.
* Image objectives (the image trainer, :mod:`.image_trainer`): ``objective(model, x, y, generator)`` → a scalar
  loss; the generator is the epoch's, for the objective's own random draws (Mixup's pairing and λ).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .mixup import Mixup, mixup_cross_entropy

Objective = Callable[[nn.Module, torch.Tensor, torch.Tensor, torch.Generator], torch.Tensor]


# ------------------------------------------------------------------------------------------ per replica
def logistic(score: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """mean_i ℓ(y_i f(x_i)) with ℓ(q) = log(1 + e^{−q}) (FA §3.1, RFA §2). score, y: (E, n) → (E,)."""
    return F.softplus(-y.to(score.dtype) * score).mean(-1)


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """mean_i −log p_{labels_i}(x_i) (FA §3.2). logits (E, n, k), labels (E, n) → (E,)."""
    logp = logits.log_softmax(-1)
    return -logp.gather(-1, labels.long().unsqueeze(-1)).squeeze(-1).mean(-1)


# ------------------------------------------------------------------------------------------ image models
def erm_objective(model: nn.Module, x: torch.Tensor, y: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    return F.cross_entropy(model(x), y)


def mixup_objective(mix: Mixup) -> Objective:
    """λ·CE(y_a) + (1 − λ)·CE(y_b) on mixed inputs; the pairing and λ come from the epoch's generator."""

    def objective(model, x, y, g):
        mix.generator = g
        xm, ya, yb, lam = mix.pair(x, y)
        return mixup_cross_entropy(model(xm), ya, yb, lam.to(xm.dtype))

    return objective
