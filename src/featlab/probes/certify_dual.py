"""A joint (Lagrangian) certified lower bound on the ℓ2 distance that flips the k-class net's logit margin
G = LSE_{J+} f − LSE_{J−} f, f = ReLU(Wx + b)ᵀA (issue 22; used by :func:`certify.certified_lower_bound`).

The per-pair bound of ``certify`` gives every class of the other side the whole budget r at once, which costs up to
log|J−| of margin, and relaxes each ReLU by its chord. Here the ball is relaxed instead, and every step is exact or a
stated inequality (y = +1 shown; y = −1 swaps J+ and J−):

1. **Separable ball.** With s = Wδ (s_m = w_m·δ) and D_m = 1/(Λ‖w_m‖²), Λ = λ_max of the normalised Gram matrix of
   the neurons that feed a logit, δᵀWᵀDWδ ≤ ‖δ‖², so Σ_m D_m s_m² ≤ r² on the ball. Weak duality with λ ≥ 0:
   min_{‖δ‖≤r} G ≥ inf_{s∈R^M} [G(z0 + s) + λ Σ_m D_m s_m²] − λr².
2. **Read-out.** LSE_{J+} f ≥ π·f + H(π) for any π in the simplex, and LSE_{J−} f = max_q q·f + H(q) (exact), so the
   infimum is ≥ H(π) − sup_q [H(q) + Σ_m ψ_m(q·A_{m,J−} − π·A_{m,J+})] with the per-neuron
   ψ_m(p) = sup_s [p·ReLU(z0_m + s) − λD_m s²] in closed form (convex in p).
3. **The q-problem.** A neuron feeding one class l of J− enters θ_l(q_l) exactly; one feeding several (or none) is
   bounded by Jensen, ψ(Σ q_l a_l − c) ≤ Σ q_l ψ(a_l − c). Then sup_q Σ_l θ_l(q_l) ≤ ν + Σ_l sup_{q∈[0,1]} (θ_l(q) − νq)
   for any ν (Lagrange dual of Σq = 1), and each 1-D sup is bounded on a grid of cells: on a cell the entropy lies
   below its tangent at the cell's midpoint, the rest is convex, so the cell's sup is at one of its two ends.

So for every (λ, π, ν) min_{‖δ‖≤r} G ≥ C(λ, π, ν) − λr², and the distance is at least √(C/λ) where C > 0. λ, π, ν
are searched (a grid in λ, best responses in π, bisection in ν); whatever is found, the bound stays sound.
"""

from __future__ import annotations

import torch

from ..nn.twolayer import positive_mask

F64 = torch.float64


def _grid(dev) -> tuple[torch.Tensor, torch.Tensor]:
    """The cells' edges q (Q+1,) and, at each, the larger of its two cells' tangents of −q log q (taken at the cell's
    midpoint t: t − q − q log t, which lies above −q log q everywhere)."""
    q = torch.cat([torch.zeros(1, dtype=F64, device=dev), torch.logspace(-6, -1, 21, dtype=F64, device=dev),
                   torch.linspace(0.1, 1.0, 46, dtype=F64, device=dev)[1:]])
    t = (q[:-1] + q[1:]) / 2
    left = t - q[1:] - q[1:] * t.log()  # the cell left of each edge, at its right end
    right = t - q[:-1] - q[:-1] * t.log()
    return q, torch.maximum(torch.cat([right[:1], left]), torch.cat([right, left[-1:]]))


def psi(p: torch.Tensor, z0: torch.Tensor, lam_d: torch.Tensor) -> torch.Tensor:
    """sup_s [p·ReLU(z0 + s) − λD s²]: the inactive side (s ≤ −z0) or the active side's vertex s = p/(2λD)."""
    inact = -lam_d * z0.clamp_min(0) ** 2
    act = torch.where(p >= -2 * lam_d * z0, p * z0 + p * p / (4 * lam_d), -float("inf"))
    return torch.maximum(inact, act)


