"""Minimum-norm first for nets that read the input through one linear layer: DDN run exactly in span(W), then a
fixed-radius PGD at each point's own boundary, warm-started from the closest adversarial point found.

1. :func:`subspace_ddn` — DDN (Rony et al., CVPR 2019) with FMN's annealed norm factor (Pintor et al., NeurIPS 2021)
   in the coordinates of :mod:`.subspace`: from δ = 0 every iterate stays in span(W), so a step costs O(K·M).
2. :func:`min_norm_distance` — the smallest confirmed distance over several DDN runs: first norms ½ and 1 × the
   point's linearised distance (a start inside the boundary and one at it find different local minima), the
   softplus surrogate's margin (masking), and random-direction restarts.
3. :func:`boundary_refine` — at the largest grid radius below a point's distance, PGD started from the closest
   adversarial point scaled into that ball: a success lowers the distance to that radius or below.

The robust-accuracy masks are then ``dist > r``: monotone in r by construction, each point's break attributed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from .. import meter
from .subspace import Head, LinearHead, _correct, _from_coords, _score_points, subspace, subspace_pgd
from .survivors import survivor_masks, within

INIT_SCALES = (0.5, 1.0)  # first norms, in units of each point's linearised distance

@torch.no_grad()
def subspace_ddn(score: Head, lin: LinearHead, x: torch.Tensor, y: torch.Tensor, *, steps: int = 200,
                 gamma: float = 0.05, gamma_min: float = 0.001, alpha_min: float = 0.01, init_scale: float = 1.0,
                 grad_head: Head | None = None, generators: Sequence[torch.Generator] | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """DDN (:func:`~.min_norm.ddn_l2`; Rony et al. 2019) for s(x) = head(x Wᵀ + b), run exactly in span(W): from
    δ = 0 every iterate (a gradient step, then a rescale) stays there, so a step costs O(K·M) per point.

    Scale-free: each point's first norm ε_0 and first step α_0 are ``init_scale`` × its linearised distance
    |s|/‖∇s‖; the step is cosine-annealed to ``alpha_min``·α_0 and the norm's factor γ from ``gamma`` to
    ``gamma_min`` (as FMN anneals it, Pintor et al. 2021), so the late iterates bracket the boundary finely.
    ``grad_head`` (default ``lin.head``): the margin descended; success is judged on ``lin.head`` and confirmed on
    the dense ``score`` at x + Q c. ``generators`` (one per replica): a random restart, whose first iterate is ε_0
    along a uniform direction of span(W) (None: from δ = 0). Returns (dist (E, n) float64: the norm of the closest
    confirmed adversarial perturbation, 0 where x is misclassified, ∞ where none was found; c (E, n, K): its
    coordinates)."""
    sub = subspace(lin, x)
    z0, Q, R = sub
    E, n, _ = z0.shape
    yd, Rt = y.to(z0.dtype), R.transpose(1, 2)
    ascend = lin.head if grad_head is None else grad_head
    c = torch.zeros(E, n, R.shape[1], dtype=z0.dtype, device=z0.device)
    best = torch.full((E, n), math.inf, dtype=torch.float64, device=z0.device)
    c_best = torch.zeros_like(c)
    eps: torch.Tensor | None = None
    a0 = torch.ones(())
    for k in meter.steps(steps + 1):  # a few, timed, when an estimate is measured (featlab.meter)
        z = (z0 + torch.bmm(c, R)).requires_grad_(True)
        with torch.enable_grad():
            out = ascend(z)
            (g,) = torch.autograd.grad((yd * out).sum(), z)
        judged = out.detach() if grad_head is None else lin.head(z.detach())
        adv = ~_correct(judged, yd)
        norm = c.norm(dim=-1)
        better = adv & (norm.double() < best)
        best = torch.where(better, norm.double(), best)
        c_best[better] = c[better]
        if k == steps:
            break
        cg = torch.bmm(g, Rt)
        gn = cg.norm(dim=-1).clamp_min(1e-30)
        if eps is None:  # the linearised distance |y·s|/‖∇s‖ sets the scale
            a0 = ((yd * out.detach()).abs() / gn).clamp_min(1e-12) * init_scale
            eps = a0.clone()
            if generators is not None:
                c = torch.stack([torch.randn(c.shape[1:], generator=g_, dtype=torch.float64, device="cpu")
                                 for g_ in generators]).to(c)
                c = c * (eps / c.norm(dim=-1).clamp_min(1e-30))[..., None]
                continue
        a_k = a0 * (alpha_min + (1 - alpha_min) * (1 + math.cos(math.pi * k / steps)) / 2)
        c = c - (a_k / gn)[..., None] * cg
        g_k = gamma_min + (gamma - gamma_min) * (1 + math.cos(math.pi * k / steps)) / 2
        eps = torch.where(adv, eps * (1 - g_k), eps * (1 + g_k))
        c = c * (eps / c.norm(dim=-1).clamp_min(1e-30))[..., None]
    found = torch.isfinite(best) & (best > 0)
    if found.any():  # confirm on the dense score; the distance is the dense perturbation's norm
        e, i = found.nonzero(as_tuple=True)
        delta = _from_coords(Q, c_best, e, i)
        ok = ~_correct(_score_points(score, x[e, i] + delta, e, E).to(x.dtype), yd[e, i])
        best[e, i] = torch.where(ok, delta.norm(dim=-1).double(), math.inf)
    return best, c_best


def min_norm_distance(score: Head, lin: LinearHead, x: torch.Tensor, y: torch.Tensor, *, steps: int,
                      restarts: int, generators: Sequence[torch.Generator],
                      surrogate_head: Head | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The closest confirmed adversarial point over the DDN runs of the module docstring (item 2): (dist (E, n)
    float64, c (E, n, K)). ``generators``: one per replica, for the ``restarts`` random-direction runs."""
    runs: list[dict] = [dict(init_scale=s) for s in INIT_SCALES]
    if surrogate_head is not None:
        runs.append(dict(init_scale=INIT_SCALES[0], grad_head=surrogate_head))
    runs += [dict(init_scale=INIT_SCALES[0], generators=generators)] * restarts  # each draws on, so they differ
    best, c_best = subspace_ddn(score, lin, x, y, steps=steps, **runs[0])
    for kw in runs[1:]:
        d, c = subspace_ddn(score, lin, x, y, steps=steps, **kw)
        better = d < best
        best = torch.where(better, d, best)
        c_best[better] = c[better]
    return best, c_best


