"""Minimum-norm ℓ2 attack: Decoupled Direction and Norm (DDN; Rony et al., CVPR 2019) on a signed score.

A gradient step on the margin y·s (step α_k, cosine-annealed from ``alpha`` to ``alpha_min``) fixes the direction;
the norm is a separate variable ε_k, shrunk by (1 − γ) while the current point is adversarial and grown by (1 + γ)
while it is not (capped at ``max_norm``); δ is rescaled to norm ε_k and the point clipped. The answer per point is
the smallest norm of the actual perturbation clip(x + δ) − x among the adversarial iterates — an upper bound on the
true minimum distance (∞ where none was found; 0 where x is misclassified).
"""

from __future__ import annotations

import math

import torch

from .. import meter
from .robustness import Score, _norm, correct


def ddn_l2(score: Score, x: torch.Tensor, y: torch.Tensor, *, steps: int = 100, init_norm: float = 1.0,
           gamma: float = 0.05, alpha: float | None = None, alpha_min: float = 0.01, max_norm: float | None = None,
           event_dims: int = 1, clip: tuple[float, float] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """DDN: returns ``(x_adv, dist)``; ``dist`` (batch shape) the norm of ``x_adv − x`` for the best adversarial
    point found (clipped, re-judged on ``score``), ``inf`` where none was found (then ``x_adv`` = x).

    ``alpha`` (None: ``max_norm`` if given, else 1) is the first step length in input units; ``max_norm`` caps
    the norm search. Deterministic (no random start)."""
    bshape = x.shape[:-event_dims]
    ones = (1,) * event_dims
    y = y.to(x.dtype)
    a0 = float(alpha if alpha is not None else (max_norm if max_norm is not None else 1.0))
    cap = math.inf if max_norm is None else float(max_norm)
    eps_k = torch.full(bshape, min(init_norm, cap), dtype=x.dtype, device=x.device)
    delta = torch.zeros_like(x)
    inf = torch.full(bshape, math.inf, dtype=x.dtype, device=x.device)
    with torch.no_grad():
        bad0 = ~correct(score(x).to(x.dtype), y)
    best = torch.where(bad0, torch.zeros_like(inf), inf)
    x_adv = x.clone()
    for k in meter.steps(steps):  # a few, timed, when an estimate is measured (featlab.meter)
        a_k = alpha_min + (a0 - alpha_min) * (1 + math.cos(math.pi * k / steps)) / 2
        delta.requires_grad_(True)
        xa = x + delta
        if clip is not None:
            xa = xa.clamp(*clip)
        with torch.enable_grad():
            s = score(xa).to(x.dtype)
            (g,) = torch.autograd.grad((y * s).sum(), delta)
        with torch.no_grad():
            xa, s = xa.detach(), s.detach()
            adv = ~correct(s, y)
            n = _norm(xa - x, event_dims).reshape(bshape)
            improve = adv & (n < best)
            best = torch.where(improve, n, best)
            x_adv = torch.where(improve.reshape(*bshape, *ones), xa, x_adv)
            gn = g / _norm(g, event_dims).clamp_min(1e-30)
            delta = delta.detach() - a_k * gn  # descend the margin
            eps_k = torch.where(adv, eps_k * (1 - gamma), eps_k * (1 + gamma)).clamp(max=cap)
            delta = delta * (eps_k.reshape(*bshape, *ones) / _norm(delta, event_dims).clamp_min(1e-30))
            if clip is not None:
                delta = (x + delta).clamp(*clip) - x
    with torch.no_grad():  # the last iterate
        xa = x + delta if clip is None else (x + delta).clamp(*clip)
        adv = ~correct(score(xa).to(x.dtype), y)
        n = _norm(xa - x, event_dims).reshape(bshape)
        improve = adv & (n < best)
        best = torch.where(improve, n, best)
        x_adv = torch.where(improve.reshape(*bshape, *ones), xa, x_adv)
    return x_adv, best
