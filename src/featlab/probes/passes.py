"""Attack cost in passes: every forward pass of the attacked net counts the points it evaluates, every backward pass
through it the points whose input gradient it computes, under the label of the attack that asked (``stage``).

A pass over a padded batch counts its padding too: the card computes it. The counts are what ``--dry-run`` predicts
from a preset's radii, points and budgets (papers' attack schedules), converted to time with a measured per-pass
time on the chosen device.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch


@dataclass
class PassCounter:
    """Forward and backward point-passes per stage (an attack's name, "clean", "check", ...)."""

    event_dims: int = 3
    forward: dict[str, int] = field(default_factory=dict)
    backward: dict[str, int] = field(default_factory=dict)
    label: str = "other"

    @contextmanager
    def stage(self, label: str) -> Iterator[None]:
        before, self.label = self.label, label
        try:
            yield
        finally:
            self.label = before

    def wrap(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
        """``fn`` counted: each call adds its points to the current stage's forwards, and, when the input needs a
        gradient, its points to the backwards once the gradient flows back through it."""

        def counted(x: torch.Tensor) -> torch.Tensor:
            n = x.shape[:-self.event_dims].numel() if x.dim() > self.event_dims else 1
            label = self.label
            self.forward[label] = self.forward.get(label, 0) + n
            if x.requires_grad and torch.is_grad_enabled():
                x.register_hook(lambda g: self._backward(label, n))
            return fn(x)

        return counted

    def _backward(self, label: str, n: int) -> None:
        self.backward[label] = self.backward.get(label, 0) + n

    def merge(self, other: PassCounter) -> None:
        """Add ``other``'s counts, stage by stage."""
        for mine, theirs in ((self.forward, other.forward), (self.backward, other.backward)):
            for k, v in theirs.items():
                mine[k] = mine.get(k, 0) + v

    def total(self, label: str | None = None) -> int:
        """Forward plus backward point-passes (of one stage, or all)."""
        labels = [label] if label is not None else set(self.forward) | set(self.backward)
        return sum(self.forward.get(k, 0) + self.backward.get(k, 0) for k in labels)

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {k: {"forward": self.forward.get(k, 0), "backward": self.backward.get(k, 0)}
                for k in sorted(set(self.forward) | set(self.backward))}