def _response(p: torch.Tensor, z0: torch.Tensor, lam_d: torch.Tensor) -> torch.Tensor:
    """The pre-activation z0 + s at ψ's maximiser (a heuristic for π; soundness never depends on it)."""
    inact = -lam_d * z0.clamp_min(0) ** 2
    act_ok = p >= -2 * lam_d * z0
    act = torch.where(act_ok, p * z0 + p * p / (4 * lam_d), -float("inf"))
    return torch.where(act > inact, z0 + p / (2 * lam_d), z0.clamp_max(0))


def _dual(v: torch.Tensor, q: torch.Tensor, steps: int = 20) -> torch.Tensor:
    """min over ν of ν + Σ_l max_e (v_le − ν q_e), v (..., L, Q+1): a sound upper bound for any ν. ν by bisection on
    the subgradient 1 − Σ_l q_{e*} inside a bracket where every l's maximiser sits at q = 1 (below) or q = 0 (above),
    then the smaller value at the bracket's two ends."""
    top, zero = q == 1, q == 0
    v0 = v[..., zero].amax(-1, keepdim=True)
    v1 = v[..., top].amax(-1, keepdim=True)
    hi = ((v - v0) / q.clamp_min(1e-300)).masked_fill(zero, -float("inf")).amax((-1, -2)) + 1
    lo = ((v1 - v) / (1 - q).clamp_min(1e-300)).masked_fill(top, float("inf")).amin((-1, -2)) - 1

    def val(nu):
        return nu + (v - nu[..., None, None] * q).amax(-1).sum(-1)

    for _ in range(steps):
        mid = (lo + hi) / 2
        e = (v - mid[..., None, None] * q).argmax(-1)
        g = 1 - q[e].sum(-1)
        lo, hi = torch.where(g < 0, mid, lo), torch.where(g < 0, hi, mid)
    return torch.minimum(val(lo), val(hi))


def _side_radius(lam_scale: torch.Tensor, z0: torch.Tensor, Ao: torch.Tensor, Ax: torch.Tensor,
                 lams: torch.Tensor, pi_iters: int, warm: int = 3) -> torch.Tensor:
    """√(C/λ) maximised over the λ grid and the π iterates, for points (n,) whose label's side has logits Ao (M, ko)
    and the other side Ax (M, kx); z0 (n, M); lam_scale (M,) = D_m; lams (n, G)."""
    n, M = z0.shape
    q, tang = _grid(z0.device)
    nnz = (Ax != 0).sum(1)
    single = nnz == 1
    cls = (Ax != 0).to(torch.int8).argmax(1)
    h = max(int(torch.bincount(cls[single], minlength=Ax.shape[1]).max()) if single.any() else 0, 1)
    # per class of the other side, its single neurons (padded; pad index M points to a dummy that contributes 0)
    idx = torch.full((Ax.shape[1], h), M, dtype=torch.long, device=z0.device)
    for l in range(Ax.shape[1]):
        ms = (single & (cls == l)).nonzero()[:, 0]
        idx[l, : len(ms)] = ms
    a_s = torch.cat([Ax, torch.zeros(1, Ax.shape[1], dtype=F64, device=z0.device)])  # (M+1, kx)
    a_s = a_s[idx, torch.arange(Ax.shape[1], device=z0.device)[:, None]]  # (kx, h)
    real = idx < M
    lin = ~single
    lam_d = lams[..., None] * lam_scale  # (n, G, M)
    z0g = z0[:, None, :].expand_as(lam_d)
    pi = torch.softmax(z0.clamp_min(0) @ Ao, -1)[:, None, :].expand(n, lams.shape[1], -1)  # (n, G, ko)
    best = torch.zeros(n, dtype=F64, device=z0.device)
    for it in range(warm + pi_iters):
        c = pi @ Ao.T  # (n, G, M): π·A_{m,own}
        if it < warm:  # a best response before the first bound (cheap: no q-problem)
            pi = torch.softmax(_response(-c, z0g, lam_d).clamp_min(0) @ Ao, -1)
            continue
        pad = lambda t: torch.cat([t, torch.zeros_like(t[..., :1])], -1)  # the dummy neuron M
        cp, zp, ldp = pad(c), pad(z0g), torch.cat([lam_d, torch.ones_like(lam_d[..., :1])], -1)
        # linear (Jensen) terms: Σ_{m not single} ψ_m(A_ml − c_m), (n, G, kx)
        lt = psi(Ax[None, None] - c[..., None], z0g[..., None], lam_d[..., None])  # (n, G, M, kx)
        lin_l = torch.where(lin[:, None], lt, 0.0).sum(-2)
        # exact terms of the single neurons at every grid edge: (n, G, kx, Q+1, h)
        p = q[None, None, None, :, None] * a_s[None, None, :, None, :] - cp[..., idx][..., :, None, :]
        ex = psi(p, zp[..., idx][..., :, None, :], ldp[..., idx][..., :, None, :])
        v = tang + q * lin_l[..., None] + torch.where(real[:, None, :], ex, 0.0).sum(-1)  # (n, G, kx, Q+1)
        ent = -(pi * pi.clamp_min(1e-300).log()).sum(-1)
        C = ent - _dual(v, q)
        C = C - 1e-9 * (1 + ent.abs() + v.abs().amax((-1, -2)))  # float64 rounding margin
        R = (C.clamp_min(0) / lams).sqrt()
        best = torch.maximum(best, R.amax(-1))
        zs = _response(-c, z0g, lam_d)  # best response of the own side's neurons, then π = softmax there
        pi = 0.5 * pi + 0.5 * torch.softmax(zs.clamp_min(0) @ Ao, -1)
    return best