@torch.no_grad()
def boundary_refine(score: Head, lin: LinearHead, x: torch.Tensor, y: torch.Tensor, radii: list[float],
                    dist: torch.Tensor, c: torch.Tensor, *, steps: int, step_size_factor: float) -> torch.Tensor:
    """Item 3 of the module docstring: the distances (E, n) lowered where PGD at the largest grid radius below a
    point's distance, started from its closest adversarial point scaled into that ball (step
    ``step_size_factor``·r/``steps``), finds an adversarial point confirmed on the dense score."""
    grid = torch.tensor(sorted(set(float(r) for r in radii)), dtype=torch.float64, device=dist.device)
    below = torch.searchsorted(grid, dist.clamp(max=torch.finfo(torch.float64).max), right=False) - 1
    sub = subspace(lin, x)
    yd, out = y.to(x.dtype), dist.clone()
    norm = c.norm(dim=-1, keepdim=True).clamp_min(1e-30)
    for q in range(len(grid)):
        todo = (below == q) & torch.isfinite(dist) & (dist > 0)
        r = float(grid[q])
        if r <= 0 or not todo.any():
            continue
        fooled, c_hit = subspace_pgd(sub, yd, r, steps=steps, step_size=step_size_factor * r / steps,
                                     head=lin.head, c0=c * (r / norm) * (1 - 1e-9), todo=todo)
        if fooled.any():
            e, i = fooled.nonzero(as_tuple=True)
            delta = _from_coords(sub.Q, c_hit, e, i)
            ok = ~_correct(_score_points(score, x[e, i] + delta, e, x.shape[0]).to(x.dtype), yd[e, i])
            out[e[ok], i[ok]] = torch.minimum(out[e[ok], i[ok]], torch.minimum(  # in the ball of r: broken at r
                delta[ok].norm(dim=-1).double(), torch.full_like(delta[ok, 0], r, dtype=torch.float64)))
    return out


def min_norm_masks(score: Head, lin: LinearHead, x: torch.Tensor, y: torch.Tensor, radii: list[float], *,
                   steps: int, restarts: int, generators: Sequence[torch.Generator], surrogate_head: Head | None,
                   pgd_steps: int, step_size_factor: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Robust masks (R, E, n) (robust at r iff the best-known distance exceeds r) and those distances (E, n)."""
    dist, c = min_norm_distance(score, lin, x, y, steps=steps, restarts=restarts, generators=generators,
                                surrogate_head=surrogate_head)
    dist = boundary_refine(score, lin, x, y, radii, dist, c, steps=pgd_steps, step_size_factor=step_size_factor)
    return survivor_masks(radii, dist > 0, within(dist))[0], dist  # dist > r at every r (0 where misclassified)
