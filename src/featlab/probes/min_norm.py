"""Minimum-norm ℓ2 attacks on a signed score, three families: DDN, FMN and ALMA.

Decoupled Direction and Norm (DDN; Rony et al., CVPR 2019), :func:`ddn_l2`:
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


def _track(score, x, y, xa, best, x_adv, bshape, event_dims, ones):
    """Judge the (clipped) iterate ``xa``: the running best adversarial norm and point, the success mask."""
    with torch.no_grad():
        s = score(xa).to(x.dtype)
        adv = ~correct(s, y)
        n = _norm(xa - x, event_dims).reshape(bshape)
        improve = adv & (n < best)
        return (torch.where(improve, n, best), torch.where(improve.reshape(*bshape, *ones), xa, x_adv), adv, s)


def _first(x, y, score, start, clip):
    """The starting δ (``start`` clipped into the box, else 0) and the best norm so far (0 where x is already
    misclassified, else ∞)."""
    bshape = y.shape
    with torch.no_grad():
        bad0 = ~correct(score(x).to(x.dtype), y)
    best = torch.where(bad0, 0.0, math.inf).to(dtype=x.dtype, device=x.device).expand(bshape).clone()
    if start is None:
        return torch.zeros_like(x), best
    xs = start.detach().to(x.dtype)
    return (xs.clamp(*clip) if clip is not None else xs) - x, best


def fmn_l2(score: Score, x: torch.Tensor, y: torch.Tensor, *, steps: int = 100, alpha: float = 1.0,
           alpha_min: float | None = None, gamma: float = 0.05, gamma_min: float = 0.001,
           max_norm: float | None = None, start: torch.Tensor | None = None, event_dims: int = 1,
           clip: tuple[float, float] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """FMN-ℓ2 (Pintor et al. 2021, Alg. 1) on the margin y·s: ``(x_adv, dist)`` as :func:`ddn_l2`.

    ``alpha`` (first step length, input units) anneals to ``alpha_min`` (None: alpha/100) and ``gamma`` to
    ``gamma_min`` on a cosine; ``max_norm`` caps ε (None: the pixel box's largest norm with ``clip``)."""
    bshape, ones = x.shape[:-event_dims], (1,) * event_dims
    y = y.to(x.dtype)
    a_min = alpha / 100 if alpha_min is None else alpha_min
    if max_norm is not None:
        cap = torch.full(bshape, float(max_norm), dtype=x.dtype, device=x.device)
    elif clip is not None:
        cap = _norm(torch.maximum(x - clip[0], clip[1] - x), event_dims).reshape(bshape)
    else:
        cap = torch.full(bshape, math.inf, dtype=x.dtype, device=x.device)
    delta, best = _first(x, y, score, start, clip)
    x_adv = x.clone()
    eps = torch.full(bshape, math.inf, dtype=x.dtype, device=x.device)
    found = torch.zeros(bshape, dtype=torch.bool, device=x.device)
    for k in meter.steps(steps):  # a few, timed, when an estimate is measured (featlab.meter)
        c = (1 + math.cos(math.pi * k / steps)) / 2  # the cosine annealing of α and γ
        a_k, g_k = a_min + (alpha - a_min) * c, gamma_min + (gamma - gamma_min) * c
        delta.requires_grad_(True)
        with torch.enable_grad():
            s = score(x + delta).to(x.dtype)
            (g,) = torch.autograd.grad((y * s).sum(), delta)
        with torch.no_grad():
            delta, s = delta.detach(), s.detach()
            m, adv = y * s, ~correct(s, y)
            n = _norm(delta, event_dims).reshape(bshape)
            improve = adv & (n < best)
            best = torch.where(improve, n, best)
            x_adv = torch.where(improve.reshape(*bshape, *ones), x + delta, x_adv)
            found |= adv
            gn = _norm(g, event_dims)
            to_boundary = m.abs() / gn.reshape(bshape).clamp_min(1e-12)  # linearised distance to the boundary
            eps = torch.where(adv, torch.minimum(eps * (1 - g_k), best),
                              torch.where(found, eps * (1 + g_k), n + to_boundary))
            eps = torch.minimum(eps, cap)
            delta = delta - a_k * g / gn.clamp_min(1e-12)  # descend the margin
            delta = delta * (eps.reshape(*bshape, *ones) / _norm(delta, event_dims).clamp_min(1e-30)).clamp(max=1)
            if clip is not None:
                delta = (x + delta).clamp(*clip) - x
    best, x_adv, _, _ = _track(score, x, y, x + delta, best, x_adv, bshape, event_dims, ones)  # the last iterate
    return x_adv, best


def _p2(c: torch.Tensor, rho: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """The penalty–Lagrangian P2 (Birgin et al. 2005; ALMA's choice): μc + μρc² + ρ²c³/6 for c ≥ 0, μc/(1 − ρc)
    below."""
    return torch.where(c >= 0, mu * c + mu * rho * c ** 2 + rho ** 2 * c ** 3 / 6,
                       mu * c / (1 - rho * c.clamp(max=0)))


def _p2_grad(c: torch.Tensor, rho: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """dP2/dc: the multiplier's next value (μ + 2μρc + ρ²c²/2 for c ≥ 0, μ/(1 − ρc)² below)."""
    return torch.where(c >= 0, mu + 2 * mu * rho * c + rho ** 2 * c ** 2 / 2, mu / (1 - rho * c.clamp(max=0)) ** 2)


def alma_l2(score: Score, x: torch.Tensor, y: torch.Tensor, *, steps: int = 100, init_dist: float = 0.1,
            lr_decay: float = 0.01, mu: float = 1.0, rho: float = 1.0, check: int = 10, tau: float = 0.95,
            gamma: float = 1.2, beta: float = 0.9, tol: float = 1e-4, start: torch.Tensor | None = None,
            event_dims: int = 1, clip: tuple[float, float] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """ALMA-ℓ2 (Rony et al. 2021, Alg. 1) on the margin y·s: ``(x_adv, dist)`` as :func:`ddn_l2`.

    The constraint c = y·s/|y·s(x)| + ``tol`` (< 0: adversarial past the tolerance); ``init_dist`` the first
    step's length (ALMA's ε), ``lr_decay`` the learning rate's factor from a point's first success to the last
    step; ``mu``/``rho`` the multiplier's and penalty's first values, ρ ×``gamma`` every ``check`` steps unless
    c < ``tau``·c then; ``beta`` the moving averages' weight (μ, RMSProp, momentum)."""
    bshape, ones = x.shape[:-event_dims], (1,) * event_dims
    y = y.to(x.dtype)
    delta, best = _first(x, y, score, start, clip)
    with torch.no_grad():
        m0 = (y * score(x).to(x.dtype)).abs().clamp_min(1e-12)
    x_adv = x.clone()
    mu_t = torch.full(bshape, mu, dtype=x.dtype, device=x.device)
    rho_t = torch.full(bshape, rho, dtype=x.dtype, device=x.device)
    sq, mom = torch.ones_like(x), torch.zeros_like(x)
    found = torch.zeros(bshape, dtype=torch.bool, device=x.device)
    k_found = torch.full(bshape, float(steps), dtype=x.dtype, device=x.device)
    lr = c_prev = None
    for k in meter.steps(steps):  # a few, timed, when an estimate is measured (featlab.meter)
        delta.requires_grad_(True)
        with torch.enable_grad():
            s = score(x + delta).to(x.dtype)
            c = y * s / m0 + tol
            dist = (delta.flatten(-event_dims).pow(2).sum(-1) + 1e-24).sqrt().reshape(bshape)
            loss = _p2(c, rho_t, mu_t) + (dist if k else 0)
            (g,) = torch.autograd.grad(loss.sum(), delta)
        with torch.no_grad():
            delta, c, dist = delta.detach(), c.detach(), dist.detach()
            adv = ~correct(s.detach(), y)
            improve = adv & (dist < best)
            best = torch.where(improve, dist, best)
            x_adv = torch.where(improve.reshape(*bshape, *ones), x + delta, x_adv)
            k_found = torch.where(adv & ~found, float(k), k_found)
            found |= adv
            if c_prev is None:
                c_prev = c
            elif (k + 1) % check == 0:  # ρ grows where the constraint stalled (and nothing was found)
                rho_t = torch.where(found | (c < tau * c_prev), rho_t, gamma * rho_t)
                c_prev = c
            if k:
                mu_t = (beta * mu_t + (1 - beta) * _p2_grad(c, rho_t, mu_t)).clamp(1e-6, 1e12)
            sq = beta * sq + (1 - beta) * g * g
            mom = beta * mom + g / (sq.sqrt() + 1e-8)
            if lr is None:  # the first step has length init_dist
                lr = init_dist / _norm(mom, event_dims).reshape(bshape).clamp_min(1e-12)
            decay = lr_decay ** ((k - k_found).clamp(min=0) / (steps - k_found).clamp(min=1))
            delta = delta - (lr * decay).reshape(*bshape, *ones) * mom
            if clip is not None:
                delta = (x + delta).clamp(*clip) - x
    best, x_adv, _, _ = _track(score, x, y, x + delta, best, x_adv, bshape, event_dims, ones)  # the last iterate
    return x_adv, best
