"""ℓ2 PGD for scores that read the input through one linear layer, run exactly in a (K+1)-dimensional subspace.

For a score s(x) = head(W x + b) with W ∈ R^{M×d} (every two-layer net of the three papers; M ≪ d), the gradient
∇_x s = Wᵀ ∂head/∂z lies in the row space of W. Write Wᵀ = Q R (reduced QR, Q ∈ R^{d×K} orthonormal, K = min(M, d)):
every PGD iterate is δ = Q c + σ v⊥ with c ∈ R^K, a fixed unit v⊥ ⟂ span(Q) (the random start's orthogonal part) and
a scalar σ ≥ 0, and

    W δ = Rᵀ c,    ‖δ‖² = ‖c‖² + σ²,    ∇ in Q coordinates = R ∂head/∂z.

So a step costs O(K·M) per point instead of O(d): the same iterates as dense PGD (:func:`~.robustness.pgd_l2`,
equal up to rounding, tested), the same random start in distribution (ξ ~ N(0, I_d): Qᵀξ ~ N(0, I_K) and
‖ξ⊥‖² ~ χ²_{d−K}). A point counts as fooled only after x + Q c — a point of the ball, since W v⊥ = 0 it has the
same score as x + δ — is misclassified by the dense score itself: rounding in the subspace never invents a success.
Each replica draws from its own generator, so replica i in a batch gives exactly what it gives alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import torch

from .. import meter
from .survivors import check_radii, survivor_masks

Head = Callable[[torch.Tensor], torch.Tensor]


class LinearHead(NamedTuple):
    """s(x) = head(x Wᵀ + b) per replica: W (E, M, d), b (E, M) or None, head (E, n, M) → (E, n)."""
    W: torch.Tensor
    b: torch.Tensor | None
    head: Head


class Subspace(NamedTuple):
    z0: torch.Tensor  # (E, n, M): the clean pre-activations
    Q: torch.Tensor   # (E, d, K)
    R: torch.Tensor   # (E, K, M)


def subspace(lin: LinearHead, x: torch.Tensor) -> Subspace:
    """The clean pre-activations and the reduced QR of Wᵀ per replica (x: (E, n, d))."""
    W = lin.W.detach().to(x.dtype)
    z0 = torch.bmm(x, W.transpose(1, 2))
    if lin.b is not None:
        z0 = z0 + lin.b.detach().to(x.dtype)[:, None, :]
    Q, R = torch.linalg.qr(W.transpose(1, 2), mode="reduced")
    return Subspace(z0, Q, R)


def random_start(n: int, d: int, K: int, eps: float, generators: Sequence[torch.Generator], dtype, device):
    """Uniform in the ℓ2 ball of radius eps, in subspace coordinates: (c (E, n, K), σ (E, n)), replica e drawn
    from ``generators[e]`` alone. δ = ρ ξ/‖ξ‖ with ρ = eps·U^{1/d}, ξ ~ N(0, I_d) split as (Qᵀξ, ‖ξ⊥‖)."""
    cs, ss = [], []
    for g in generators:
        a = torch.randn(n, K, generator=g, dtype=torch.float64, device="cpu")  # CPU stream, then moved
        u = torch.rand(n, generator=g, dtype=torch.float64, device="cpu").pow(1.0 / d)
        seed = int(torch.randint(0, 2**62, (1,), generator=g, device="cpu"))  # the χ² draw, keyed on the same stream
        chi2 = (torch.from_numpy(np.random.default_rng(seed).chisquare(d - K, n)) if d > K
                else torch.zeros(n, dtype=a.dtype, device="cpu"))
        norm = (a.pow(2).sum(-1) + chi2).sqrt().clamp_min(1e-300)
        cs.append(a * (eps * u / norm)[:, None])
        ss.append(chi2.sqrt() * eps * u / norm)
    return torch.stack(cs).to(device=device, dtype=dtype), torch.stack(ss).to(device=device, dtype=dtype)


def _correct(score: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.where(score > 0, 1.0, -1.0).to(score.dtype) == y  # sgn(0) = −1


def subspace_pgd(sub: Subspace, y: torch.Tensor, eps: float, *, steps: int, step_size: float,
                 head: Head, grad_head: Head | None = None, c0: torch.Tensor | None = None,
                 s0: torch.Tensor | None = None, todo: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """One PGD run (steps + 1 iterates judged, like :func:`~.robustness.pgd_l2`) from (c0, σ0) (None: 0) on the
    margin y·grad_head (default head); judged on ``head``. Returns (fooled (E, n) by the subspace score, c of the
    first fooling iterate (E, n, K)). ``todo``: the points that count (others never report fooled)."""
    z0, Q, R = sub
    E, n, M = z0.shape
    K = R.shape[1]
    y = y.to(z0.dtype)
    c = torch.zeros(E, n, K, dtype=z0.dtype, device=z0.device) if c0 is None else c0.clone()
    s = torch.zeros(E, n, dtype=z0.dtype, device=z0.device) if s0 is None else s0.clone()
    fooled = torch.zeros(E, n, dtype=torch.bool, device=z0.device)
    c_hit = torch.zeros_like(c)
    Rt = R.transpose(1, 2)
    for t in meter.steps(steps + 1):  # a few, timed, when an estimate is measured (featlab.meter)
        z = (z0 + torch.bmm(c, R)).requires_grad_(True)
        with torch.enable_grad():
            out = head(z) if grad_head is None else grad_head(z)
            margin = (y * out).sum()
        judged = out.detach() if grad_head is None else head(z.detach())
        hit = ~_correct(judged, y) & ~fooled
        if todo is not None:
            hit &= todo
        if hit.any():
            c_hit[hit] = c[hit]
            fooled |= hit
        if t == steps:
            break
        (g,) = torch.autograd.grad(margin, z)
        cg = torch.bmm(g, Rt)  # the gradient in Q coordinates: its norm is the dense gradient's
        c = c - step_size * cg / cg.norm(dim=-1, keepdim=True).clamp_min(1e-30)
        f = torch.clamp(eps / (c.pow(2).sum(-1) + s * s).sqrt().clamp_min(1e-30), max=1.0)  # project onto the ball
        c = c * f[..., None]
        s = s * f
    return fooled, c_hit


@torch.no_grad()
def subspace_masks(score: Head, lin: LinearHead, x: torch.Tensor, y: torch.Tensor, radii: list[float], *,
                   steps: int = 50, step_size_factor: float = 2.5, random_start_: bool = True, restarts: int = 1,
                   generators: Sequence[torch.Generator], grad_head: Head | None = None,
                   certified: torch.Tensor | None = None, progress=None, dim: int | None = None) -> torch.Tensor:
    """Which points (E, n) stay correct under subspace PGD at each radius: (R, E, n) bool, the semantics of
    :func:`~.robustness.robust_masks` (:func:`~.survivors.survivor_masks` of subspace PGD: radii in increasing
    order on the survivors; ``certified`` points skipped; one generator per replica). ``score`` is the dense score
    x ↦ head(x Wᵀ + b), used to confirm every success.
    ``dim``: the dimension the inputs live in when ``x`` holds reduced coordinates of them (default x's last axis);
    the random start is uniform in that ball, so its part outside span(W) has the law of the full space's."""
    radii = check_radii(radii)
    if len(generators) != x.shape[0]:
        raise ValueError(f"generators: one per replica ({x.shape[0]}); got {len(generators)}")
    E, n, d = x.shape
    yd = y.to(x.dtype)
    sub = subspace(lin, x)
    K = sub.R.shape[1]

    def attack(todo: torch.Tensor, r: float) -> torch.Tensor:
        broken = torch.zeros_like(todo)
        for _ in range(restarts):
            if not todo.any():
                break
            c0, s0 = (random_start(n, dim or d, K, r, generators, x.dtype, x.device) if random_start_
                      else (None, None))
            fooled, c_hit = subspace_pgd(sub, yd, r, steps=steps, step_size=step_size_factor * r / steps,
                                         head=lin.head, grad_head=grad_head, c0=c0, s0=s0, todo=todo)
            if fooled.any():  # confirm on the dense score: x + Q c lies in the ball and scores as x + δ
                e, i = fooled.nonzero(as_tuple=True)
                conf = torch.zeros_like(fooled)
                conf[e, i] = ~_correct(_score_points(score, x[e, i] + _from_coords(sub.Q, c_hit, e, i), e, E
                                                     ).to(x.dtype), yd[e, i])
                broken |= conf
                todo = todo & ~conf
        return broken

    alive = _correct(score(x).to(x.dtype), yd)
    return survivor_masks(radii, alive, attack, certified=certified, progress=progress)[0]


def _from_coords(Q: torch.Tensor, c: torch.Tensor, e: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
    """Q_e c_{e,i} for the listed points (p, d), replica by replica (never gathering a (p, d, K) copy of Q)."""
    out = torch.empty(len(e), Q.shape[1], dtype=Q.dtype, device=Q.device)
    for r in e.unique().tolist():
        m = e == r
        out[m] = c[r, i[m]] @ Q[r].T
    return out


def _score_points(score: Head, xa: torch.Tensor, e: torch.Tensor, E: int) -> torch.Tensor:
    """The replica-batched score at points xa (p, d) belonging to replicas e (p,): one padded (E, max, d) call."""
    cnt = torch.bincount(e, minlength=E)
    slot = torch.cat([torch.arange(int(c_), device=e.device) for c_ in cnt])  # e is sorted (nonzero order)
    buf = torch.zeros(E, int(cnt.max()), xa.shape[-1], dtype=xa.dtype, device=xa.device)
    buf[e, slot] = xa
    return score(buf)[e, slot]


@torch.no_grad()
def subspace_direction_masks(score: Head, lin: LinearHead, x: torch.Tensor, y: torch.Tensor, radii: list[float],
                             directions: Callable) -> torch.Tensor:
    """:func:`~.robustness.direction_masks` for s(x) = head(x Wᵀ + b): each unit direction u is read once as
    W u, so a radius costs O(M) per point; every flip is confirmed on the dense score at x + r·u. (R, E, n) bool.

    ``directions()`` yields tensors of unit directions broadcastable to x, or pairs (table (E, T, d), index (E, n)):
    point i of replica e moves along table[e, index[e, i]] — e.g. from its own centre towards another, T = k."""
    yd = y.to(x.dtype)
    z0 = subspace(lin, x).z0
    Wt = lin.W.detach().to(x.dtype).transpose(1, 2)
    tables = [_as_table(u, x) for u in directions()]
    dirs = [(table, idx, torch.bmm(table, Wt).gather(1, idx[..., None].expand(-1, -1, Wt.shape[-1])))
            for table, idx in tables]  # W u per point: (E, n or 1, M)

    def attack(todo: torch.Tensor, r: float) -> torch.Tensor:
        alive = todo
        for table, idx, wu in dirs:
            flip = alive & ~_correct(lin.head(z0 + r * wu), yd)
            if flip.any():
                e, j = flip.nonzero(as_tuple=True)
                xa = x[e, j] + r * table[e, idx[e, j.clamp(max=idx.shape[1] - 1)]]
                conf = torch.zeros_like(flip)
                conf[e, j] = ~_correct(_score_points(score, xa, e, x.shape[0]).to(x.dtype), yd[e, j])
                alive = alive & ~conf
        return todo & ~alive

    return survivor_masks(radii, _correct(score(x).to(x.dtype), yd), attack)[0]


def _as_table(u, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A direction as (table (E, T, d), index (E, n or 1)): a tensor (E or 1, n or 1, d) is its own table."""
    if isinstance(u, tuple):
        return u
    u = u.expand(x.shape[0], -1, -1)
    idx = torch.arange(u.shape[1], device=x.device).expand(x.shape[0], -1)
    return u, idx

