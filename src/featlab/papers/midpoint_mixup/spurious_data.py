"""Midpoint Mixup's spurious-channel benchmark (Chidambaram et al., ICML 2023, §5): a dataset wrapper.

Every class c is paired with a different class σ(c) by a random fixed bijection; every training image is
concatenated along channels with an image of class σ(y), the two scaled by γ and 1 − γ with γ ~ U[0, 1] redrawn
at every access. Test images get zeros in the extra channels, so a model that learned only the concatenated
("spurious") image fails there (the paper's stand-in for Definition 4.5).

    sc = SpuriousChannels(x_train, y_train, num_classes=10, seed=0)
    xb, yb = sc.batch(idx, generator=g)           # (B, 2C, H, W): fresh γ per example
    x_test2 = SpuriousChannels.test_view(x_test)  # (N, 2C, H, W): zeros in the extra channels
    sc[i]                                         # torch Dataset interface, (2C, H, W), label

Decisions (the paper is silent; they follow the official code unless said otherwise):
* σ is a random perfect matching (an involution, as the code) when the class count k is even. For odd k,
  where no perfect matching exists, σ pairs k − 3 classes as an involution and puts the remaining three in a
  3-cycle: a derangement (no class paired with itself) as close to a matching as possible.
* The partner image of each training example is drawn uniformly from class σ(y) once, when the wrapper is built
  (``partner="fixed"``, the code), or redrawn at every access (``partner="resample"``).
* Inputs are whatever the caller passes (the code normalises first, then scales and concatenates, so the test
  zeros are zeros in normalised space).
* ``spurious=False`` (a control, not the paper): every training example is its test view, the image beside zeros,
  with the same draws of partners and γ as the paper's wrapper (so the data order and everything else match); the
  spurious feature is removed and the training and test distributions are the same.
"""

from __future__ import annotations

import torch

from ...errors import ConfigError
from ...utils import generator as make_generator


def class_pairing(k: int, generator: torch.Generator) -> torch.Tensor:
    """σ as a (k,) index tensor: a random involution without fixed points (even k) or a derangement (odd k)."""
    if k < 2:
        raise ConfigError(f"SpuriousChannels needs at least 2 classes to pair; got {k}")
    order = torch.randperm(k, generator=generator, device=generator.device)
    sigma = torch.empty(k, dtype=torch.long, device=order.device)
    n_pairs = k // 2 if k % 2 == 0 else (k - 3) // 2
    for i in range(n_pairs):
        a, b = order[2 * i], order[2 * i + 1]
        sigma[a], sigma[b] = b, a
    if k % 2 == 1:  # the last three classes form a 3-cycle a → b → c → a
        a, b, c = order[-3:]
        sigma[a], sigma[b], sigma[c] = b, c, a
    return sigma


class SpuriousChannels(torch.utils.data.Dataset):
    def __init__(self, x: torch.Tensor, y: torch.Tensor, num_classes: int | None = None, *, seed: int = 0,
                 partner: str = "fixed", generator: torch.Generator | None = None, spurious: bool = True):
        if x.dim() != 4 or y.dim() != 1 or len(x) != len(y):
            raise ConfigError(f"SpuriousChannels needs images (N, C, H, W) and labels (N,); got {tuple(x.shape)} "
                              f"and {tuple(y.shape)}")
        if partner not in ("fixed", "resample"):
            raise ConfigError(f"the 'partner' option of SpuriousChannels must be 'fixed' or 'resample'; "
                              f"got {partner!r}")
        self.x, self.y = x, y.long()
        self.k = int(num_classes if num_classes is not None else int(self.y.max()) + 1)
        g = make_generator(seed, "spurious/pairing")
        self.sigma = class_pairing(self.k, g).to(self.y.device)  # indexed by labels, where the labels live
        self.by_class = [(self.y == c).nonzero().flatten() for c in range(self.k)]
        empty = [c for c in range(self.k) if len(self.by_class[c]) == 0 and (self.sigma == c).any()]
        if empty:
            raise ConfigError(f"SpuriousChannels: class {empty[0]} has no training image to serve as a partner; "
                              f"use a training set holding every class")
        self.partner_mode, self.spurious = partner, spurious
        self.partners = self._draw_partners(torch.arange(len(self.y), device=self.y.device), g)
        self.generator = generator if generator is not None else make_generator(seed, "spurious/gamma")

    def _draw_partners(self, idx: torch.Tensor, g: torch.Generator) -> torch.Tensor:
        """An index of class σ(y_i) for each i in idx, uniform within that class."""
        target = self.sigma[self.y[idx]]
        out = torch.empty(len(idx), dtype=torch.long, device=idx.device)
        for c in target.unique().tolist():
            pos = (target == c).nonzero().flatten()
            pool = self.by_class[c]
            out[pos] = pool[torch.randint(len(pool), (len(pos),), generator=g, device=g.device)]
        return out

    @property
    def channels(self) -> int:
        return 2 * self.x.shape[1]

    def __len__(self) -> int:
        return len(self.y)

    def batch(self, idx: torch.Tensor, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Training examples idx as (B, 2C, H, W) with a fresh γ ~ U[0,1] per example, and their labels."""
        g = generator if generator is not None else self.generator
        idx = idx.long()
        partner = self._draw_partners(idx, g) if self.partner_mode == "resample" else self.partners[idx]
        gamma = torch.rand(len(idx), generator=g, dtype=self.x.dtype, device=g.device).reshape(-1, 1, 1, 1)
        gamma = gamma.to(self.x.device)  # drawn where the generator lives, used where the images live
        if not self.spurious:  # the control: drawn as above (same RNG stream), then the test view
            return self.test_view(self.x[idx]), self.y[idx]
        xb = torch.cat([gamma * self.x[idx], (1 - gamma) * self.x[partner]], 1)
        return xb, self.y[idx]

    def __getitem__(self, i: int):
        xb, yb = self.batch(torch.tensor([int(i)], device=self.y.device))
        return xb[0], int(yb[0])

    @staticmethod
    def test_view(x: torch.Tensor) -> torch.Tensor:
        """Test images with zeros in the extra channels (the paper's unmodified test data)."""
        return torch.cat([x, torch.zeros_like(x)], 1)
