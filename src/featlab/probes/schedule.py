"""Minimum-norm first: the robust-accuracy curve over a radius grid at the cost of a few attacks per point.

1. DDN (a minimum-norm attack) once per point: a distance d_i, i.e. a first whole curve (robust at r iff d_i > r).
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

from .ensemble import AttackBudget, EnsembleResult, robust_masks_ensemble


def min_norm_first(score, x: torch.Tensor, y: torch.Tensor, radii: list[float], *, budget: AttackBudget,
                   logits=None, positive=None, event_dims: int = 3, clip=(0.0, 1.0),
                   generator: torch.Generator | None = None, batch_size: int | None = None) -> EnsembleResult:
    """The schedule of the module docstring on x (n, *event) / y (n,) in ±1 (``score``, ``logits``, ``positive``
    as for :func:`~featlab.probes.ensemble.robust_masks_ensemble`). ``budget.attacks`` must include "ddn"; the
    others run after it in the budget's order, their masks cumulative (each the worst case up to it)."""
    if "ddn" not in budget.attacks:
        raise ValueError(f"the minimum-norm-first schedule needs 'ddn' among the budget's attacks; got "
                         f"{list(budget.attacks)!r}")
    kw = dict(logits=logits, positive=positive, event_dims=event_dims, clip=clip, batch_size=batch_size)
    head = robust_masks_ensemble(score, x, y, radii, budget=replace(budget, attacks=("ddn",), large_radius=0),
                                 generator=generator, **kw)
    rest = tuple(a for a in budget.attacks if a != "ddn")
    if not rest:
        return replace(head, cascade=True)
    tail = robust_masks_ensemble(score, x, y, radii, budget=replace(budget, attacks=rest), start=head.worst,
                                 frontier=True, generator=generator, clean=head.clean, **kw)
    head.passes.merge(tail.passes)
    return replace(tail, masks={**head.masks, **tail.masks}, break_radius={**head.break_radius, **tail.break_radius},
                   unverified={**head.unverified, **tail.unverified}, distance=head.distance,
                   zero_grad=head.zero_grad, passes=head.passes, cascade=True)
