"""ℓ2 robustness: batched PGD on any differentiable score, fixed-direction attacks, robust-accuracy curves.

Works for replica-batched synthetic inputs (E, n, d) and for image batches (N, C, H, W) alike: the last
``event_dims`` axes are one example; every leading axis is a batch axis.
"""

from __future__ import annotations

from typing import Callable

import torch

from ..nn.twolayer import sign_prediction

Score = Callable[[torch.Tensor], torch.Tensor]


def _norm(t: torch.Tensor, event_dims: int) -> torch.Tensor:
    return t.flatten(-event_dims).norm(dim=-1).reshape(*t.shape[:-event_dims], *([1] * event_dims))


def correct(score: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """sgn(score) == y with sgn(0) = −1."""
    return sign_prediction(score) == y.to(score.dtype)


def random_in_ball(shape, eps: torch.Tensor, event_dims: int, generator: torch.Generator | None, dtype) -> torch.Tensor:
    """Uniform in the ℓ2 ball of radius eps (eps broadcast over the batch axes)."""
    g = torch.randn(shape, generator=generator, dtype=dtype)
    D = 1
    for s in shape[-event_dims:]:
        D *= s
    u = torch.rand(shape[:-event_dims], generator=generator, dtype=dtype).pow(1.0 / D)
    u = u.reshape(*u.shape, *([1] * event_dims))
    return (g / _norm(g, event_dims) * u).to(eps.device) * eps  # drawn on CPU (seeded), used where eps lives


def pgd_l2(score: Score, x: torch.Tensor, y: torch.Tensor, eps: float | torch.Tensor, *, steps: int = 50,
           step_size: float | torch.Tensor | None = None, random_start: bool = True, restarts: int = 1,
           event_dims: int = 1, clip: tuple[float, float] | None = None,
           generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """ℓ2 PGD (Madry et al.) minimising the margin y·score(x + δ) over ‖δ‖ ≤ eps.

    ``score`` maps inputs to one real number per example whose sign is the prediction; for a k-class model pass
    the read-out that is scored (e.g. :func:`~featlab.nn.logit_margin_readout`), not its cross-entropy.
    ``eps`` is a scalar or a tensor over the batch axes (one radius per example). ``step_size`` defaults to
    2.5·eps/steps. Returns ``(x_adv, fooled)``: ``fooled`` is True for examples misclassified at x or at any
    iterate of any restart; ``x_adv`` holds, for an example first fooled at an iterate, that iterate (the first
    one that fooled it, after clipping: it lies in the ball, a valid adversarial example), and x itself for
    every other example: those never fooled and those already misclassified at x.
    """
    batch_shape = x.shape[:-event_dims]
    eps_t = torch.as_tensor(eps, dtype=x.dtype, device=x.device)
    eps_b = eps_t.expand(batch_shape).reshape(*batch_shape, *([1] * event_dims))
    alpha = 2.5 * eps_b / steps if step_size is None else torch.as_tensor(step_size, dtype=x.dtype).expand(
        batch_shape).reshape(eps_b.shape)
    y = y.to(x.dtype)
    fooled = ~correct(score(x).detach(), y)
    x_best = x.clone()
    for _ in range(restarts):
        delta = random_in_ball(x.shape, eps_b, event_dims, generator, x.dtype) if random_start else torch.zeros_like(x)
        for _ in range(steps + 1):
            delta.requires_grad_(True)
            xa = x + delta
            if clip is not None:
                xa = xa.clamp(*clip)
            s = score(xa)
            hit = ~correct(s.detach(), y) & ~fooled
            if hit.any():
                x_best[hit] = xa.detach()[hit]
                fooled |= hit
            (grad,) = torch.autograd.grad((y * s).sum(), delta)
            with torch.no_grad():
                delta = delta - alpha * grad / _norm(grad, event_dims).clamp_min(1e-30)
                n = _norm(delta, event_dims)
                delta = delta * torch.clamp(eps_b / n.clamp_min(1e-30), max=1.0)  # project onto the ball
    return x_best, fooled


def direction_attack(x: torch.Tensor, y: torch.Tensor, u: torch.Tensor, eps: float) -> torch.Tensor:
    """x − y·eps·u for a unit direction u (E, d): Thm 4.5 (3)'s attack along the averaged feature."""
    return x - y.to(x.dtype)[..., None] * eps * u[:, None, :]


@torch.no_grad()
def robust_accuracy_curve(score: Score, x: torch.Tensor, y: torch.Tensor, radii: list[float], *,
                          steps: int = 50, step_size_factor: float = 2.5, random_start: bool = True,
                          restarts: int = 1, generator: torch.Generator | None = None, progress=None,
                          event_dims: int = 1, clip: tuple[float, float] | None = None, batch_size: int | None = None,
                          device=None, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Robust accuracy under ℓ2 PGD at each radius, for vectors and images alike.

    * replica-batched data x (E, n, *event), y (E, n) → (R, E): the synthetic nets, ``event_dims=1``;
    * one batch x (n, *event), y (n,) → (R,): e.g. images (n, C, H, W) with ``event_dims=3``, ``clip=(0, 1)``.

    ``y`` ∈ {−1, +1}; ``score`` is cast to x's dtype. Radii are attacked in increasing order (each distinct radius
    once) and only points still robust at the previous radius are attacked again: an adversarial example within
    radius r is one within any r' ≥ r, so this is exact for the attack and makes the curve monotone (a stronger
    attack than attacking every radius from scratch). The survivors are attacked ``batch_size`` per replica at a
    time (None: all at once) on ``device`` (None: x's device); accuracies are returned in ``dtype`` (None: x's).
    """
    radii = [float(r) for r in radii]
    if any(r < 0 for r in radii):
        raise ValueError(f"radii must be >= 0; got {next(r for r in radii if r < 0)!r}")
    single = y.dim() == 1  # one batch: give it a replica axis of 1
    xr, yr = (x[None], y[None]) if single else (x, y)
    f = (lambda z: score(z[0]).to(x.dtype)[None]) if single else (lambda z: score(z).to(x.dtype))  # noqa: E731
    device = device or x.device
    E, n = yr.shape
    bs = batch_size or max(n, 1)
    alive = torch.cat([correct(f(xr[:, i: i + bs].to(device)), yr[:, i: i + bs].to(device)).to(x.device)
                       for i in range(0, n, bs)], 1)  # (E, n)
    acc = {}
    for r in sorted(set(radii)):
        if r > 0 and alive.any():
            alive = _attack_survivors(f, xr, yr, alive, r, bs, device, event_dims, clip, generator,
                                      dict(steps=steps, step_size=step_size_factor * r / steps,
                                           random_start=random_start, restarts=restarts))
        acc[r] = alive.to(dtype or x.dtype).mean(1)
        if progress is not None:
            progress.update(1)
    res = torch.stack([acc[r] for r in radii])  # (R, E), in the order of ``radii``
    return res[:, 0] if single else res


def _attack_survivors(f, x, y, alive, r, bs, device, event_dims, clip, generator, pgd) -> torch.Tensor:
    """``alive`` (E, n) after PGD at radius r on its True entries, gathered per replica (padded to the largest
    count; padding is attacked but ignored) and attacked ``bs`` per replica at a time."""
    cnt = alive.sum(1)
    n_s = int(cnt.max())
    order = torch.argsort(alive.to(torch.int8), dim=1, descending=True, stable=True)[:, :n_s]
    valid = torch.arange(n_s, device=alive.device)[None, :] < cnt[:, None]
    rows = torch.arange(len(order), device=order.device)[:, None]
    broken = torch.zeros_like(valid)
    with torch.enable_grad():
        for i in range(0, n_s, bs):
            o = order[:, i: i + bs]
            _, fooled = pgd_l2(f, x[rows, o].to(device), y[rows, o].to(device), r, event_dims=event_dims, clip=clip,
                               generator=generator, **pgd)
            broken[:, i: i + bs] = fooled.to(alive.device)
    broken &= valid
    return alive.scatter(1, order, alive.gather(1, order) & ~broken)


def critical_radius(radii: list[float], acc: torch.Tensor, level: float = 0.5) -> torch.Tensor:
    """The radius where accuracy (R, E) first falls below ``level``, linearly interpolated: (E,)."""
    r = torch.tensor(radii, dtype=acc.dtype)
    order = torch.argsort(r)
    r, acc = r[order], acc[order]
    out = torch.full((acc.shape[1],), float("inf"), dtype=acc.dtype)
    for e in range(acc.shape[1]):
        below = (acc[:, e] < level).nonzero()
        if len(below) == 0:
            continue
        i = int(below[0])
        if i == 0:
            out[e] = r[0]
            continue
        a0, a1 = acc[i - 1, e], acc[i, e]
        out[e] = r[i - 1] + (a0 - level) / (a0 - a1) * (r[i] - r[i - 1])
    return out
