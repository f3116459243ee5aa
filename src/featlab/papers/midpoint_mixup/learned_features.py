"""Feature-learning measurements of Midpoint Mixup §4: weight–feature correlations and the Def 4.5 test.

* ``correlations``: <w_{y,r}, v_{s,ℓ}> as a (E, k, m, k, 2) tensor — read straight off W in the reduced
  (feature-coordinate) simulation, W Vᵀ in the full one.
* ``correlation_stats``: Λ_{y,ℓ} = max_r <w_{y,r}, v_{y,ℓ}> (App. B), the gap Δ_y = |Λ_{y,1} − Λ_{y,2}|, the largest
  off-diagonal correlation max_{r, s≠y, ℓ} <w_{y,r}, v_{s,ℓ}>.
* ``feature_test``: Def 4.5 on fresh class-balanced points. Dataset-level rule (the definition is per point): v_{y,ℓ}
  is learned when at least ``threshold`` (0.9) of class y's single-view test points x' are classified as y,
  strictly (a tie with another logit counts as wrong: with no feature learned all logits can be equal).
"""

from __future__ import annotations

import torch

from ...nn.twolayer import patch_logits
from .data import compress_patches


def correlations(W: torch.Tensor, k: int, V: torch.Tensor | None = None) -> torch.Tensor:
    """(E, k·m, d or 2k) weights → (E, k, m, k, 2) correlations <w_{y,r}, v_{s,ℓ}>."""
    C = W if V is None else W @ V.transpose(1, 2)
    E, M, _ = C.shape
    return C.reshape(E, k, M // k, k, 2)


def correlation_stats(corr: torch.Tensor) -> dict[str, torch.Tensor]:
    E, k = corr.shape[:2]
    eye = torch.eye(k, dtype=torch.bool, device=corr.device)
    ar = torch.arange(k, device=corr.device)
    diag = corr[:, ar, :, ar]  # (k, E, m, 2)
    Lam = diag.movedim(0, 1).max(2).values  # (E, k, 2): Λ_{y,ℓ}
    off = corr.masked_fill(eye[None, :, None, :, None], float("-inf")).amax((2, 3, 4))  # (E, k)
    return {"Lambda": Lam, "gap": (Lam[..., 0] - Lam[..., 1]).abs(), "offdiag_max": off}


@torch.no_grad()
def feature_test(model, dist, test, threshold: float = 0.9, embed_fn=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Def 4.5 per class and feature: (learned (E, k, 2) bool, accuracy (E, k, 2)).

    ``test``: a class-balanced Batch in feature coordinates; ``embed_fn`` maps coordinates to the model's inputs
    (identity for the reduced simulation)."""
    k = dist.k
    accs = []
    for ell in (1, 2):
        xs, mult = compress_patches(dist.single_view(test.x, test.y, ell))
        logits = patch_logits(model, xs if embed_fn is None else embed_fn(xs), mult)  # (E, n, k)
        gy = logits.gather(-1, test.y[..., None]).squeeze(-1)
        rival = logits.scatter(-1, test.y[..., None], float("-inf")).max(-1).values
        ok = (gy > rival).to(logits.dtype)  # strict: ties are failures
        per_class = ok.new_zeros(ok.shape[0], k).scatter_add_(1, test.y, ok)
        count = torch.zeros_like(per_class).scatter_add_(1, test.y, torch.ones_like(ok))
        accs.append(per_class / count.clamp(min=1))
    acc = torch.stack(accs, -1)
    return acc >= threshold, acc


def learned_counts(learned: torch.Tensor) -> torch.Tensor:
    """(E, k, 2) → (E, 3): number of classes that learned 0, 1 and 2 features."""
    n = learned.sum(-1)
    return torch.stack([(n == c).sum(-1) for c in range(3)], -1)


@torch.no_grad()
def train_accuracy(model, x, y, mult=None) -> torch.Tensor:
    """(E,) share of training points with argmax_s g^s(x_i) = y_i, strictly."""
    logits = patch_logits(model, x, mult)
    gy = logits.gather(-1, y[..., None]).squeeze(-1)
    rival = logits.scatter(-1, y[..., None], float("-inf")).max(-1).values
    return (gy > rival).to(logits.dtype).mean(-1)
