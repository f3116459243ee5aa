"""Robust accuracy of an image classifier vs ℓ2 radius (Feature Averaging Fig 3 middle/right).

The read-out that is scored is the one attacked: ``score(x) -> (N,)`` whose sign is the binary prediction
(the 2-logit margin f_+ − f_− for the 2-class model, G = logsumexp_{J+} − logsumexp_{J−} for the 10-class model,
whose sign is that of F^binary). PGD is :func:`featlab.probes.robustness.pgd_l2` with ``event_dims=3`` and pixel
clipping to [0, 1]; radii are attacked in increasing order on the images still robust at the previous radius (an
adversarial example within r is one within every r' ≥ r), which makes the curve monotone.
"""

from __future__ import annotations

from typing import Callable

import torch

from ..errors import ConfigError
from .robustness import correct, pgd_l2

Score = Callable[[torch.Tensor], torch.Tensor]


def check_radii(radii, field: str = "radii") -> list[float]:
    radii = [float(r) for r in radii]
    if not radii or any(r < 0 for r in radii):
        bad = next((r for r in radii if r < 0), None)
        raise ConfigError(f"the {field!r} field must be a non-empty list of radii >= 0; got {bad!r}"
                          f"{' in it' if bad is not None else ' (empty)'}; e.g. {field}=[0,0.5,1]")
    return radii


def robust_accuracy_images(score: Score, x: torch.Tensor, y: torch.Tensor, radii: list[float], *, steps: int = 20,
                           step_size_factor: float = 2.5, random_start: bool = True, restarts: int = 1,
                           batch_size: int = 500, clip: tuple[float, float] | None = (0.0, 1.0),
                           generator: torch.Generator | None = None, device=None, progress=None) -> torch.Tensor:
    """Robust accuracy (R,) of images x (N, C, H, W) with labels y ∈ {−1, +1} (N,) at each radius."""
    radii = check_radii(radii)
    device = device or x.device
    alive = torch.zeros(len(x), dtype=torch.bool)
    with torch.no_grad():
        for i in range(0, len(x), batch_size):
            xb = x[i: i + batch_size].to(device)
            alive[i: i + batch_size] = correct(score(xb).float(), y[i: i + batch_size].to(device).float()).cpu()
    acc = {}
    for r in sorted(set(radii)):
        if r > 0 and alive.any():
            idx = alive.nonzero().flatten()
            for i in range(0, len(idx), batch_size):
                j = idx[i: i + batch_size]
                xb, yb = x[j].to(device), y[j].to(device).float()
                _, fooled = _pgd(score, xb, yb, r, steps, step_size_factor, random_start, restarts, clip, generator)
                alive[j[fooled.cpu()]] = False
        acc[r] = alive.double().mean().item()
        if progress is not None:
            progress.update(1)
    return torch.tensor([acc[r] for r in radii], dtype=torch.float64)


def _pgd(score, xb, yb, r, steps, factor, random_start, restarts, clip, generator):
    with torch.enable_grad():
        return pgd_l2(lambda z: score(z).float(), xb, yb, r, steps=steps, step_size=factor * r / steps,
                      random_start=random_start, restarts=restarts, event_dims=3, clip=clip, generator=generator)
