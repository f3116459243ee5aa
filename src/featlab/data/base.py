"""What every distribution returns: a batch of inputs and labels with a leading replica axis, plus the
ground-truth quantities the theory needs (cluster index, clean label, noise flag, ...); and what a paper's
distribution promises (:class:`Distribution`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

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

    def to(self, device=None, dtype=None) -> Batch:
        return Batch(
            self.x.to(device=device, dtype=dtype),
            self.y.to(device=device),
            {k: v.to(device=device) for k, v in self.info.items()},
        )


@runtime_checkable
class Distribution(Protocol):
    """A paper's data law for E replicas (DESIGN §3 "Distribution"); each paper's data class follows it.

    * ``create(seeds, *params, **options)``: builds one distribution per replica: replica i's own parameters
      (cluster centres, means, ...) come from a generator keyed by ``seeds[i]``; ``params`` are the paper's
      (k, d, σ, η, ...). A law without per-replica parameters just records E = len(seeds).
    * ``sample(n, seeds, role="train") -> Batch``: n points per replica, x (E, n, ..., d), y (E, n) and the
      theory's ground truth in ``info``. ``len(seeds) == E``; replica i draws from its own generator keyed by
      (seeds[i], role), so "train", "test", ... are independent streams and a replica's points do not depend
      on the other replicas. A class may take more keywords (dtype, labels, device).
    * ``E``: the number of replicas; ``d``: the input dimension, the last axis of ``x``.
    """

    @classmethod
    def create(cls, seeds: list[int], *params: Any, **options: Any) -> Distribution: ...

    def sample(self, n: int, seeds: list[int], role: str = "train") -> Batch: ...

    @property
    def E(self) -> int: ...

    @property
    def d(self) -> int: ...
