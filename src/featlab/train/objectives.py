"""Per-replica losses: each returns a (E,) tensor, the mean loss of every replica.

Summing the (E,) vector before ``backward`` gives every replica exactly its own gradient (replicas share no
parameters), which is what lets E seeds train in one computation.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def logistic(score: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """mean_i ℓ(y_i f(x_i)) with ℓ(q) = log(1 + e^{−q}) (FA §3.1, RFA §2). score, y: (E, n) → (E,)."""
    return F.softplus(-y.to(score.dtype) * score).mean(-1)


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """mean_i −log p_{labels_i}(x_i) (FA §3.2). logits (E, n, k), labels (E, n) → (E,)."""
    logp = logits.log_softmax(-1)
    return -logp.gather(-1, labels.long().unsqueeze(-1)).squeeze(-1).mean(-1)

