"""ℓ2 robustness: batched PGD on any differentiable score, fixed-direction attacks, robust-accuracy curves.

Works for replica-batched synthetic inputs (E, n, d) and for image batches (N, C, H, W) alike: the last
``event_dims`` axes are one example; every leading axis is a batch axis.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import torch

from .. import meter
from ..nn.twolayer import sign_prediction
from .survivors import check_radii, lift, on_survivors, survivor_masks

Score = Callable[[torch.Tensor], torch.Tensor]


def _norm(t: torch.Tensor, event_dims: int) -> torch.Tensor:
    return t.flatten(-event_dims).norm(dim=-1).reshape(*t.shape[:-event_dims], *([1] * event_dims))


def correct(score: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """sgn(score) == y with sgn(0) = −1."""
    return sign_prediction(score) == y.to(score.dtype)


def random_in_ball(shape, eps: torch.Tensor, event_dims: int, generator: torch.Generator | None, dtype) -> torch.Tensor:
    """Uniform in the ℓ2 ball of radius eps (eps broadcast over the batch axes)."""
    g = torch.randn(shape, generator=generator, dtype=dtype, device="cpu")
    D = 1
    for s in shape[-event_dims:]:
        D *= s
    u = torch.rand(shape[:-event_dims], generator=generator, dtype=dtype, device="cpu").pow(1.0 / D)
    u = u.reshape(*u.shape, *([1] * event_dims))
    return (g / _norm(g, event_dims) * u).to(eps.device) * eps  # drawn on CPU (seeded), used where eps lives


def pgd_l2(score: Score, x: torch.Tensor, y: torch.Tensor, eps: float | torch.Tensor, *, steps: int = 50,
           step_size: float | torch.Tensor | None = None, random_start: bool = True, restarts: int = 1,
           event_dims: int = 1, clip: tuple[float, float] | None = None,
           generator: torch.Generator | None = None, grad_score: Score | None = None,
           start: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """ℓ2 PGD (Madry et al.) minimising the margin y·score(x + δ) over ‖δ‖ ≤ eps. ``start``: the first restart's
    δ (a warm start, inside the ball) instead of a random one.

    ``grad_score``: a surrogate whose margin gives the ascent direction (e.g. the net with softplus for ReLU, whose
    gradient is not masked by inactive units); success is always judged on ``score``.

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
    alpha = 2.5 * eps_b / steps if step_size is None else torch.as_tensor(
        step_size, dtype=x.dtype, device=x.device).expand(batch_shape).reshape(eps_b.shape)
    y = y.to(x.dtype)
    fooled = ~correct(score(x).detach(), y)
    x_best = x.clone()
    for i in range(restarts):
        delta = (start.detach().clone() if start is not None and i == 0
                 else random_in_ball(x.shape, eps_b, event_dims, generator, x.dtype) if random_start
                 else torch.zeros_like(x))
        for _ in meter.steps(steps + 1):  # a few, timed, when an estimate is measured (featlab.meter)
            delta.requires_grad_(True)
            xa = x + delta
            if clip is not None:
                xa = xa.clamp(*clip)
            s = score(xa) if grad_score is None else grad_score(xa)
            judged = s.detach() if grad_score is None else score(xa.detach()).detach()
            hit = ~correct(judged, y) & ~fooled
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
def direction_masks(score: Score, x: torch.Tensor, y: torch.Tensor, radii: list[float],
                    directions: Callable[[], Iterable[torch.Tensor]], event_dims: int = 1) -> torch.Tensor:
    """Which points stay correct when moved by r·u along every candidate unit direction u: (R, *batch) bool.

    ``directions()`` yields tensors of unit directions broadcastable to x (one per point, or one shared), e.g. the
    averaged feature or the way to the nearest centre of the other class. A point moved by r along u lies within
    every radius r' ≥ r, so a point is robust at r only if it is robust at every radius ≤ r (monotone curve)."""
    y = y.to(x.dtype)

    def attack(todo: torch.Tensor, r: float) -> torch.Tensor:
        left = todo.clone()
        for u in directions():
            if not left.any():
                break
            left &= correct(score(x + r * u), y)
        return todo & ~left

    return survivor_masks(radii, correct(score(x), y), attack)[0]


def lipschitz_certificate(margin: torch.Tensor, lipschitz: torch.Tensor) -> torch.Tensor:
    """Radii below which no ℓ2 perturbation can flip a point: margin / L for a score that is L-Lipschitz (0 where the
    point is misclassified). ``lipschitz`` broadcasts over the points (one constant per replica: (E, 1))."""
    return (margin / lipschitz).clamp_min(0)


