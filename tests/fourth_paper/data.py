"""The planted paper's data law: x = y·μ + ξ, μ = mean·e_1, ξ ~ N(0, I_d), y uniform on ±1 (the Distribution
protocol of featlab.data.base)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from featlab.data.base import Batch
from featlab.utils import generator


@dataclass
class TwoClusters:
    d: int
    mean: float = 2.0
    E: int = field(default=1, kw_only=True)

    @classmethod
    def create(cls, seeds: list[int], d: int, mean: float = 2.0) -> TwoClusters:
        return cls(d, mean, E=len(seeds))

    def sample(self, n: int, seeds: list[int], role: str = "train", device=None) -> Batch:
        """One stream per (seed, role), drawn on the host, then moved to ``device``."""
        xs, ys = [], []
        for s in seeds:
            g = generator(s, role)
            y = torch.randint(2, (n,), generator=g, device="cpu") * 2.0 - 1
            x = torch.randn(n, self.d, generator=g, device="cpu")
            x[:, 0] += self.mean * y
            xs.append(x)
            ys.append(y)
        return Batch(torch.stack(xs), torch.stack(ys)).to(device)


# the common checks build each data class of a paper from here (a few replicas, tiny sizes)
EXAMPLES = {"TwoClusters": lambda seeds: TwoClusters.create(seeds, 6)}
