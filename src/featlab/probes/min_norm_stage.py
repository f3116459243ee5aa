"""The ensemble's minimum-norm stage (probes/ensemble.py, probes/schedule.py): each minimum-norm attack (DDN, FMN,
ALMA: probes/min_norm.py) over its starts and the point chunks, its best point per point re-verified on the net with
the ensemble's acceptance rule (:func:`_verify`: a fresh forward pass misclassifies it, it lies in the pixel box,
and its actual perturbation is within the radius).
"""

from __future__ import annotations

import math

import torch

from .budget import AttackBudget
from .min_norm import alma_l2, ddn_l2, fmn_l2
from .robustness import Score, _norm, correct, random_in_ball


def _verify(f: Score, x: torch.Tensor, x_adv: torch.Tensor, y: torch.Tensor, r: float | torch.Tensor,
            event_dims: int, clip) -> torch.Tensor:
    """Fresh forward pass misclassifies x_adv, ‖x_adv − x‖ ≤ r (float slack 1e-5 relative) and x_adv in the box."""
    with torch.no_grad():
        ok = ~correct(f(x_adv).to(x.dtype), y)
        n = _norm(x_adv - x, event_dims).reshape(ok.shape)
        ok &= n <= r * (1 + 1e-5) + 1e-12
        if clip is not None:
            inside = ((x_adv >= clip[0]) & (x_adv <= clip[1])).flatten(-event_dims).all(-1)
            ok &= inside
    return ok


def _min_norm_run(name: str, f, x, y, budget: AttackBudget, r_max: float, event_dims: int, clip, start):
    """One start of a minimum-norm attack on a chunk: (x_adv, dist). DDN (deterministic) ignores ``start``."""
    kw = dict(event_dims=event_dims, clip=clip)
    if name == "ddn":
        return ddn_l2(f, x, y, steps=budget.ddn_steps, max_norm=r_max, alpha=r_max, init_norm=r_max / 2, **kw)
    if name == "fmn":  # FMN's α_init = 1 on [0, 1] images (Pintor et al.): here the grid's largest radius
        return fmn_l2(f, x, y, steps=budget.fmn_steps, alpha=r_max, max_norm=2 * r_max, start=start, **kw)
    # ALMA's ε (the first step's length): a fifth of the grid's largest radius [our choice; measured on the tests'
    # tiny net, it converges fastest between a tenth and a half]
    return alma_l2(f, x, y, steps=budget.alma_steps, init_dist=r_max / 5, start=start, **kw)


def _min_norm(name: str, f, xr, yr, clean, chunks, budget: AttackBudget, r_max: float, event_dims: int, clip,
              generator) -> tuple[torch.Tensor, int, torch.Tensor]:
    """A minimum-norm attack's verified distance per point (inf: none found; 0 where misclassified at x), the best
    over its starts (FMN, ALMA: ``budget.min_norm_starts``, the first from x, the others from a random point of
    the ball of radius r_max/2; DDN: one), the count of its points that failed re-verification, and its closest
    adversarial points (x where none)."""
    starts = 1 if name == "ddn" else budget.min_norm_starts
    x_adv, dist = xr.clone(), torch.full(yr.shape, math.inf, dtype=xr.dtype, device=xr.device)
    for i in range(starts):
        half = torch.tensor(r_max / 2, dtype=xr.dtype, device=xr.device)
        st = None if i == 0 else xr + random_in_ball(xr.shape, half, event_dims, generator, xr.dtype)
        runs = [_min_norm_run(name, f, xr[:, c], yr[:, c], budget, r_max, event_dims, clip,
                              None if st is None else st[:, c]) for c in chunks]
        xa, d = torch.cat([a for a, _ in runs], 1), torch.cat([d for _, d in runs], 1)
        better = d < dist
        dist = torch.where(better, d, dist)
        x_adv = torch.where(better.reshape(*better.shape, *(1,) * event_dims), xa, x_adv)
    return _verified_distance(f, xr, yr, clean, chunks, x_adv, dist, event_dims, clip)


def _verified_distance(f, xr, yr, clean, chunks, x_adv, dist, event_dims: int,
                       clip) -> tuple[torch.Tensor, int, torch.Tensor]:
    """Re-verify each point's adversarial point (fresh forward pass, in the box): (distance, unverified count,
    closest points), inf / x where it failed, 0 where x is misclassified."""
    ok = torch.cat([_verify(f, xr[:, c], x_adv[:, c], yr[:, c], math.inf, event_dims, clip) for c in chunks], 1)
    found = clean & torch.isfinite(dist)
    keep = (found & ok).reshape(*ok.shape, *(1,) * event_dims)
    return (torch.where(found & ok, dist, torch.where(clean, math.inf, 0.0)), int((found & ~ok).sum()),
            torch.where(keep, x_adv, xr))
