"""Minimum-norm first: the robust-accuracy curve over a radius grid at the cost of a few attacks per point.

1. The minimum-norm stage: DDN, FMN and ALMA (probes/min_norm.py; those the budget names, FMN and ALMA from
   ``min_norm_starts`` starts), each once per point, every adversarial point re-verified on the net: the smallest
   distance d_i, i.e. a first whole curve (robust at r iff d_i > r). Three families, because one family's blind
   spots are not another's: DDN alone left points that FMN and ALMA break well below its distance.
2. The fixed-radius attacks in the budget's order (margin PGD, APGD-CE, APGD-T, then Square: AutoAttack's order)
   on what DDN left, each descending the grid from the point's break radius so far (the largest grid radius below
   d_i, for the first) and stopping at its first failure (``robust_masks_ensemble(..., start=, frontier=True)``): a
   point is attacked around its own boundary, not at every radius, and Square runs only where every gradient
   attack left the point robust at its boundary radius. A success at r holds at every larger radius (the same
   adversarial point); a failure at r is taken to hold below r, whose ball lies inside r's. (Warm starts of APGD
   from DDN's closest adversarial point, ``EnsembleResult.closest``, were tried on fa-resnet-digits quick and made
   the curve no stronger: APGD's first step, 2ε, leaves the start behind; random starts are kept.)

The curve (the worst case per point) is monotone, every point keeps its attribution, and every attack counts its
forward and backward passes (probes/passes.py). Margin PGD's curve is no longer PGD alone here (it is where the
former schedule runs it first, over every radius). The full ensemble over every radius (``robust_masks_ensemble``
with ``frontier=False``) is the reference it is tested against.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from .budget import MIN_NORM, AttackBudget
from .ensemble import EnsembleResult, _verify, robust_masks_ensemble
from .robustness import pgd_l2


def min_norm_first(score, x: torch.Tensor, y: torch.Tensor, radii: list[float], *, budget: AttackBudget,
                   logits=None, positive=None, event_dims: int = 3, clip=(0.0, 1.0),
                   generator: torch.Generator | None = None, batch_size: int | None = None,
                   boundary_steps: int = 0, boundary_step: float = 0.05) -> EnsembleResult:
    """The schedule of the module docstring on x (n, *event) / y (n,) in ±1 (``score``, ``logits``, ``positive``
    as for :func:`~featlab.probes.ensemble.robust_masks_ensemble`). ``budget.attacks`` must include a minimum-norm
    attack (``MIN_NORM``); those run first, the others after them in the budget's order, their masks cumulative
    (each the worst case up to it)."""
    first = tuple(a for a in budget.attacks if a in MIN_NORM)
    if not first:
        raise ValueError(f"the minimum-norm-first schedule needs 'ddn' or another minimum-norm attack "
                         f"{list(MIN_NORM)} among the budget's attacks; got {list(budget.attacks)!r}")
    kw = dict(logits=logits, positive=positive, event_dims=event_dims, clip=clip, batch_size=batch_size)
    head = robust_masks_ensemble(score, x, y, radii, budget=replace(budget, attacks=first, large_radius=0),
                                 generator=generator, cascade=True, **kw)
    if boundary_steps:
        head = _boundary(score, x, y, radii, head, boundary_steps, boundary_step, event_dims, clip)
    rest = tuple(a for a in budget.attacks if a not in MIN_NORM)
    if not rest:
        return replace(head, cascade=True)
    tail = robust_masks_ensemble(score, x, y, radii, budget=replace(budget, attacks=rest), start=head.worst,
                                 frontier=True, generator=generator, clean=head.clean, **kw)
    head.passes.merge(tail.passes)
    return replace(tail, masks={**head.masks, **tail.masks}, break_radius={**head.break_radius, **tail.break_radius},
                   unverified={**head.unverified, **tail.unverified}, distance=head.distance,
                   zero_grad=head.zero_grad, passes=head.passes, cascade=True)


def _boundary(score, x, y, radii, head: EnsembleResult, steps: int, step: float, event_dims: int,
              clip) -> EnsembleResult:
    """1b. Margin PGD at the grid radius r just below each point's minimum-norm distance d, started from the closest
    adversarial point found, scaled into that ball (δ·r/d), ``steps`` steps of ``step``·r: a point the minimum-norm
    attacks' last iterates stepped over is caught at its own boundary. A verified success lowers the point's
    distance to its norm."""
    dist, closest = head.distance, head.closest
    if dist is None or closest is None or steps <= 0:
        return head
    if y.dim() != 1:
        raise ValueError("min_norm_first: the boundary stage takes one batch of points, y of shape (n,); got "
                         f"{tuple(y.shape)} (set boundary_steps=0 for replica-batched inputs)")
    grid = torch.tensor(sorted({float(r) for r in radii if r > 0}), dtype=torch.float64, device=dist.device)
    if not len(grid):
        return head
    ev = x.shape[x.dim() - event_dims:]
    xf, yf, df = x.reshape(-1, *ev), y.reshape(-1), dist.reshape(-1)
    j = torch.searchsorted(grid, df.clamp(max=float(grid[-1]) * 2), right=False) - 1  # largest r < d
    todo = torch.isfinite(df) & (df > 0) & (j >= 0)
    if not todo.any():
        return head
    idx = todo.nonzero().squeeze(1)
    r = grid[j[idx]].to(x.dtype)
    shape = (-1, *(1,) * event_dims)
    d0 = (closest.reshape(-1, *ev)[idx] - xf[idx]) * (r / df[idx].to(x.dtype)).reshape(shape) * (1 - 1e-6)
    f = head.passes.wrap(score)
    with head.passes.stage("boundary"):
        xa, fooled = pgd_l2(f, xf[idx], yf[idx], r, steps=steps, step_size=step * r, event_dims=event_dims,
                            clip=clip, start=d0)
        ok = fooled & _verify(f, xf[idx], xa, yf[idx], r, event_dims, clip)  # also checks ‖xa − x‖ ≤ r
    new = df.clone()  # a verified success is adversarial within r (the ensemble's 1e-5 slack): broken at r
    new[idx[ok]] = torch.minimum(df[idx[ok]], grid[j[idx[ok]]].to(df.dtype))
    new = new.reshape(dist.shape)
    brk = torch.full(df.shape, float("inf"), dtype=torch.float64, device=df.device)
    brk[idx[ok]] = grid[j[idx[ok]]]  # float64 grid values: compared with the float64 radii, no rounding
    brk = brk.reshape(dist.shape)
    rr = torch.as_tensor(radii, dtype=torch.float64, device=dist.device).reshape(-1, *(1,) * dist.dim())
    worst = head.worst & ~(brk[None] <= rr)
    return replace(head, worst=worst, masks={**head.masks, "boundary": worst}, distance=new,
                   break_radius={**head.break_radius, "boundary": brk})
