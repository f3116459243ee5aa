"""ERM, Mixup and Midpoint Mixup objectives for replica-batched models (Chidambaram et al. 2023, Eqs. 2.1–3.1).

All take a model with ``preactivation(x)`` (E, n, [P,] M), an ``activation`` and a fixed read-out ``A`` (M, k) —
:class:`~featlab.nn.twolayer.EnsembleTwoLayer`, read out by its patch logits (``featlab.nn.twolayer``) — and return
the (E,) per-replica losses.

The first layer is linear, so the pre-activations of a mixed point z_ij(λ) = λx_i + (1 − λ)x_j are
λH_i + (1 − λ)H_j with H = Wx (+ b: λ + (1 − λ) = 1). The all-pairs losses therefore never materialise the N²
mixed inputs: they combine the N endpoints' pre-activations over blocks of the pair grid with a hand-written
gradient (:mod:`.pairs`), so memory is bounded by a block. ``mult`` (P,) weights patches that
:func:`.data.compress_patches` merged.
"""

from __future__ import annotations

import math

import torch

from ...nn.twolayer import logits_from_preact, patch_logits, patch_preactivation
from ...train.mixup import random_pairing, sample_beta
from ...train.objectives import cross_entropy
from ...utils import generator
from .pairs import all_pairs_sum
from .rival_losses import rival_loss


# ------------------------------------------------------------------------------------------ ERM, Eq. 2.1
def erm_loss(model, x: torch.Tensor, y: torch.Tensor, mult: torch.Tensor | None = None) -> torch.Tensor:
    """J(g, X) = −(1/N) Σ_i log φ_{y_i}(g(x_i))."""
    return cross_entropy(patch_logits(model, x, mult), y)


# ------------------------------------------------------------------------------------------ J_MM, Eq. 3.1
def midpoint_all_pairs_loss(model, x: torch.Tensor, y: torch.Tensor, mult: torch.Tensor | None = None,
                            chunk: int | None = None, kernel: str = "auto") -> torch.Tensor:
    """J_MM(g, X) = −1/(2N²) Σ_{i,j ∈ [N]} [log φ_{y_i} + log φ_{y_j}](g(z_ij)) over all N² ordered pairs (Eq. 3.1).

    z_ij = z_ji and the summand is symmetric, so the N(N+1)/2 unordered pairs i ≤ j are evaluated once, off-diagonal
    ones with weight 2 (blocks of at most ``chunk`` pairs, see :func:`.pairs.all_pairs_sum`, which also explains
    ``kernel``: fused numba pass on the CPU or the torch reference). It is Eq. 2.2 at λ = ½: ½ log φ_{y_i} +
    ½ log φ_{y_j} summed over N² pairs and divided by N².
    """
    H = patch_preactivation(model, x)
    half = torch.full((H.shape[0], 1), 0.5, dtype=H.dtype, device=H.device)
    return -all_pairs_sum(model, H, y, half, torch.ones(1, dtype=H.dtype, device=H.device), mult,
                          symmetric=True, chunk=chunk, kernel=kernel) / y.shape[1] ** 2


def naive_midpoint_loss(model, x: torch.Tensor, y: torch.Tensor, mult: torch.Tensor | None = None) -> torch.Tensor:
    """J_MM by materialising all N² midpoint inputs (x_i + x_j)/2 (on patch-merged inputs, weighted by ``mult``) —
    the reference the all-pairs loss is tested and benchmarked against."""
    E, N = y.shape
    z = (x[:, :, None] + x[:, None, :]) / 2  # (E, N, N, ...)
    logp = patch_logits(model, z.reshape(E, N * N, *x.shape[2:]), mult).log_softmax(-1).reshape(E, N, N, -1)
    li = logp.gather(-1, y[:, :, None, None].expand(E, N, N, 1)).squeeze(-1)
    lj = logp.gather(-1, y[:, None, :, None].expand(E, N, N, 1)).squeeze(-1)
    return -(li + lj).sum((1, 2)) / (2 * N * N)


# ------------------------------------------------------------------------------------------ J_M, Eq. 2.2
def mixup_all_pairs_loss(model, x: torch.Tensor, y: torch.Tensor, lam: torch.Tensor,
                         weights: torch.Tensor | None = None, mult: torch.Tensor | None = None,
                         symmetric: bool = True, chunk: int | None = None, kernel: str = "auto") -> torch.Tensor:
    """J_M(g, X, D_λ) = −1/N² Σ_{i,j} E_λ[λ log φ_{y_i} + (1 − λ) log φ_{y_j}](g(z_ij(λ))) (Eq. 2.2) over all N²
    ordered pairs, with E_λ replaced by the values ``lam`` — (L,) shared or (E, L) per replica — and ``weights``
    (L,) (default 1/L): Monte Carlo draws (unbiased) or quadrature nodes.

    ``symmetric``: D_λ is symmetric about ½ (Beta(a, a)). The ordered pair (j, i) at λ is the same mixed point and
    term as (i, j) at 1 − λ, so E_λ over both equals 2·E_λ over i < j: only the N(N+1)/2 unordered pairs are
    evaluated (exact when the λ set is symmetric, unbiased for draws of a symmetric D_λ). False: all N² pairs.
    ``kernel``: "auto" | "fused" | "reference", see :func:`.pairs.all_pairs_sum`.
    """
    H = patch_preactivation(model, x)
    E, N = y.shape
    lam = lam.to(device=H.device, dtype=H.dtype)
    lam = lam.expand(E, -1) if lam.dim() == 1 else lam
    L = lam.shape[1]
    wts = torch.full((L,), 1.0 / L, dtype=H.dtype, device=H.device) if weights is None else weights.to(H)
    return -all_pairs_sum(model, H, y, lam, wts, mult, symmetric=symmetric, chunk=chunk, kernel=kernel) / (N * N)


