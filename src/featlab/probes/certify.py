"""Certified lower bounds on the ℓ2 adversarial distance where exact enumeration is out of reach, and robust accuracy
over radii as an interval [certified, attacked] (issue 22, parts 1-3).

**The bound.** On the ball ‖δ‖ ≤ r every pre-activation z_m = z0_m + w_m·δ lies in [z0_m − r‖w_m‖, z0_m + r‖w_m‖].
For a margin Σ_m a_m ReLU(z_m) + a0, a neuron with a_m > 0 is bounded below by α_m z_m (any α_m ∈ [0, 1]: ReLU(z) ≥ αz
everywhere), one with a_m < 0 above by its chord on the interval (CROWN, Zhang et al. 2018); the margin is then
≥ an affine function of δ, whose minimum over the ball is closed-form (const − r‖Wᵀv‖, computed as √(vᵀGv) with
G = WWᵀ). The α are improved by best response (α_m = 1[z_m ≥ 0] at the relaxation's minimiser); every α gives a sound
bound, the best one is kept. A radius is certified when the bound keeps the sign of the label; the certified
distance is the largest certified radius found by doubling and bisection (a ball inside a certified ball is
certified, so each tested radius stands alone: soundness never rests on monotonicity).

**The k-class read-out** G = LSE_{J+} f − LSE_{J−} f (``logit_margin_readout``; sgn G = sgn F^binary), certified two
ways, either suffices. (i) Pairs: for y = +1 and j* the best positive logit at x, LSE_{J+} f ≥ f_j*, so at every δ G ≥
f_j* − LSE_{J−} f = −LSE_l(−(f_j* − f_l)) ≥ −LSE_l(−m_l) with m_l ≤ min over the ball of the pair margin f_j* − f_l (a
one-layer margin, bounded as above): G > 0 on the ball when Σ_l e^{−m_l} < 1 (symmetrically for y = −1 with the best
negative logit). This never costs more than the log|J−| of margin of max_l f_l + log|J−|, and nothing when one pair is
under attack and the others are far. (ii) Aggregated: LSE is increasing in each logit, so G ≥ LSE_{J+}(lower f) −
LSE_{J−}(upper f). (iii) Joint (:mod:`certify_dual`, on by default): the ball relaxed by Lagrangian duality into
per-neuron penalties, the read-out by the entropy duals of both LSEs. Unlike (i) it does not give every class of J− the
whole budget at once (which costs (i) up to log|J−| of margin), and it needs no chord; (i)-(ii) stay for the nets
where its relaxation of the ball is loose (correlated or more neurons than dimensions).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch

from ..nn.twolayer import positive_mask
from .certify_dual import joint_radius
from .robustness import critical_radius

F64 = torch.float64


def _compact(G: torch.Tensor, z0: torch.Tensor, a: torch.Tensor):
    """Each row's neurons with a ≠ 0 (padded to the largest count): (G (N, s, s), z0 (N, s), a (N, s), ‖w‖ (N, s))."""
    s = max(int((a != 0).sum(-1).max()), 1) if a.numel() else 1
    idx = torch.sort((a != 0).to(torch.int8), dim=1, descending=True, stable=True).indices[:, :s]
    Gs = G[idx[:, :, None], idx[:, None, :]]
    return Gs, z0.gather(1, idx), a.gather(1, idx), torch.diagonal(Gs, dim1=1, dim2=2).clamp_min(0).sqrt()


def relu_margin_lower(Gs, z0, a, a0, wn, r, iters: int = 8) -> torch.Tensor:
    """A sound lower bound of min_{‖δ‖≤r} Σ_m a_m ReLU(z0_m + w_m·δ) + a0 per row: Gs (N, s, s) the Gram matrix of the
    rows' neurons, z0, a, wn (N, s), a0, r (N,)."""
    l, u = z0 - r[:, None] * wn, z0 + r[:, None] * wn
    act, dead = l >= 0, u <= 0
    unst = ~act & ~dead
    cs = u / (u - l).clamp_min(1e-300)
    chord = unst & (a < 0)
    free = unst & (a >= 0)
    fixed = torch.where(act, 1.0, torch.where(chord, cs, 0.0))
    const = (a * torch.where(chord, -cs * l, 0.0)).sum(-1) + a0
    alpha = (u > -l).to(F64)  # CROWN's default slope
    best = torch.full_like(a0, -float("inf"))
    for _ in range(iters):
        v = a * torch.where(free, alpha, fixed)
        Gv = torch.bmm(Gs, v[..., None])[..., 0]
        nrm = (v * Gv).sum(-1).clamp_min(0).sqrt()
        best = torch.maximum(best, const + (v * z0).sum(-1) - r * nrm)
        zs = z0 - r[:, None] * Gv / nrm.clamp_min(1e-300)[:, None]  # the relaxation's minimiser, in z
        alpha = (zs >= 0).to(F64)
    return best


