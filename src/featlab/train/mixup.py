"""Mixup and Midpoint Mixup as batch transforms that drop into any DataLoader loop (cf. torchvision v2.MixUp),
with what those lack: a fixed λ = 1/2 (Midpoint Mixup, Chidambaram et al. 2023 §2), one λ per batch or per
sample, and control of the pairing.

    mix = MidpointMixup(num_classes=10)            # or Mixup(alpha=1.0, num_classes=10)
    for x, y in loader:
        xm, target = mix(x, y)                      # target: soft labels (N, C)
        loss = soft_target_cross_entropy(model(xm), target)

``mix.pair(x, y)`` returns the pieces instead (x_mixed, y_a, y_b, lam) for the λ-weighted loss
:func:`mixup_cross_entropy` (identical in value to the soft-target loss for cross-entropy).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..errors import ConfigError
from ..utils import cpu_draws


def _per_replica(generator, draw) -> torch.Tensor:
    """``draw(generator)``, or with a list of generators (one per replica) the (E, ...) stack of their draws."""
    if isinstance(generator, (list, tuple)):
        return torch.stack([draw(g) for g in generator])
    return draw(generator)


@cpu_draws  # partners come from CPU generators; callers move them to their data's device
def random_pairing(n: int, allow_self_pairs: bool = True, generator: torch.Generator | None = None, *,
                   independent: bool = False) -> torch.Tensor:
    """Partner index of each of n examples: the one pairing used by the batch transform and the replica losses.

    independent=False (the batch transform): a random permutation, or with ``allow_self_pairs=False`` a random
    derangement (no i paired with i). independent=True (Midpoint Mixup's sampled pairs, the public code): each i
    draws its partner uniformly from the n examples, or uniformly from the n − 1 others.
    ``generator``: one generator → (n,); a list of generators (one per replica) → (E, n), row i from generator i,
    so replica i sees exactly its own seed's draws.
    """
    if isinstance(generator, (list, tuple)):
        return _per_replica(generator, lambda g: random_pairing(n, allow_self_pairs, g, independent=independent))
    if independent:
        if allow_self_pairs or n < 2:
            return torch.randint(n, (n,), generator=generator)
        j = torch.randint(n - 1, (n,), generator=generator)
        return j + (j >= torch.arange(n)).long()
    if allow_self_pairs or n < 2:
        return torch.randperm(n, generator=generator)
    # a random cyclic shift of a random permutation has no fixed point
    perm = torch.randperm(n, generator=generator)
    partner = torch.empty(n, dtype=torch.long)
    partner[perm] = perm.roll(1)
    return partner


def sample_beta(a: float, size: int, generator: torch.Generator | list[torch.Generator] | None = None) -> torch.Tensor:
    """``size`` float64 draws of λ ~ Beta(a, a), from two Gammas so that the caller's generator is honoured.

    ``generator``: one generator → (size,); a list of generators (one per replica) → (E, size), row i from
    generator i. The one Beta sampler of the batch transform (:meth:`Mixup.sample_lam`) and the replica losses.
    """

    def draw(g):
        aa = torch.full((size,), float(a), dtype=torch.float64, device="cpu")  # CPU generator's device
        g1 = torch._standard_gamma(aa, generator=g)
        g2 = torch._standard_gamma(aa, generator=g)
        return g1 / (g1 + g2)

    return _per_replica(generator, draw)


class Mixup:
    """x̃ = λ x_i + (1 − λ) x_j with λ ~ Beta(alpha, alpha), or a fixed ``lam``.

    alpha: Beta parameter (> 0); ignored when ``lam`` is given. lam: fixed mixing weight in [0, 1].
    per_sample: one λ per example (True) or one per batch (False, as torchvision and the official code).
    allow_self_pairs: pair by a random permutation (self-pairs possible) or by a derangement.
    num_classes: needed for soft targets (``__call__``).
    """

    def __init__(self, alpha: float | None = 1.0, *, lam: float | None = None, per_sample: bool = False,
                 allow_self_pairs: bool = True, num_classes: int | None = None,
                 generator: torch.Generator | None = None):
        if lam is None and (alpha is None or not alpha > 0):
            raise ConfigError(f"the 'alpha' parameter of Mixup must be a float > 0; got {alpha!r} instead "
                              f"(use MidpointMixup or lam=0.5 for a fixed λ)")
        if lam is not None and not 0.0 <= lam <= 1.0:
            raise ConfigError(f"the 'lam' parameter of Mixup must be in [0, 1]; got {lam!r} instead")
        self.alpha, self.lam, self.per_sample = alpha, lam, per_sample
        self.allow_self_pairs, self.num_classes, self.generator = allow_self_pairs, num_classes, generator

    def sample_lam(self, n: int, dtype=torch.float32) -> torch.Tensor:
        size = n if self.per_sample else 1
        if self.lam is not None:
            lam = torch.full((size,), float(self.lam), dtype=torch.float64, device="cpu")  # moved by pair()
        else:
            assert self.alpha is not None  # checked in __init__ when lam is None
            lam = sample_beta(self.alpha, size, self.generator)
        return lam.expand(n).to(dtype)

    def pair(self, x: torch.Tensor, y: torch.Tensor):
        """(x_mixed, y_a, y_b, lam (N,)) for a batch x (N, ...) with labels y (N,)."""
        n = x.shape[0]
        j = random_pairing(n, self.allow_self_pairs, self.generator).to(x.device)
        lam = self.sample_lam(n, x.dtype if x.is_floating_point() else torch.float32).to(x.device)
        lam_x = lam.reshape(n, *([1] * (x.dim() - 1)))
        return lam_x * x + (1 - lam_x) * x[j], y, y[j], lam

    def __call__(self, x: torch.Tensor, y: torch.Tensor):
        """(x_mixed, soft targets (N, C)) — the torchvision-style interface."""
        if self.num_classes is None:
            raise ConfigError("Mixup needs num_classes for soft targets; pass num_classes=C or call .pair()")
        xm, ya, yb, lam = self.pair(x, y)
        lam = lam.to(xm.dtype)[:, None]
        target = lam * F.one_hot(ya.long(), self.num_classes).to(xm.dtype) + (1 - lam) * F.one_hot(
            yb.long(), self.num_classes).to(xm.dtype)
        return xm, target


class MidpointMixup(Mixup):
    """Mixup with λ fixed at 1/2: the midpoint of each pair (Midpoint Mixup, §2)."""

    def __init__(self, *, allow_self_pairs: bool = True, num_classes: int | None = None,
                 generator: torch.Generator | None = None):
        super().__init__(None, lam=0.5, allow_self_pairs=allow_self_pairs, num_classes=num_classes,
                         generator=generator)


def mixup_cross_entropy(logits: torch.Tensor, y_a: torch.Tensor, y_b: torch.Tensor, lam: torch.Tensor,
                        reduction: str = "mean") -> torch.Tensor:
    """λ·CE(y_a) + (1 − λ)·CE(y_b), per example λ."""
    la = F.cross_entropy(logits, y_a.long(), reduction="none")
    lb = F.cross_entropy(logits, y_b.long(), reduction="none")
    loss = lam * la + (1 - lam) * lb
    return loss.mean() if reduction == "mean" else loss


def soft_target_cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """mean_i −Σ_c t_ic log softmax(logits)_ic."""
    return -(target * logits.log_softmax(-1)).sum(-1).mean()