def worst_case(masks: dict[str, torch.Tensor]) -> torch.Tensor:
    """Point by point, robust only when robust under every attack: the AND of the attacks' (R, ...) masks."""
    it = iter(masks.values())
    out = next(it).clone()
    for m in it:
        out &= m
    return out


def transition_radii(radii: list[float], acc: torch.Tensor, lo: float = 0.02, hi: float = 0.98) -> list[int]:
    """Indices of the radii where the mean accuracy (R, E) lies in (lo, hi): where the curve is in transition and a
    stronger attack changes it most (the convergence check's radii)."""
    mean = acc.mean(-1)
    return [i for i in range(len(radii)) if lo < float(mean[i]) < hi]


def robust_accuracy_curve(score: Score, x: torch.Tensor, y: torch.Tensor, radii: list[float], *,
                          dtype: torch.dtype | None = None, **kw) -> torch.Tensor:
    """Robust accuracy under ℓ2 PGD at each radius: the mean over points of :func:`robust_masks` ((R, E) for
    replica-batched x (E, n, *event), (R,) for one batch x (n, *event)); returned in ``dtype`` (None: x's)."""
    return robust_masks(score, x, y, radii, **kw).to(dtype or x.dtype).mean(-1)


@torch.no_grad()
def robust_masks(score: Score, x: torch.Tensor, y: torch.Tensor, radii: list[float], *,
                 steps: int = 50, step_size_factor: float = 2.5, random_start: bool = True,
                 restarts: int = 1, generator: torch.Generator | None = None, progress=None,
                 event_dims: int = 1, clip: tuple[float, float] | None = None, batch_size: int | None = None,
                 device=None, grad_score: Score | None = None,
                 certified: torch.Tensor | None = None) -> torch.Tensor:
    """Which points stay correct under ℓ2 PGD at each radius, for vectors and images alike: (R, E, n) or (R, n).

    * replica-batched data x (E, n, *event), y (E, n) → (R, E): the synthetic nets, ``event_dims=1``;
    * one batch x (n, *event), y (n,) → (R, n): e.g. images (n, C, H, W) with ``event_dims=3``, ``clip=(0, 1)``.

    ``y`` ∈ {−1, +1}; ``score`` is cast to x's dtype. :func:`~.survivors.survivor_masks` of PGD: radii in
    increasing order, each distinct radius once, only the points still robust attacked again (exact for the attack,
    a monotone curve: stronger than attacking every radius from scratch). The survivors are attacked
    ``batch_size`` per replica at a time (None: all at once) on ``device`` (None: x's device). ``grad_score``: see
    :func:`pgd_l2`. ``certified`` (shaped like y): a radius below which each point is provably robust (e.g.
    margin / Lipschitz constant, see :func:`lipschitz_certificate`); such points are not attacked at smaller
    radii — the attacks' cost goes where an attack can succeed, and the answer is unchanged.
    """
    radii = check_radii(radii)
    single = y.dim() == 1  # one batch: give it a replica axis of 1
    xr, yr = (x[None], y[None]) if single else (x, y)
    f, gf = lift(score, single, x.dtype), (None if grad_score is None else lift(grad_score, single, x.dtype))
    device = device or x.device
    n = yr.shape[1]
    bs = batch_size or max(n, 1)
    alive = torch.cat([correct(f(xr[:, i: i + bs].to(device)), yr[:, i: i + bs].to(device)).to(x.device)
                       for i in range(0, n, bs)], 1)  # (E, n)

    def pgd(xs, ys, r):
        with torch.enable_grad():
            return pgd_l2(f, xs, ys, r, steps=steps, step_size=step_size_factor * r / steps,
                          random_start=random_start, restarts=restarts, event_dims=event_dims, clip=clip,
                          generator=generator, grad_score=gf)

    res, _ = survivor_masks(radii, alive, lambda todo, r: on_survivors(pgd, xr, yr, todo, r, bs, device=device)[0],
                            certified=certified, progress=progress)  # (R, E, n), in the order of ``radii``
    return res[:, 0] if single else res


def critical_radius(radii: Sequence[float], acc: torch.Tensor, level: float = 0.5) -> torch.Tensor:
    """The radius where accuracy (R, E) first falls below ``level``, linearly interpolated: (E,)."""
    r = torch.tensor(radii, dtype=acc.dtype, device=acc.device)
    order = torch.argsort(r)
    r, acc = r[order], acc[order]
    out = torch.full((acc.shape[1],), float("inf"), dtype=acc.dtype, device=acc.device)
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
