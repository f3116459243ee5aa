"""The exact minimum ℓ2 adversarial distance of a binary two-layer ReLU net (issue 22, part 1).

    f(x) = Σ_r a_r ReLU(w_r·x + b_r) + a0,   predicted sgn f with sgn(0) = −1 (FA §3.2, ``sign_prediction``)

Only span(W) matters (W v⊥ = 0 leaves f unchanged), so δ = Wᵀλ with λ ∈ R^M: z(δ) = z0 + G λ and ‖δ‖² = λᵀGλ for
the Gram matrix G = W Wᵀ — the search runs in M coordinates whatever d is (the subspace trick of subspace.py).

**Why it is exact.** On an activation region the net is affine, g = Σ_{r active} a_r z_r + a0, and the misclassified
part of the region is a polyhedron; its point nearest to x is the min-norm solution of its *active* constraints taken
as equalities (KKT: the minimiser is a non-negative combination of the active normals, so it lies in their row
space). Those are a set A of neurons (z_A = 0) and possibly the decision boundary, whose gradient on the face z_A = 0
depends only on the states τ of the other neurons. So the minimiser is one of the candidates

    p_A = argmin{‖δ‖ : z_A = 0},        p_{A,τ} = argmin{‖δ‖ : z_A = 0, g_τ = target}

and the distance is the least norm among the candidates that the true f misclassifies: each counted candidate is a
real adversarial point (an upper bound) and the true minimiser is among them (a lower bound). Each candidate costs a
few M-vectors once G_AA⁺ is known (one pseudo-inverse per face, shared by all points).

**Branch and bound over the unstable neurons.** A neuron whose hyperplane is farther from x than the best distance U
found so far keeps its clean state at the minimiser, so A and τ range over the unstable neurons only; a face whose
p_A is farther than U is dropped (with every smaller face inside it); U shrinks level by level (|A| = 0, 1, …). U
starts from exact line searches along the gradient and ±w_r and from ``upper`` (e.g. an attack's distances: a wrong
one costs a second pass, never a wrong answer).

**Ties.** y = +1 is misclassified on the closed set {f ≤ 0}. y = −1 is misclassified on the open set {f > 0}, whose
infimum is not attained: its distance is taken to {f ≥ θ}, θ = rtol·(Σ_r|a_r|(|z0_r| + ‖w_r‖) + |a0|), so that the
returned point is misclassified strictly and a region where f ≡ 0 is never counted; it tends to the infimum as θ → 0.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations
from typing import NamedTuple

import torch

from .. import meter

F64 = torch.float64
CHUNK = 1 << 21  # elements of the largest temporary


class ExactDistance(NamedTuple):
    """Per point (E, n): ``dist`` the exact distance (0: misclassified at x; inf: never misclassified; nan: more
    unstable neurons than ``max_unstable``), ``upper`` the norm of the best adversarial point found (= dist where
    resolved; an attack-grade upper bound where not), ``lam`` (E, n, M) that point as δ* = Wᵀλ, ``verified`` a dense
    forward pass misclassifies x + δ*, ``unstable`` the number of neurons branched on."""
    dist: torch.Tensor
    upper: torch.Tensor
    lam: torch.Tensor
    verified: torch.Tensor
    unstable: torch.Tensor

    def delta(self, W: torch.Tensor) -> torch.Tensor:
        """The minimisers δ* = Wᵀλ (E, n, d)."""
        return torch.bmm(self.lam.to(W.dtype), W.detach())


def _as_points(t, E: int, n: int, M: int | None, device) -> torch.Tensor:
    """A read-out coefficient (M,), (M, 1), (E, M), (E, n, M) — or a bias: scalar, (E,), (E, n) — as (E, n[, M])."""
    t = torch.as_tensor(0.0 if t is None else t, device=device).detach().to(device=device, dtype=F64)
    if M is None:
        return (t if t.dim() == 2 else t.reshape(-1, 1)).expand(E, n)
    if t.dim() == 2 and t.shape == (M, 1):
        t = t[:, 0]
    return (t.expand(E, n, M) if t.dim() == 1 else t[:, None] if t.dim() == 2 else t).expand(E, n, M)


def _h(z: torch.Tensor, a: torch.Tensor, a0: torch.Tensor, y: torch.Tensor, thr: torch.Tensor) -> torch.Tensor:
    """y·f(z) + θ·[y < 0]: ≤ 0 exactly on the target set (misclassified, with the tie rule above)."""
    return y * ((a * z.clamp_min(0)).sum(-1) + a0) + thr * (y < 0)


def exact_min_distance(W: torch.Tensor, b: torch.Tensor | None, a, x: torch.Tensor, y: torch.Tensor, *, a0=None,
                       upper: torch.Tensor | None = None, max_unstable: int = 12, rtol: float = 1e-8) -> ExactDistance:
    """The exact minimum ‖δ‖₂ with sgn f(x + δ) ≠ y for f(x) = Σ_r a_r ReLU(w_r·x + b_r) + a0, per replica and point.

    W (E, M, d), b (E, M) or None, a (M,), (M, 1), (E, M) or per point (E, n, M), x (E, n, d), y (E, n) in {±1},
    a0 a scalar, (E,) or (E, n). ``upper`` (E, n): known adversarial distances (e.g. an attack's) to start the
    bound. Points with more than ``max_unstable`` unstable neurons (3^k candidates) are left nan. Computed in float64
    on x's device; returned in x's dtype."""
    E, M, d = W.shape
    n, dev = x.shape[1], x.device
    if M > 62:
        raise ValueError(f"exact_min_distance: at most 62 neurons (faces are bit masks); got M={M}")
    Wd = W.detach().to(F64)
    z0 = torch.bmm(x.detach().to(F64), Wd.transpose(1, 2))
    if b is not None:
        z0 = z0 + b.detach().to(F64)[:, None, :]
    A, A0 = _as_points(a, E, n, M, dev), _as_points(a0, E, n, None, dev)
    yd = y.detach().to(dev, F64)
    G = torch.bmm(Wd, Wd.transpose(1, 2))
    wn = torch.diagonal(G, dim1=1, dim2=2).clamp_min(0).sqrt()
    thr = rtol * ((A.abs() * (z0.abs() + wn[:, None])).sum(-1) + A0.abs())
    up = torch.full((E, n), float("inf"), dtype=F64, device=dev) if upper is None else upper.detach().to(dev, F64)
    dist = torch.full((E, n), float("nan"), dtype=F64, device=dev)  # nan: a replica a timed run skipped
    found = torch.full((E, n), float("nan"), dtype=F64, device=dev)
    lam = torch.zeros(E, n, M, dtype=F64, device=dev)
    unst = torch.zeros(E, n, dtype=torch.long, device=dev)
    for e in meter.steps(E):  # a few replicas, timed, when an estimate is measured (featlab.meter)
        dist[e], found[e], lam[e], unst[e] = _replica(G[e], wn[e], z0[e], A[e], A0[e], yd[e], thr[e], up[e],
                                                      max_unstable)
    lam, found, verified = _strict_point(Wd, b, A, A0, x.detach().to(F64), yd, lam, found, thr)
    return ExactDistance(dist.to(x.dtype), found.to(x.dtype), lam.to(x.dtype), verified, unst)


def _strict_point(W, b, A, A0, x, y, lam, found, thr):
    """The returned point, misclassified strictly by a dense float64 forward pass (sgn 0 = −1). The minimiser lies
    on the boundary, so rounding can leave f(x + δ*) a hair on y's side (a candidate is accepted within θ/2); then
    the point returned is the first of (1 + 1e-6)·δ*, one Newton step across the boundary, δ* − y·(|f| + θ)·∇f/
    ‖∇f‖², and (at a vertex where several units are tight) the point that moves each tight unit θ to the side that
    pushes f away from y, that is misclassified; ``found`` (the returned norm, ≥ the distance) follows it.
    Returns (λ, found, verified)."""
    bias = 0 if b is None else b.detach().to(F64)[:, None]
    pre = lambda lm: torch.bmm(x + torch.bmm(lm, W), W.transpose(1, 2)) + bias
    f = lambda lm: (A * pre(lm).clamp_min(0)).sum(-1) + A0
    wrong = lambda v: torch.where(y > 0, v <= 0, v > 0)
    f1 = f(lam)
    grad = A * (pre(lam) > 0)  # ∇f = Wᵀ(a ⊙ 1[z > 0]): λ coordinates of the gradient
    G = torch.bmm(W, W.transpose(1, 2))
    gg = torch.einsum("enm,emk,enk->en", grad, G, grad).clamp_min(1e-300)
    newton = lam - (y * (f1.abs() + thr) / gg)[..., None] * grad
    z1 = pre(lam)
    tight = (z1.abs() <= 1e-9 * (z1.abs().amax(-1, keepdim=True) + 1)) & (A != 0)  # a vertex of several faces
    goal = torch.where(tight, -y[..., None] * A.sign() * thr[..., None], z1)  # each tight unit to y's far side
    Gt = G[:, None] * (tight[..., :, None] & tight[..., None, :])  # (E, n, M, M): G on the tight set
    face = lam + (torch.linalg.pinv(Gt, hermitian=True) @ (goal - z1)[..., None])[..., 0]
    ok = wrong(f1)
    movable = torch.isfinite(found) & (found > 0)  # x itself (found 0) is judged as it is, never moved
    for cand in (lam * (1 + 1e-6), newton, face):
        take = ~ok & movable & wrong(f(cand))
        lam = torch.where(take[..., None], cand, lam)
        ok = ok | take
    n2 = torch.einsum("enm,emk,enk->en", lam, G, lam).clamp_min(0)
    found = torch.where(torch.isfinite(found) & (found > 0), n2.sqrt(), found)
    return lam, found, torch.isfinite(found) & ok


def _replica(G, wn, z0, a, a0, y, thr, up, max_unstable):
    n, M = z0.shape
    tol = thr / 2
    best, lam = _rays(G, z0, a, a0, y, thr, tol)
    mis = _h(z0, a, a0, y, thr) <= tol
    best = torch.where(mis, 0.0, best)
    lam[mis] = 0.0
    K = int(torch.linalg.matrix_rank(G))
    U = torch.minimum(best, up)
    unst = torch.zeros(n, dtype=torch.long, device=z0.device)
    done = mis.clone()
    for _ in range(3):  # pass 2 only where a given ``upper`` was below the truth; pass 3 never runs in exact arithmetic
        unstable = (z0.abs() < U[:, None] * wn * (1 + 1e-9)) & (a != 0)
        k = unstable.sum(-1)
        unst = torch.where(done, unst, k)
        todo = ~done & (k <= max_unstable)
        for kk in k[todo].unique().tolist():
            idx = (todo & (k == kk)).nonzero().squeeze(1)
            umap = torch.sort(unstable[idx].to(torch.int8), dim=1, descending=True, stable=True).indices[:, :kk]
            base = a[idx] * ((z0[idx] >= 0) & ~unstable[idx])
            b2, lb = _bucket(G, z0[idx], a[idx], a0[idx], y[idx], thr[idx], tol[idx], umap, U[idx].clone(), base, K)
            better = b2.sqrt() < best[idx]
            best[idx] = torch.where(better, b2.sqrt(), best[idx])
            lam[idx] = torch.where(better[:, None], lb, lam[idx])
        exact = todo & (best <= U * (1 + 1e-9))
        done |= exact
        again = todo & ~exact
        if not again.any():
            break
        U = torch.where(again, best, U)  # a verified bound now: the next pass is exact
    n2 = torch.einsum("nm,mk,nk->n", lam, G, lam).clamp_min(0)
    found = torch.where(torch.isfinite(best) & (best > 0), n2.sqrt(), best)  # the norm of the point returned
    return torch.where(done, found, float("nan")), found, lam, unst


def _rays(G, z0, a, a0, y, thr, tol):
    """Exact line searches from x along −y∇f and ±w_r: the nearest target point on each ray (f is piecewise linear
    along it, with a breakpoint where a neuron switches). Returns (distance (n,), λ (n, M)) of the best ray."""
    n, M = z0.shape
    dev = z0.device
    mus = [(-y[:, None] * a * (z0 >= 0))[:, None]]
    if M <= 16:
        eye = torch.eye(M, dtype=F64, device=dev).expand(n, M, M)
        mus += [eye, -eye]
    mu = torch.cat(mus, 1)  # (n, D, M)
    nrm = torch.einsum("ndm,mk,ndk->nd", mu, G, mu).clamp_min(0).sqrt()
    mu = mu / nrm.clamp_min(1e-300)[..., None]
    s = mu @ G  # dz/dt per unit ‖δ‖
    t = -z0[:, None] / s
    t = torch.where((t > 0) & torch.isfinite(t), t, float("inf")).sort(-1).values
    tmax = torch.where(torch.isfinite(t), t, 0.0).amax(-1, keepdim=True)
    ts = torch.cat([torch.zeros_like(t[..., :1]), torch.minimum(t, tmax), tmax + 1], -1)  # (n, D, M + 2)
    H = _h(z0[:, None, None] + ts[..., None] * s[:, :, None], a[:, None, None], a0[:, None, None],
           y[:, None, None], thr[:, None, None])
    hit = H[..., :-1] <= 0
    j = torch.where(hit.any(-1), hit.to(torch.int8).argmax(-1), M + 1).clamp(min=1)  # first breakpoint past the target
    h0, h1 = H.gather(-1, (j - 1)[..., None])[..., 0], H.gather(-1, j[..., None])[..., 0]
    t0, t1 = ts.gather(-1, (j - 1)[..., None])[..., 0], ts.gather(-1, j[..., None])[..., 0]
    tstar = t0 + h0 / (h0 - h1) * (t1 - t0)  # on the last piece the line beyond tmax, where it descends
    lam = tstar.clamp_min(0)[..., None] * mu
    ok = (nrm > 0) & (h0 > h1) & (_h(z0[:, None] + lam @ G, a[:, None], a0[:, None], y[:, None],
                                     thr[:, None]) <= tol[:, None]) & torch.isfinite(tstar)
    dist = torch.where(ok, tstar, float("inf"))
    best, i = dist.min(-1)
    return best, lam[torch.arange(n, device=dev), i]


@lru_cache(maxsize=64)
def _level(k: int, L: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The faces A ⊂ {0..k−1} with |A| = L (C, L), and for each the 2^(k−L) patterns τ of the other neurons as 0/1
    indicators (C, T, k). Built once per (k, L) on the CPU."""
    faces = list(combinations(range(k), L))
    tau = torch.zeros(len(faces), 1 << (k - L), k, dtype=torch.bool, device="cpu")
    for c, A in enumerate(faces):
        rest = [i for i in range(k) if i not in A]
        for i, r in enumerate(rest):
            tau[c, :, r] = ((torch.arange(1 << len(rest), device="cpu") >> i) & 1).bool()
    return torch.tensor(faces, dtype=torch.long, device="cpu").reshape(len(faces), L), tau


def _bucket(G, z0, a, a0, y, thr, tol, umap, U, base, K):
    """The best candidate of each point (all with the same number k of unstable neurons, listed in umap (p, k))."""
    p, k = umap.shape
    M, dev = G.shape[0], G.device
    best = torch.full((p,), float("inf"), dtype=F64, device=dev)
    lam = torch.zeros(p, M, dtype=F64, device=dev)
    bits = torch.arange(M, device=dev)
    onehot = torch.nn.functional.one_hot(umap, M).to(F64)  # (p, k, M)
    for L in range(min(k, K) + 1):
        loc, tau = (t.to(dev) for t in _level(k, L))
        gm = (1 << umap)[:, loc].sum(-1) if L else torch.zeros(p, 1, dtype=torch.long, device=dev)  # (p, C)
        uniq, inv = gm.unique(return_inverse=True)
        mask = ((uniq[:, None] >> bits) & 1).bool()
        P = torch.linalg.pinv(G * (mask[:, :, None] & mask[:, None, :]), hermitian=True, rtol=1e-10)
        pi = torch.arange(p, device=dev)[:, None].expand_as(gm).reshape(-1)
        ci = torch.arange(len(loc), device=dev).expand_as(gm).reshape(-1)
        fi = inv.reshape(-1)
        step = max(1, CHUNK // (M * M))
        lamA = torch.cat([-(P[fi[i: i + step]] @ z0[pi[i: i + step], :, None])[..., 0]
                          for i in range(0, len(fi), step)]) if len(fi) else z0[:0]
        n2A = torch.einsum("nm,mk,nk->n", lamA, G, lamA)
        keep = n2A < U[pi] ** 2 * (1 + 1e-9)
        pi, ci, fi, lamA, n2A = pi[keep], ci[keep], fi[keep], lamA[keep], n2A[keep]
        zA = z0[pi] + lamA @ G
        ok = _h(zA, a[pi], a0[pi], y[pi], thr[pi]) <= tol[pi]
        _update(best, lam, pi, n2A, lamA, ok)
        T = 1 << (k - L)
        if not len(pi):
            U = torch.minimum(U, best.sqrt())
            continue
        step = max(1, CHUNK // (max(T, M) * M * 2))
        for s0 in range(0, len(pi), step):
            sl = slice(s0, s0 + step)
            q_pi, q_fi = pi[sl], fi[sl]
            V = base[q_pi][:, None] + torch.bmm(tau[ci[sl]].to(F64), onehot[q_pi]) * a[q_pi][:, None]  # (N, T, M)
            GV = V @ G
            nu = V - torch.bmm(GV, P[q_fi])  # ν = v − P_A G v: the boundary's normal projected off the face's normals
            Sv = nu @ G
            q = (V * Sv).sum(-1)
            g = (V * zA[sl][:, None]).sum(-1) + a0[q_pi][:, None]
            target = (thr[q_pi] * (y[q_pi] < 0))[:, None]
            t = (target - g) / torch.where(q > 0, q, 1.0)
            valid = q > 1e-12 * (V * GV).sum(-1)
            z = zA[sl][:, None] + t[..., None] * Sv
            n2 = n2A[sl][:, None] + t * t * q
            hz = _h(z, a[q_pi][:, None], a0[q_pi][:, None], y[q_pi][:, None], thr[q_pi][:, None])
            okz = valid & (hz <= tol[q_pi][:, None])
            lz = lamA[sl][:, None] + t[..., None] * nu
            _update(best, lam, q_pi[:, None].expand_as(n2).reshape(-1), n2.reshape(-1), lz.reshape(-1, M),
                    okz.reshape(-1))
        U = torch.minimum(U, best.sqrt())
    return best, lam


def _update(best, lam, pi, n2, lz, ok) -> None:
    """best[p] = min(best[p], n2 over the ok candidates of p), lam[p] its λ (in place)."""
    if not ok.any():
        return
    pi, n2, lz = pi[ok], n2[ok], lz[ok]
    mins = torch.full_like(best, float("inf")).scatter_reduce(0, pi, n2, "amin")
    win = torch.full(best.shape, -1, dtype=torch.long, device=pi.device)
    cand = torch.where(n2 == mins[pi], torch.arange(len(pi), device=pi.device), -1)
    win = win.scatter_reduce(0, pi, cand, "amax")
    imp = (mins < best) & (win >= 0)
    best[imp] = mins[imp]
    lam[imp] = lz[win[imp]]
