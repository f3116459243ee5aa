"""Square Attack in ℓ2 (Andriushchenko et al., ECCV 2020): score-based random search, no gradients.

Images (…, C, H, W) only (``event_dims=3``). The perturbation lives on the sphere of radius ε: each query
redistributes the mass of two square windows A and B into A (B emptied, A redrawn as a "pseudo-Gaussian" two-bump
pattern plus A's old direction), rescales the whole δ to norm ε, clips the point to the pixel box and keeps the
candidate where it lowers the margin y·s. The window side follows the paper's schedule for the fraction p of pixels
changed (halved at 10, 50, 200, 500, 1000, 2000, 4000, 6000, 8000 of 10 000 queries, rescaled to ``queries``).
Clipping only shrinks |δ_i| (x inside the box), so the actual perturbation has norm ≤ ε.
"""

from __future__ import annotations

import math

import torch

from .. import meter
from .robustness import Score, correct

_HALVINGS = (10, 50, 200, 500, 1000, 2000, 4000, 6000, 8000)


def p_schedule(p_init: float, i: int, queries: int) -> float:
    """Fraction of pixels in the window at query i: p_init halved at the paper's milestones (of 10 000 queries)."""
    t = int(i * 10000 / max(queries, 1))
    return p_init / 2 ** sum(t > h for h in _HALVINGS)


def _bumps(s: int, *, device, dtype) -> torch.Tensor:
    """An s×s pattern of two concentric-square bumps of opposite sign (one per half), unit Frobenius norm."""
    out = torch.zeros((s, s), device=device, dtype=dtype)
    half = [(0, s // 2), (s // 2, s)]
    for sign, (a, b) in zip((1.0, -1.0), half):
        w = b - a
        if w == 0:
            continue
        ci, cj = (s - 1) / 2, (a + b - 1) / 2
        i = torch.arange(s, device=device, dtype=dtype)[:, None]
        j = torch.arange(a, b, device=device, dtype=dtype)[None, :]
        ring = torch.maximum((i - ci).abs(), (j - cj).abs())
        out[:, a:b] = sign / (ring + 1) ** 2
    return out / out.norm()


def _unit(t: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    return t / t.pow(2).sum(dims, keepdim=True).sqrt().clamp_min(1e-12)


def _signs(shape, generator, x: torch.Tensor) -> torch.Tensor:
    r = torch.randint(0, 2, shape, generator=generator, device="cpu").to(device=x.device, dtype=x.dtype)
    return 2 * r - 1


def _randint(hi: int, generator) -> int:
    return int(torch.randint(0, max(hi, 1), (1,), generator=generator, device="cpu"))


@torch.no_grad()
def square_l2(score: Score, x: torch.Tensor, y: torch.Tensor, eps: float | torch.Tensor, *, queries: int = 1000,
              p_init: float = 0.3, clip: tuple[float, float] | None = (0.0, 1.0),
              generator: torch.Generator | None = None, event_dims: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """Square-L2 minimising the margin y·score over ‖δ‖ ≤ ε: returns ``(x_adv, fooled)`` like ``pgd_l2`` (x_adv
    the first query that fooled the point, x elsewhere). ``queries`` forward passes per point at most; points
    already fooled are not queried further (their candidates are computed but discarded)."""
    if event_dims != 3:
        raise ValueError(f"square_l2 attacks images (…, C, H, W): event_dims must be 3; got {event_dims}")
    bshape, (C, H, W) = x.shape[:-3], x.shape[-3:]
    y = y.to(x.dtype)
    eps_b = torch.as_tensor(eps, dtype=x.dtype, device=x.device).expand(bshape).reshape(*bshape, 1, 1, 1)
    ev = (-3, -2, -1)

    def place(delta):
        xa = x + _unit(delta, ev) * eps_b
        return xa if clip is None else xa.clamp(*clip)

    # init: vertical stripes of bumps, side H // 5, random signs per point and channel
    s0 = max(min(H, W) // 5, 1)
    delta = torch.zeros_like(x)
    for vh in range((H % s0) // 2, H - s0 + 1, s0):
        for vw in range((W % s0) // 2, W - s0 + 1, s0):
            sg = _signs((*bshape, C, 1, 1), generator, x)
            delta[..., vh:vh + s0, vw:vw + s0] += _bumps(s0, device=x.device, dtype=x.dtype) * sg
    x_best = place(delta)
    s_best = score(x_best).to(x.dtype)
    m_best = y * s_best
    fooled = ~correct(score(x).to(x.dtype), y)
    first = ~correct(s_best, y) & ~fooled
    x_adv = torch.where(first.reshape(*bshape, 1, 1, 1), x_best, x)
    fooled |= first
    for i in meter.steps(queries - 1):  # a few, timed, when an estimate is measured (featlab.meter)
        if bool(fooled.all()):
            break
        p = p_schedule(p_init, i, queries)
        s = max(int(round(math.sqrt(p * H * W))), 3)
        s = min(s - (s % 2 == 0), H, W)
        ha, wa, hb, wb = (_randint(H - s + 1, generator), _randint(W - s + 1, generator),
                          _randint(H - s + 1, generator), _randint(W - s + 1, generator))
        delta = x_best - x
        d_a = delta[..., ha:ha + s, wa:wa + s]
        mask = torch.zeros((H, W), dtype=torch.bool, device=x.device)
        mask[ha:ha + s, wa:wa + s] = True
        mask[hb:hb + s, wb:wb + s] = True
        mass_ab = (delta * mask).pow(2).sum((-2, -1), keepdim=True)  # per channel
        total = delta.pow(2).sum(ev, keepdim=True)
        pat = _bumps(s, device=x.device, dtype=x.dtype)
        if _randint(2, generator):
            pat = pat.T
        new_a = pat * _signs((*bshape, C, 1, 1), generator, x) + _unit(d_a, (-2, -1))
        budget = ((eps_b ** 2 - total).clamp_min(0) / C + mass_ab).sqrt()
        new_a = _unit(new_a, (-2, -1)) * budget
        cand = delta.clone()
        cand[..., hb:hb + s, wb:wb + s] = 0
        cand[..., ha:ha + s, wa:wa + s] = new_a
        x_new = place(cand)
        s_new = score(x_new).to(x.dtype)
        m_new = y * s_new
        better = (m_new < m_best) & ~fooled
        x_best = torch.where(better.reshape(*bshape, 1, 1, 1), x_new, x_best)
        m_best = torch.where(better, m_new, m_best)
        hit = ~correct(s_new, y) & ~fooled
        x_adv = torch.where(hit.reshape(*bshape, 1, 1, 1), x_new, x_adv)
        fooled |= hit
    return x_adv, fooled
