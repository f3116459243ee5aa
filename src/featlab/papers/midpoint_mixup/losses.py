"""ERM, Mixup and Midpoint Mixup objectives for replica-batched models (Chidambaram et al. 2023, Eqs. 2.1–3.1).

All take a model with ``preactivation(x)`` (E, n, [P,] M), an ``activation`` and a fixed read-out ``A`` (M, k) —
:class:`~featlab.nn.twolayer.EnsembleTwoLayer` — and return the (E,) per-replica losses.

The first layer is linear, so the pre-activations of a mixed point z_ij(λ) = λx_i + (1 − λ)x_j are
λH_i + (1 − λ)H_j with H = Wx (+ b: λ + (1 − λ) = 1). The all-pairs losses therefore never materialise the N²
mixed inputs: they combine the N endpoints' pre-activations, in chunks of pairs (checkpointed, so memory is
bounded by the chunk). ``mult`` (P,) weights patches that :func:`~featlab.data.multiview.compress_patches` merged.
"""

from __future__ import annotations

import math

import torch
from torch.utils.checkpoint import checkpoint

from ...train.objectives import cross_entropy


def _preact(model, x: torch.Tensor) -> torch.Tensor:
    H = model.preactivation(x, shared=False)
    return H if H.dim() == 4 else H.unsqueeze(2)  # (E, n, P, M); the linear model has P = 1


def logits_from_preact(model, H: torch.Tensor, mult: torch.Tensor | None = None) -> torch.Tensor:
    """g(x) = A^T Σ_p mult_p act(H_p): (E, ..., P, M) → (E, ..., k).  (Eq. 4.1)"""
    a = model.activation(H)
    a = a.sum(-2) if mult is None else (a * mult.to(a.dtype)[:, None]).sum(-2)
    return a @ model.A


def patch_logits(model, x: torch.Tensor, mult: torch.Tensor | None = None) -> torch.Tensor:
    return logits_from_preact(model, _preact(model, x), mult)


# ------------------------------------------------------------------------------------------ ERM, Eq. 2.1
def erm_loss(model, x: torch.Tensor, y: torch.Tensor, mult: torch.Tensor | None = None) -> torch.Tensor:
    """J(g, X) = −(1/N) Σ_i log φ_{y_i}(g(x_i))."""
    return cross_entropy(patch_logits(model, x, mult), y)


# ------------------------------------------------------------------------------------------ J_MM, Eq. 3.1
def _mm_chunk(model, H, y, iu, ju, w, mult):
    Hp = (H[:, iu] + H[:, ju]) / 2  # pre-activations of z_ij = (x_i + x_j)/2
    logp = logits_from_preact(model, Hp, mult).log_softmax(-1)  # (E, c, k)
    li = logp.gather(-1, y[:, iu, None]).squeeze(-1)
    lj = logp.gather(-1, y[:, ju, None]).squeeze(-1)
    return ((li + lj) * w).sum(-1)


def midpoint_all_pairs_loss(model, x: torch.Tensor, y: torch.Tensor, mult: torch.Tensor | None = None,
                            chunk: int = 1 << 14) -> torch.Tensor:
    """J_MM(g, X) = −1/(2N²) Σ_{i,j ∈ [N]} [log φ_{y_i} + log φ_{y_j}](g(z_ij)) over all N² ordered pairs (Eq. 3.1).

    z_ij = z_ji and the summand is symmetric, so the N(N+1)/2 unordered pairs i ≤ j are evaluated once, off-diagonal
    ones with weight 2. ``chunk`` pairs at a time.
    """
    H = _preact(model, x)
    N = H.shape[1]
    iu, ju = torch.triu_indices(N, N, device=H.device)
    w = torch.where(iu == ju, 1.0, 2.0).to(H.dtype)
    total = 0.0
    n_chunks = math.ceil(len(iu) / chunk)
    for c in range(n_chunks):
        sl = slice(c * chunk, (c + 1) * chunk)
        args = (model, H, y, iu[sl], ju[sl], w[sl], mult)
        part = checkpoint(_mm_chunk, *args, use_reentrant=False) if n_chunks > 1 else _mm_chunk(*args)
        total = total + part
    return -total / (2 * N * N)


