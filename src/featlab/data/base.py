"""What every distribution returns: a batch of inputs and labels with a leading replica axis, plus the
ground-truth quantities the theory needs (cluster index, clean label, noise flag, ...)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class Batch:
    """``x``: (E, n, *input_shape); ``y``: (E, n) observed labels; ``info``: other (E, n, ...) tensors."""

    x: torch.Tensor
    y: torch.Tensor
    info: dict[str, torch.Tensor] = field(default_factory=dict)

    def __getattr__(self, name: str) -> torch.Tensor:
        info = self.__dict__.get("info", {})
        if name in info:
            return info[name]
        raise AttributeError(name)

    @property
    def n(self) -> int:
        return self.y.shape[1]

    def to(self, device=None, dtype=None) -> "Batch":
        return Batch(
            self.x.to(device=device, dtype=dtype),
            self.y.to(device=device),
            {k: v.to(device=device) for k, v in self.info.items()},
        )

    def replica(self, i: int) -> "Batch":
        """The batch of replica i, keeping a replica axis of length 1."""
        return Batch(self.x[i : i + 1], self.y[i : i + 1], {k: v[i : i + 1] for k, v in self.info.items()})