def _largest(robust: Callable[[torch.Tensor], torch.Tensor], start: torch.Tensor, bisect: int) -> torch.Tensor:
    """The largest radius r with ``robust(r)`` found by doubling from ``start`` then bisecting (0 where robust(0)
    fails, inf where it still holds after 60 doublings). Every returned radius was itself tested robust."""
    lo = torch.zeros_like(start)
    ok0 = robust(lo)
    hi = torch.where(start > 0, start, 1.0)
    grow = ok0.clone()
    for _ in range(60):
        if not grow.any():
            break
        ok = robust(hi) & grow
        lo = torch.where(ok, hi, lo)
        hi = torch.where(ok, 2 * hi, hi)
        grow = ok
    for _ in range(bisect):
        mid = (lo + hi) / 2
        ok = robust(mid) & ok0 & ~grow
        lo = torch.where(ok, mid, lo)
        hi = torch.where(ok | ~ok0 | grow, hi, mid)
    return torch.where(grow, float("inf"), torch.where(ok0, lo, 0.0))


def certified_lower_bound(W: torch.Tensor, b: torch.Tensor | None, A, x: torch.Tensor, y: torch.Tensor, *,
                          positive=None, a0=None, upper: torch.Tensor | None = None, iters: int = 6,
                          bisect: int = 20, joint: bool = True) -> torch.Tensor:
    """A sound lower bound (E, n) on the minimum ‖δ‖₂ that changes sgn of the score (sgn 0 = −1):

    * ``positive`` None: the binary net f = Σ_r a_r ReLU(w_r·x + b_r) + a0, A (M,), (M, 1) or (E, M);
    * ``positive`` J+ (mask or indices): the k-class net's logit margin LSE_{J+} f − LSE_{J−} f, f = ReLU(Wx + b)ᵀA
      with A (M, k) (``logit_margin_readout``), y ∈ {±1} its binary label.

    ``upper`` (E, n): where to start the search (e.g. an attack's distance). ``joint`` (k-class only): also the joint
    Lagrangian bound of :mod:`certify_dual` (iii), the larger of the two is returned. Float64 on x's device."""
    E, M, d = W.shape
    n, dev = x.shape[1], x.device
    Wd = W.detach().to(F64)
    z0 = torch.bmm(x.detach().to(F64), Wd.transpose(1, 2)) + (0 if b is None else b.detach().to(F64)[:, None])
    G = torch.bmm(Wd, Wd.transpose(1, 2))
    yd = y.detach().to(dev, F64)
    Ad = torch.as_tensor(A, device=dev).detach().to(dev, F64)
    out = torch.empty(E, n, dtype=F64, device=dev)
    for e in range(E):
        specs, combine = (_binary_specs(Ad, e, n, M, yd[e], a0, dev) if positive is None
                          else _kclass_specs(Ad, z0[e], yd[e], positive))
        S = len(specs[1])
        pt = torch.arange(n, device=dev).repeat_interleave(S // n)
        Gs, zs, as_, wn = _compact(G[e], z0[e][pt], specs[0])
        start = torch.ones(n, dtype=F64, device=dev) if upper is None else upper[e].detach().to(dev, F64)

        def robust(r, Gs=Gs, zs=zs, as_=as_, wn=wn, a0s=specs[1], pt=pt, combine=combine):
            return combine(relu_margin_lower(Gs, zs, as_, a0s, wn, r[pt], iters).reshape(n, -1))

        out[e] = _largest(robust, torch.nan_to_num(start, posinf=1.0), bisect)
    if positive is not None and joint:  # both bounds are sound: the larger is
        ref = out if upper is None else torch.where(torch.isfinite(upper) & (upper > 0), upper.to(dev, F64), out)
        out = torch.maximum(out, joint_radius(W, b, A, x, y, positive, ref=ref))
    low = out.to(x.dtype)  # rounded down where the cast rounded up: a lower bound stays one
    return torch.where(low.to(F64) > out, torch.nextafter(low, torch.full_like(low, -float("inf"))), low)


def _binary_specs(Ad, e, n, M, y, a0, dev):
    """One margin per point: y·f (the label's side); certified when > 0 (y = +1) or ≥ 0 (y = −1: sgn 0 = −1)."""
    a = Ad.reshape(M) if Ad.dim() == 1 or Ad.shape == (M, 1) else Ad[e]
    c0 = torch.as_tensor(0.0 if a0 is None else a0, device=dev).to(dev, F64)
    c0 = c0 if c0.dim() == 0 else c0[e]
    specs = (y[:, None] * a[None], y * c0)
    return specs, lambda lb: torch.where(y > 0, lb[:, 0] > 0, lb[:, 0] >= 0)


def _pairs(f: torch.Tensor, y: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """From the clean logits f (n, k): the logit that must stay on top (the best of the label's side), the other
    side's classes (n, S) padded by repetition, and which of them are real (not padding) (n, S)."""
    npos, nneg = int(pos.sum()), int((~pos).sum())
    jstar = f.masked_fill(~pos, -float("inf")).argmax(-1)
    lstar = f.masked_fill(pos, -float("inf")).argmax(-1)
    own = torch.where(y > 0, jstar, lstar)
    S = max(npos, nneg)
    others = torch.stack([torch.where(y > 0, (~pos).nonzero()[i % nneg, 0], pos.nonzero()[i % npos, 0])
                          for i in range(S)], -1)
    real = torch.arange(S, device=f.device) < torch.where(y > 0, nneg, npos)[:, None]
    return own, others, real


def _kclass_specs(Ad, z0, y, positive):
    """Per point: the pairwise margins f_own − f_other, then each class's logit from below and from above."""
    n, k = z0.shape[0], Ad.shape[1]
    pos = positive_mask(positive, k, z0.device)
    own, others, real = _pairs(z0.clamp_min(0) @ Ad, y, pos)
    S = others.shape[1]
    pair_a = Ad.T[own][:, None] - Ad.T[others]  # (n, S, M)
    cls_a = torch.cat([Ad.T, -Ad.T])[None].expand(n, -1, -1)  # (n, 2k, M): f_j from below, −f_j from below
    a = torch.cat([pair_a, cls_a], 1).reshape(-1, Ad.shape[0])
    c = torch.zeros(n * (S + 2 * k), dtype=F64, device=z0.device)

    def combine(lb):
        # (i) G ≥ −LSE_l(−m_l), m_l ≤ min over the ball of f_own − f_l (see the module docstring)
        g_pair = -(-lb[:, :S]).masked_fill(~real, -float("inf")).logsumexp(-1)
        pair = torch.where(y > 0, g_pair > 0, g_pair >= 0)
        lo, hi = lb[:, S: S + k], -lb[:, S + k:]
        lse = lambda t, m: t.masked_fill(~m, -float("inf")).logsumexp(-1)
        agg = torch.where(y > 0, lse(lo, pos) - lse(hi, ~pos) > 0, lse(hi, pos) - lse(lo, ~pos) <= 0)
        return pair | agg
    return (a, c), combine


class RobustInterval(NamedTuple):
    """Robust accuracy per radius as an interval: ``certified`` (R, E) ≤ truth ≤ ``attacked`` (R, E); ``critical``
    (E, 2) the radius where each curve first falls below the level, [certified, attacked]."""
    certified: torch.Tensor
    attacked: torch.Tensor
    critical: torch.Tensor


def robust_interval(radii: Sequence[float], lower_dist: torch.Tensor, upper_dist: torch.Tensor,
                    level: float = 0.5) -> RobustInterval:
    """From per-point distances (E, n): a sound lower bound (certified, or exact) and an upper one (an attack's or
    the exact solver's: an adversarial point exists at that distance). A point is robust at r when its distance
    exceeds r (distance 0: misclassified at x). Exact where lower = upper."""
    r = torch.as_tensor(list(radii), dtype=lower_dist.dtype, device=lower_dist.device)[:, None, None]
    cert = (lower_dist[None] > r).to(lower_dist.dtype).mean(-1)
    att = (upper_dist.to(lower_dist.dtype)[None] > r).to(lower_dist.dtype).mean(-1)
    crit = torch.stack([critical_radius(radii, cert, level), critical_radius(radii, att, level)], -1)
    return RobustInterval(cert, att, crit)


def attack_distance(radii: Sequence[float], masks: torch.Tensor) -> torch.Tensor:
    """An attack's robust masks (R, E, n) (e.g. ``worst_case``) as distances (E, n): the smallest radius at which the
    point was broken (an adversarial point lies within it), inf where it never was."""
    r = torch.as_tensor(list(radii), dtype=torch.float64, device=masks.device)
    broken = torch.where(~masks, r[:, None, None], float("inf"))
    return broken.amin(0)