# ------------------------------------------------------------------------------------------ sampled pairs (practice)
def mixup_sampled_loss(model, x: torch.Tensor, y: torch.Tensor, partner: torch.Tensor, lam: torch.Tensor,
                       mult: torch.Tensor | None = None) -> torch.Tensor:
    """The practice (Zhang et al. 2018): −1/N Σ_i [λ_i log φ_{y_i} + (1 − λ_i) log φ_{y_{j(i)}}](g(z_{i,j(i)}(λ_i))).

    partner (E, N) indices j(i); lam (E, N) per example or (E, 1) per batch (λ = ½ for Midpoint Mixup). Both are
    drawn per replica by the batch transform's core: ``random_pairing(N, generator=gens, independent=True)`` and
    ``sample_beta(a, size, gens)`` of :mod:`featlab.train.mixup`."""
    H = patch_preactivation(model, x)
    E, N = y.shape
    partner, lam = partner.to(H.device), lam.to(H.device, H.dtype)  # drawn on CPU generators: moved once
    Hj = H.gather(1, partner[:, :, None, None].expand(-1, -1, *H.shape[2:]))
    lam = lam.expand(E, N) if lam.shape[1] == 1 else lam
    lm = lam[:, :, None, None]
    logp = logits_from_preact(model, lm * H + (1 - lm) * Hj, mult).log_softmax(-1)
    yj = y.gather(1, partner)
    li = logp.gather(-1, y[..., None]).squeeze(-1)
    lj = logp.gather(-1, yj[..., None]).squeeze(-1)
    return -(lam * li + (1 - lam) * lj).mean(-1)


# ------------------------------------------------------------------------------------------ App. C: infima
def beta_entropy(a: float) -> float:
    """−E_{λ~Beta(a,a)}[λ log λ + (1 − λ) log(1 − λ)] = ψ(2a + 1) − ψ(a + 1) (App. C, Eq. C.2); log 2 as a → ∞."""
    if math.isinf(a):
        return math.log(2.0)
    return float(torch.special.digamma(torch.tensor(2 * a + 1, dtype=torch.float64, device="cpu"))
                 - torch.special.digamma(torch.tensor(a + 1, dtype=torch.float64, device="cpu")))


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


# ------------------------------------------------------------------------------------------ one method's objective
def make_loss(method: str, cfg, net, x, y, mult, seeds):
    """loss_fn(step) -> (E,) for ERM (Eq. 2.1), Midpoint Mixup (Eq. 3.1) or Beta(a, a) Mixup (Eq. 2.2), as a
    multi-view config (``pairs``, ``mix_lam``, ``mixup_a``, ``lam_draws``, ``chunk``, ``pairs_kernel``,
    ``erm_objective``, ``mix_rival``) asks."""
    gens = [generator(s, f"mix/{method}") for s in seeds]
    N = y.shape[1]
    if method == "erm" and getattr(cfg, "erm_objective", "erm") == "mixup":
        method = "mixup"  # the rival 'mixup-for-erm': the ERM slot trained by Beta(a, a) Mixup (its own draws)
    if method == "erm":
        return lambda step: erm_loss(net, x, y, mult)
    if getattr(cfg, "mix_rival", "none") != "none":  # a rival in the mixing methods' place (rival_losses.py)
        return rival_loss(cfg.mix_rival, method, cfg, net, x, y, mult, gens)
    ends = getattr(cfg, "mix_lam", "paper") == "endpoints"
    kern = getattr(cfg, "pairs_kernel", "auto")
    if cfg.pairs == "all" and ends:  # λ ∈ {0, 1}, ½ each (a symmetric set: exact with the unordered pairs)
        lam01 = torch.tensor([0.0, 1.0], device=x.device)
        return lambda step: mixup_all_pairs_loss(net, x, y, lam01, mult=mult, chunk=cfg.chunk, kernel=kern)
    if cfg.pairs == "all":
        if method == "midpoint":
            return lambda step: midpoint_all_pairs_loss(net, x, y, mult, chunk=cfg.chunk, kernel=kern)
        return lambda step: mixup_all_pairs_loss(net, x, y, sample_beta(cfg.mixup_a, cfg.lam_draws, gens),
                                                 mult=mult, chunk=cfg.chunk, kernel=kern)

    def sampled(step):
        partner = random_pairing(N, generator=gens, independent=True)  # (E, N): one uniform partner per point
        lam = (torch.full((len(seeds), 1), 0.5, device=x.device) if method == "midpoint"
               else sample_beta(cfg.mixup_a, 1, gens))
        if ends:
            lam = torch.tensor([[float(torch.randint(0, 2, (1,), generator=g))] for g in gens], device=x.device)
        return mixup_sampled_loss(net, x, y, partner, lam, mult)

    return sampled