def naive_midpoint_loss(model, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """J_MM by materialising all N² midpoint inputs (x_i + x_j)/2 — the reference the all-pairs loss is tested and
    benchmarked against."""
    E, N = y.shape
    z = (x[:, :, None] + x[:, None, :]) / 2  # (E, N, N, ...)
    logp = model(z.reshape(E, N * N, *x.shape[2:]), shared=False).log_softmax(-1).reshape(E, N, N, -1)
    yi = y[:, :, None].expand(E, N, N)
    yj = y[:, None, :].expand(E, N, N)
    li = logp.gather(-1, yi[..., None]).squeeze(-1)
    lj = logp.gather(-1, yj[..., None]).squeeze(-1)
    return -(li + lj).sum((1, 2)) / (2 * N * N)


def naive_midpoint_loss_merged(model, x: torch.Tensor, y: torch.Tensor, mult: torch.Tensor | None) -> torch.Tensor:
    """As :func:`naive_midpoint_loss` (materialised midpoints) on patch-merged inputs with multiplicities."""
    E, N = y.shape
    z = (x[:, :, None] + x[:, None, :]) / 2
    logp = patch_logits(model, z.reshape(E, N * N, *x.shape[2:]), mult).log_softmax(-1).reshape(E, N, N, -1)
    li = logp.gather(-1, y[:, :, None, None].expand(E, N, N, 1)).squeeze(-1)
    lj = logp.gather(-1, y[:, None, :, None].expand(E, N, N, 1)).squeeze(-1)
    return -(li + lj).sum((1, 2)) / (2 * N * N)


# ------------------------------------------------------------------------------------------ J_M, Eq. 2.2
def _mix_chunk(model, H, y, iu, ju, w, lam, mult):
    lm = lam[:, :, None, None]  # (E, c, 1, 1)
    Hz = lm * H[:, iu] + (1 - lm) * H[:, ju]  # pre-activations of z_ij(λ) = λx_i + (1 − λ)x_j
    logp = logits_from_preact(model, Hz, mult).log_softmax(-1)
    li = logp.gather(-1, y[:, iu, None]).squeeze(-1)
    lj = logp.gather(-1, y[:, ju, None]).squeeze(-1)
    return ((lam * li + (1 - lam) * lj) * w).sum(-1)


def mixup_all_pairs_loss(model, x: torch.Tensor, y: torch.Tensor, lam: torch.Tensor,
                         weights: torch.Tensor | None = None, mult: torch.Tensor | None = None,
                         symmetric: bool = True, chunk: int = 1 << 14) -> torch.Tensor:
    """J_M(g, X, D_λ) = −1/N² Σ_{i,j} E_λ[λ log φ_{y_i} + (1 − λ) log φ_{y_j}](g(z_ij(λ))) (Eq. 2.2) over all N²
    ordered pairs, with E_λ replaced by the values ``lam`` — (L,) shared or (E, L) per replica — and ``weights``
    (L,) (default 1/L): Monte Carlo draws (unbiased) or quadrature nodes.

    ``symmetric``: D_λ is symmetric about ½ (Beta(a, a)). The ordered pair (j, i) at λ is the same mixed point and
    term as (i, j) at 1 − λ, so E_λ over both equals 2·E_λ over i < j: only the N(N+1)/2 unordered pairs are
    evaluated (exact when the λ set is symmetric, unbiased for draws of a symmetric D_λ). False: all N² pairs.
    """
    H = _preact(model, x)
    E, N = y.shape
    lam = lam.to(H.dtype)
    lam = lam.expand(E, -1) if lam.dim() == 1 else lam
    L = lam.shape[1]
    wts = torch.full((L,), 1.0 / L, dtype=H.dtype) if weights is None else weights.to(H.dtype)
    if symmetric:
        iu, ju = torch.triu_indices(N, N, device=H.device)
        w = torch.where(iu == ju, 1.0, 2.0).to(H.dtype)
    else:
        iu = torch.arange(N, device=H.device).repeat_interleave(N)
        ju = torch.arange(N, device=H.device).repeat(N)
        w = torch.ones(N * N, dtype=H.dtype)
    n_chunks = math.ceil(len(iu) / chunk)
    total = 0.0
    for l in range(L):
        for c in range(n_chunks):
            sl = slice(c * chunk, (c + 1) * chunk)
            lam_c = lam[:, l: l + 1].expand(E, len(iu[sl]))
            args = (model, H, y, iu[sl], ju[sl], w[sl], lam_c, mult)
            part = checkpoint(_mix_chunk, *args, use_reentrant=False) if n_chunks > 1 else _mix_chunk(*args)
            total = total + wts[l] * part
    return -total / (N * N)


# ------------------------------------------------------------------------------------------ sampled pairs (practice)
def sample_partners(gens: list[torch.Generator], n: int, allow_self_pairs: bool = True) -> torch.Tensor:
    """(E, n) partner j of every example i, uniform over the training set (the public code; self-pairs allowed)
    or a uniform j ≠ i. One generator per replica, so replica i sees exactly seed i's draws."""
    out = []
    for g in gens:
        if allow_self_pairs:
            out.append(torch.randint(n, (n,), generator=g))
        else:
            j = torch.randint(n - 1, (n,), generator=g)
            out.append(j + (j >= torch.arange(n)).long())
    return torch.stack(out)


def sample_beta(gens: list[torch.Generator], a: float, size: int) -> torch.Tensor:
    """(E, size) draws of λ ~ Beta(a, a) (from two Gammas, honouring each replica's generator)."""
    out = []
    for g in gens:
        aa = torch.full((size,), float(a), dtype=torch.float64)
        g1 = torch._standard_gamma(aa, generator=g)
        g2 = torch._standard_gamma(aa, generator=g)
        out.append(g1 / (g1 + g2))
    return torch.stack(out)


def mixup_sampled_loss(model, x: torch.Tensor, y: torch.Tensor, partner: torch.Tensor, lam: torch.Tensor,
                       mult: torch.Tensor | None = None) -> torch.Tensor:
    """The practice (Zhang et al. 2018): −1/N Σ_i [λ_i log φ_{y_i} + (1 − λ_i) log φ_{y_{j(i)}}](g(z_{i,j(i)}(λ_i))).

    partner (E, N) indices j(i); lam (E, N) per example or (E, 1) per batch (λ = ½ for Midpoint Mixup)."""
    H = _preact(model, x)
    E, N = y.shape
    Hj = H.gather(1, partner.to(H.device)[:, :, None, None].expand(-1, -1, *H.shape[2:]))
    lam = lam.to(H.dtype).expand(E, N) if lam.shape[1] == 1 else lam.to(H.dtype)
    lm = lam[:, :, None, None]
    logp = logits_from_preact(model, lm * H + (1 - lm) * Hj, mult).log_softmax(-1)
    yj = y.gather(1, partner.to(y.device))
    li = logp.gather(-1, y[..., None]).squeeze(-1)
    lj = logp.gather(-1, yj[..., None]).squeeze(-1)
    return -(lam * li + (1 - lam) * lj).mean(-1)


# ------------------------------------------------------------------------------------------ App. C: infima
def beta_entropy(a: float) -> float:
    """−E_{λ~Beta(a,a)}[λ log λ + (1 − λ) log(1 − λ)] = ψ(2a + 1) − ψ(a + 1) (App. C, Eq. C.2); log 2 as a → ∞."""
    if math.isinf(a):
        return math.log(2.0)
    return float(torch.special.digamma(torch.tensor(2 * a + 1, dtype=torch.float64))
                 - torch.special.digamma(torch.tensor(a + 1, dtype=torch.float64)))


def cross_class_fraction(y: torch.Tensor) -> torch.Tensor:
    """(E,): share of the N² ordered pairs (i, j) with y_i ≠ y_j."""
    k = int(y.max()) + 1
    counts = torch.nn.functional.one_hot(y.long(), k).sum(1).double()  # (E, k)
    N = y.shape[1]
    return 1 - (counts**2).sum(-1) / N**2


def mixup_infimum(y: torch.Tensor, a: float) -> torch.Tensor:
    """inf_h J_M(h, X, Beta(a, a)) (E,): each cross-class mixed point costs the binary entropy of λ, same-class
    ones 0 (App. C); a = inf gives Midpoint Mixup's log 2 per cross-class pair."""
    return cross_class_fraction(y) * beta_entropy(a)