def joint_radius(W: torch.Tensor, b: torch.Tensor | None, A, x: torch.Tensor, y: torch.Tensor, positive,
                 ref: torch.Tensor | None = None, pi_iters: int = 1, grid: int = 5) -> torch.Tensor:
    """A sound lower bound (E, n) on the ℓ2 distance that flips sgn(LSE_{J+} f − LSE_{J−} f) (0 where nothing is
    certified): the largest √(C/λ) over π's best responses and the λ grid 2^{j/3}·‖∇‖/(2·ref), |j| ≤ ``grid``, around
    ``ref`` (E, n), a distance scale (an attack's distance, or another bound; only the search depends on it).
    Float64, on x's device."""
    E, M, d = W.shape
    n, dev = x.shape[1], x.device
    Wd = W.detach().to(F64)
    z0 = torch.bmm(x.detach().to(F64), Wd.transpose(1, 2)) + (0 if b is None else b.detach().to(F64)[:, None])
    Ad = torch.as_tensor(A, device=dev).detach().to(dev, F64)
    pos = positive_mask(positive, Ad.shape[1], dev)
    yd = y.detach().to(dev, F64)
    out = torch.zeros(E, n, dtype=F64, device=dev)
    rel = Ad.abs().sum(1) > 0  # the neurons that feed a logit: the others do not enter G
    if pos.all() or not pos.any() or not rel.any():  # one side empty, or G constant: left to certify's bounds
        return out
    steps = 2.0 ** (torch.arange(-grid, grid + 1, dtype=F64, device=dev) / 3)
    for e in range(E):
        Wr = Wd[e][rel]
        wn2 = (Wr * Wr).sum(-1).clamp_min(1e-200)
        Wn = Wr / wn2.sqrt()[:, None]
        Kn = Wn @ Wn.T
        lam_max = float(torch.linalg.eigvalsh(Kn).max()) * (1 + 1e-9) + 1e-12  # rounding margin: D only shrinks
        scale = 1 / (lam_max * wn2)  # D_m: Σ D_m (w_m·δ)² ≤ ‖δ‖²
        grad = ((Ad[rel].abs().sum(1) ** 2) * wn2).sum().sqrt()
        r0 = torch.ones(n, dtype=F64, device=dev) if ref is None else ref[e].detach().to(dev, F64)
        r0 = torch.where(torch.isfinite(r0) & (r0 > 0), r0, (z0[e].abs().amax(-1) / grad).clamp_min(1e-6))
        for side in (1.0, -1.0):
            sel = (yd[e] == side).nonzero()[:, 0]
            if len(sel):
                own = pos if side > 0 else ~pos
                lams = (grad / (2 * r0[sel]))[:, None] * steps
                out[e, sel] = _side_radius(scale, z0[e][sel][:, rel], Ad[rel][:, own], Ad[rel][:, ~own], lams,
                                           pi_iters)
    return out
