"""mm-multiview's rival objectives (config ``mix_rival``): each replaces the objective of the two mixing methods
(Midpoint Mixup, Eq. 3.1; Beta(a, a) Mixup, Eq. 2.2) by another mechanism that keeps one of the mixing's traits and
drops the one Thm 4.7's proof uses — the cross-class mixed inputs (App. B.2 Part II: the gradient lower bound comes
from the midpoints of points of different classes). ERM is untouched.

* ``label-smoothing``: ERM (Eq. 2.1) on one-hot labels smoothed by the off-label mass the mixing gives: a point's
  label keeps weight E[λ] = ½ in its mixed points and its partner's class takes 1 − λ when that class differs,
  so ε = ½·P(y_j ≠ y_i) (the share of cross-class ordered pairs, measured on the run's labels), spread evenly
  over the k − 1 other classes. Soft labels, no mixed inputs.
* ``same-class``: the method's own mixing (λ = ½, or λ ~ Beta(a, a)) over the pairs of one class only, over all
  such pairs: mixed inputs, no cross-class label.
* ``input-noise``: ERM on inputs perturbed by fresh Gaussian noise each step at the mixing's scale: the mixed point
  z_ij = x_i + (1 − λ)(x_j − x_i) moves x_i by E‖(1 − λ)(x_j − x_i)‖² = E[(1 − λ)²]·2·E‖x − x̄‖² (per patch, over
  all pairs), and N(0, s²I) in the D feature coordinates carries the same mean square: s² = that / D. In the reduced
  simulation the noise lies in span{v_{s,ℓ}}, as every mixing displacement does; a merged patch (``mult``) gets one
  draw. Perturbed inputs, labels one-hot.
"""

from __future__ import annotations

import torch

from ...nn.twolayer import logits_from_preact, patch_logits, patch_preactivation
from ...placement import to_host
from ...train.mixup import sample_beta

RIVALS = ("label-smoothing", "same-class", "input-noise")


def smoothing_mass(y: torch.Tensor, k: int) -> torch.Tensor:
    """(E,) ε = ½·(share of ordered pairs (i, j) with y_i ≠ y_j): the mixing's expected off-label mass (E[1 − λ] =
    ½ for λ = ½ and for any symmetric Beta(a, a))."""
    counts = torch.nn.functional.one_hot(y.long(), k).sum(1).to(torch.float64)
    return 0.5 * (1 - (counts**2).sum(-1) / y.shape[1] ** 2)


def smoothed_loss(model, x, y, mult, eps: torch.Tensor, k: int) -> torch.Tensor:
    """−(1/N) Σ_i Σ_s q_{i,s} log φ_s(g(x_i)), q_i = (1 − ε)e_{y_i} + ε/(k − 1)·(1 − e_{y_i}) (Eq. 2.1 smoothed)."""
    logp = patch_logits(model, x, mult).log_softmax(-1)
    one = torch.nn.functional.one_hot(y.long(), k).to(logp.dtype)
    e = eps.to(logp)[:, None, None]
    q = (1 - e) * one + e / (k - 1) * (1 - one)
    return -(q * logp).sum(-1).mean(-1)


def same_class_pairs(y: torch.Tensor):
    """Every unordered pair i ≤ j of one class per replica, padded to a common length: (i, j, w) each (E, L), w = 2
    off the diagonal (both orders), 1 on it, 0 for padding; Σw = Σ_c N_c², the ordered same-class pairs."""
    rows = []
    for ye in to_host(y):
        same = (ye[:, None] == ye[None, :]).triu()
        i, j = same.nonzero(as_tuple=True)
        rows.append((i, j, torch.where(i == j, 1.0, 2.0)))
    L = max(len(r[0]) for r in rows)
    pad = [tuple(torch.nn.functional.pad(t, (0, L - len(t))) for t in r) for r in rows]
    return tuple(torch.stack([p[c] for p in pad]).to(y.device) for c in range(3))


def same_class_loss(model, x, y, mult, pairs, lam: torch.Tensor) -> torch.Tensor:
    """−Σ_{y_i = y_j} log φ_{y_i}(g(λx_i + (1 − λ)x_j)) / Σ_c N_c² (Eq. 2.2 restricted to same-class pairs, whose
    mixed label is y_i whatever λ); pre-activations mixed, not inputs (the first layer is linear, losses.py)."""
    i, j, w = pairs
    H = patch_preactivation(model, x)  # (E, N, P, M)
    idx = lambda t: t[:, :, None, None].expand(-1, -1, *H.shape[2:])
    lm = lam.to(H)[:, :, None, None]
    z = lm * H.gather(1, idx(i)) + (1 - lm) * H.gather(1, idx(j))
    logp = logits_from_preact(model, z, mult).log_softmax(-1)
    li = logp.gather(-1, y.gather(1, i)[..., None]).squeeze(-1)
    w = w.to(li)
    return -(w * li).sum(-1) / w.sum(-1)


def noise_scale(x: torch.Tensor, second_moment: float) -> torch.Tensor:
    """(E,) s with D·s² = E[(1 − λ)²]·2·E‖x^(p) − x̄^(p)‖² (mean over patches p): the mixing's displacement."""
    var = (x - x.mean(1, keepdim=True)).square().sum(-1).mean((1, 2))
    return (second_moment * 2 * var / x.shape[-1]).sqrt()


def lambda_second_moment(method: str, a: float) -> float:
    """E[(1 − λ)²]: ¼ for Midpoint's λ = ½; Var + ¼ = 1/(4(2a + 1)) + ¼ for Beta(a, a)."""
    return 0.25 if method == "midpoint" else 0.25 + 1 / (4 * (2 * a + 1))


def rival_loss(rival: str, method: str, cfg, model, x, y, mult, gens):
    """loss_fn(step) -> (E,) of ``rival`` in the place of ``method`` (midpoint or mixup)."""
    E = y.shape[0]
    if rival == "label-smoothing":
        eps = smoothing_mass(y, cfg.k)
        return lambda step: smoothed_loss(model, x, y, mult, eps, cfg.k)
    if rival == "same-class":
        pairs = same_class_pairs(y)
        half = torch.full((E, 1), 0.5, device=x.device)
        return lambda step: same_class_loss(model, x, y, mult, pairs,
                                            half if method == "midpoint" else sample_beta(cfg.mixup_a, 1, gens))
    if rival == "input-noise":
        s = noise_scale(x, lambda_second_moment(method, cfg.mixup_a))

        def noisy(step):
            xi = torch.stack([torch.randn(x.shape[1:], generator=g, dtype=x.dtype, device=g.device) for g in gens])
            return -patch_logits(model, x + s.to(x)[:, None, None, None] * xi.to(x.device), mult).log_softmax(
                -1).gather(-1, y.long()[..., None]).squeeze(-1).mean(-1)

        return noisy
    raise ValueError(f"unknown mix_rival {rival!r}; expected one of {RIVALS}")
