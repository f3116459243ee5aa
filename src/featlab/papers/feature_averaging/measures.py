"""Feature–weight alignment probes: cosines, coefficient estimates, distances to the averaging / decoupling
solutions, and Thm 4.6's sup-distance to C·f_FA. All take replica-batched tensors and return (E,) tensors.

``binary_alignment`` / ``kclass_alignment`` gather them into the Thm 4.5 (2) / Thm 4.7 (2) statistics of a trained
net, given its :class:`~.data.MultiClusterDistribution`."""

from __future__ import annotations

import torch

from ... import meter


def cosine_matrix(features: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """cos(μ_i, w_j): features (E, k, d), weights (E, M, d) → (E, k, M) (Figs 2, 5–9)."""
    f = features / features.norm(dim=-1, keepdim=True)
    w = weights / weights.norm(dim=-1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)
    return f @ w.transpose(1, 2)


def equivalent_weights(W: torch.Tensor, k: int) -> torch.Tensor:
    """w_j = (1/h) Σ_r w_{j,r} for a block network with k groups: (E, k·h, d) → (E, k, d) (FA §4.2)."""
    E, M, d = W.shape
    return W.reshape(E, k, M // k, d).mean(2)


def in_class_mask(positive: torch.Tensor, m_pos: int, m_neg: int) -> torch.Tensor:
    """(k, 2m) mask of the entries (μ_j, w_{s,r}) with j ∈ J_s: positive neurons first, as in the paper."""
    dev = positive.device
    neuron_pos = torch.cat([torch.ones(m_pos, dtype=torch.bool, device=dev),
                            torch.zeros(m_neg, dtype=torch.bool, device=dev)])
    return positive[:, None] == neuron_pos[None, :]


def averaging_stats(cos: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """In-class / off-class statistics of a binary network's cosine matrix (Thm 4.5 (2))."""
    inn = cos[:, mask]
    off = cos[:, ~mask]
    return {
        "cos_in_class_mean": inn.mean(-1),
        "cos_in_class_min": inn.min(-1).values,
        "cos_in_class_max": inn.max(-1).values,
        "cos_off_class_max_abs": off.abs().max(-1).values,
    }


def decoupling_stats(cos: torch.Tensor) -> dict[str, torch.Tensor]:
    """Diagonal / off-diagonal statistics of a k-class network's (E, k, k) cosine matrix (Thm 4.7 (2))."""
    k = cos.shape[-1]
    eye = torch.eye(k, dtype=torch.bool, device=cos.device)
    return {
        "cos_diag_mean": cos[:, eye].mean(-1),
        "cos_diag_min": cos[:, eye].min(-1).values,
        "cos_offdiag_max_abs": cos[:, ~eye].abs().max(-1).values,
    }


def target_directions(mu: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
    """v = Σ_{j ∈ group} μ_j/‖μ_j‖² for each neuron: groups (M, k) 0/1 → (E, M, d).

    Averaging: group of neuron (s, r) = J_s. Decoupling: group of neuron (j, r) = {j}.
    """
    return torch.einsum("mk,ekd->emd", groups.to(mu.dtype), mu / mu.pow(2).sum(-1, keepdim=True))


def fit_coefficients(W: torch.Tensor, v: torch.Tensor) -> dict[str, torch.Tensor]:
    """Least-squares λ* per neuron for w ≈ λ v, the relative residual ‖w − λ* v‖/‖w‖, and √d ‖w − λ* v‖."""
    lam = (W * v).sum(-1) / v.pow(2).sum(-1)
    resid = W - lam[..., None] * v
    d = W.shape[-1]
    return {"lambda": lam, "rel_residual": resid.norm(dim=-1) / W.norm(dim=-1),
            "scaled_distance": d**0.5 * resid.norm(dim=-1)}


def coefficient_proxy(W: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """λ_{s,r,j} ≈ <w_{s,r}, μ_j> (Lemma B.11, exact up to ε/6 for ‖μ_j‖ = √d): (E, M, k)."""
    return W @ mu.transpose(1, 2)


def thm46_distance(model, mu: torch.Tensor, positive: torch.Tensor, m: int, *, starts: torch.Tensor,
                   steps: int = 100, d: int | None = None) -> dict[str, torch.Tensor]:
    """Thm 4.6: inf_C sup_{‖x‖=√d} |C f_FA(x) − f_θ(x)|, with C = λ/d for the common least-squares λ.

    Returns an upper bound U = Σ_s (1/m) Σ_r (√d ‖w_{s,r} − λ v_s‖ + |b_{s,r}|) (ReLU is 1-Lipschitz), an
    optimised lower estimate of the sup (projected gradient ascent on the sphere from ``starts``, (E, S, d)),
    and the scale sup |C f_FA| = C √d max_s ‖Σ_{J_s} μ_j‖ for a relative reading.

    ``d``: the input dimension when the vectors are reduced coordinates (:mod:`.gram`; default W.shape[-1]). Both
    f_θ and f_FA read x only through its projection on V = span(W, μ), so the sup over the sphere of radius √d
    in R^d is the sup over the ball of radius √d in V, the same in any coordinates of dimension > dim V; the
    ascent moves x along V and rescales the rest, so it depends on a start only through its projection on V and
    the norm of the remainder: starts that are rows of the joint Gaussian draw give the explicit search's law.
    """
    W = model.W.detach()
    b = model.b.detach() if model.b is not None else torch.zeros(W.shape[:2], dtype=W.dtype, device=W.device)
    E, M, D = W.shape
    d = D if d is None else d
    groups = in_class_mask(positive, m, M - m).T  # (M, k): neuron (s, r) ↔ J_s
    v = target_directions(mu, groups)
    lam = (W * v).sum((-1, -2)) / v.pow(2).sum((-1, -2))  # (E,) common λ over all neurons
    resid = (W - lam[:, None, None] * v).norm(dim=-1)
    bound = (d**0.5 * resid + b.abs()).sum(-1) / m
    sums = torch.stack([mu[:, positive].sum(1), mu[:, ~positive].sum(1)], 1)  # (E, 2, d)
    C = lam / d
    radius = d**0.5

    def gap(x):  # (E, S, d) → (E, S)
        ffa = (x @ sums.transpose(1, 2)).clamp(min=0) @ torch.tensor([1.0, -1.0], dtype=x.dtype, device=x.device)
        return (C[:, None] * ffa - model(x)).abs()

    x = starts / starts.norm(dim=-1, keepdim=True) * radius
    best = torch.zeros(E, dtype=W.dtype, device=W.device)
    lr = 0.1 * radius
    for t in meter.steps(steps):  # a few, timed, when an estimate is measured (featlab.meter)
        x = x.detach().requires_grad_(True)
        g_val = gap(x)
        best = torch.maximum(best, g_val.detach().max(-1).values)
        (grad,) = torch.autograd.grad(g_val.sum(), x)
        step = grad / grad.norm(dim=-1, keepdim=True).clamp_min(1e-30)
        x = x.detach() + lr * (1 - t / steps) * step
        x = x / x.norm(dim=-1, keepdim=True) * radius
    with torch.no_grad():
        best = torch.maximum(best, gap(x).max(-1).values)
    scale = C.abs() * radius * sums.norm(dim=-1).max(-1).values
    return {"bound": bound, "estimate": best, "scale": scale, "lambda": lam}


def fa_ideal(dist, m: int) -> torch.Tensor:
    """cos(μ_i, w) of the exact averaging solution w ∝ Σ_{J_s} μ_j, laid out like a binary net's (E, k, 2m)."""
    ref = cosine_matrix(dist.mu, dist.class_sums())  # (E, k, 2): columns Σ_{J+}, Σ_{J−}
    return torch.cat([ref[..., :1].expand(-1, -1, m), ref[..., 1:].expand(-1, -1, m)], -1)


def class_coefficients(W: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """Thm 4.5 (2)'s coefficients: least-squares λ_{n,j} of w_n ≈ Σ_j λ_{n,j} μ_j/‖μ_j‖², (E, M, d) → (E, M, k).

    Exact in the span of the centres whether or not they are orthogonal; for orthogonal centres of equal norm
    λ_{n,j} is proportional to cos(μ_j, w_n), so a ratio of coefficients is the ratio of cosines."""
    B = mu / mu.pow(2).sum(-1, keepdim=True)  # (E, k, d)
    return torch.linalg.solve(B @ B.transpose(1, 2), B @ W.transpose(1, 2)).transpose(1, 2)


def averaging_margin(W: torch.Tensor, mu: torch.Tensor, positive: torch.Tensor, m: int, *,
                     fidelity: float = 0.7, off_ratio: float = 0.25) -> dict[str, torch.Tensor]:
    """The two-part feature-averaging test of Def 4.1 / Thm 4.5 (2), per neuron (s, r) (positive neurons first).

    (a) in-class fidelity: min_{j∈J_s} cos(μ_j, w) / cos(μ_j, Σ_{J_s}μ) ≥ ``fidelity``: the neuron keeps that share
    of the averaging solution's alignment with every cluster of its class;
    (b) off-class ratio: max_{j∉J_s} |λ_j| / mean_{j∈J_s} λ_j ≤ ``off_ratio`` (λ: :func:`class_coefficients`): the
    other class's clusters carry at most a quarter of the in-class coefficient (fa.binary_off_class's bound). A
    class-blind neuron w ∝ Σ_all μ has fidelity 1/√2 but ratio 1; Σ_{J_s}μ has ratio 0 even for non-orthogonal
    centres (Fig 9), where the off-class *cosine* of the exact averaging solution is not small.

    margin = min(fidelity_n / ``fidelity``, ``off_ratio`` / ratio_n) per neuron; the net averages iff the worst
    neuron's margin ≥ 1. Returns (E, M) ``fidelity``, ``off_ratio``, ``margin`` and (E,) ``margin_min``.
    """
    E, M, _ = W.shape
    mask = in_class_mask(positive, m, M - m)  # (k, M)
    sums = torch.stack([mu[:, positive].sum(1), mu[:, ~positive].sum(1)], 1)  # (E, 2, d)
    ideal = cosine_matrix(mu, sums)  # (E, k, 2)
    ideal = torch.cat([ideal[..., :1].expand(-1, -1, m), ideal[..., 1:].expand(-1, -1, M - m)], -1)
    ratio_cos = cosine_matrix(mu, W) / ideal  # (E, k, M)
    fid = ratio_cos.masked_fill(~mask, float("inf")).min(1).values  # (E, M)
    lam = class_coefficients(W, mu)  # (E, M, k)
    maskT = mask.T
    lam_in = (lam * maskT).sum(-1) / maskT.sum(-1)
    lam_off = (lam.abs() * ~maskT).max(-1).values
    ratio = lam_off / lam_in  # negative when the neuron points away from its own class: fails
    tiny = torch.finfo(W.dtype).tiny
    margin = torch.minimum(fid / fidelity, off_ratio * lam_in / lam_off.clamp_min(tiny))
    return {"fidelity": fid, "off_ratio": ratio, "margin": margin, "margin_min": margin.min(-1).values}


def binary_alignment(net, dist, m: int) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Cosine matrix and Thm 4.5 (2) statistics of a trained binary net."""
    with torch.no_grad():
        cos = cosine_matrix(dist.mu, net.W)
        mask = in_class_mask(dist.positive, m, m)
        stats = averaging_stats(cos, mask)
        ideal = fa_ideal(dist, m)
        # fidelity: worst in-class entry relative to the exact averaging solution (1 = perfect averaging)
        stats["fa_fidelity"] = (cos / ideal)[:, mask].min(-1).values
        test = averaging_margin(net.W, dist.mu, dist.positive, m)  # (a) fidelity and (b) off-class ratio, per neuron
        stats["fa_off_ratio_max"] = test["off_ratio"].max(-1).values
        stats["fa_margin"] = test["margin_min"]
        lam = coefficient_proxy(learned_part(net), dist.mu)  # (E, 2m, k): λ_{s,r,j} ≈ <w_{s,r} − w⁰_{s,r}, μ_j>
        lam_in = lam[:, mask.T]
        stats["lambda_in_class_mean"] = lam_in.mean(-1)
        stats["lambda_ratio"] = lam_in.max(-1).values / lam_in.min(-1).values  # Lemma B.24: ≤ 1 + 204ε
        stats["lambda_off_class_max"] = lam[:, ~mask.T].max(-1).values  # Cor B.5: ≤ 0 and tiny
        v = target_directions(dist.mu, mask.T)
        stats["fa_rel_residual"] = fit_coefficients(net.W, v)["rel_residual"].mean(-1)
        stats["bias_max_abs"] = net.b.abs().max(-1).values
        stats.update(learned_stats(net, dist, m))
    return cos, stats


def learned_part(net) -> torch.Tensor:
    """W − W(0), what GD learned (Lemma 5.1: w^(t) = w^(0) + Σ_j λ_j μ_j/‖μ_j‖² + Σ_i σ_i ξ_i/‖ξ_i‖²); W itself for a
    net that kept no W(0) (common.keep_init)."""
    W0 = getattr(net, "W0", None)
    return net.W.detach() if W0 is None else net.W.detach() - W0


def learned_stats(net, dist, m: int) -> dict[str, torch.Tensor]:
    """The alignment and coefficient statistics of the learned part W − W(0) (E,): in-class mean and off-class max
    |cos(μ_j, w − w⁰)| (Thm 4.5 (2) read on what GD learned), ‖w − w⁰‖/‖w⁰‖ (mean over neurons: how far GD moved
    from the init), and the mean in-class and off-class learned coefficients λ_{s,r,j} (Lemma 5.1, B.11) with their
    ratio (averaging: ≈ 0, Cor B.5; a lazy net, active on half of every cluster: ≈ −1)."""
    D = learned_part(net)
    mask = in_class_mask(dist.positive, m, D.shape[1] - m)
    stats = {f"learned_{k}": v for k, v in averaging_stats(cosine_matrix(dist.mu, D), mask).items()}
    W0 = getattr(net, "W0", None)
    if W0 is not None:
        stats["learned_norm_ratio"] = (D.norm(dim=-1) / W0.norm(dim=-1).clamp_min(torch.finfo(D.dtype).tiny)).mean(-1)
    lam = coefficient_proxy(D, dist.mu)  # (E, 2m, k)
    lam_in, lam_off = lam[:, mask.T].mean(-1), lam[:, ~mask.T].mean(-1)
    stats.update(learned_lambda_in_class_mean=lam_in, learned_lambda_off_class_mean=lam_off,
                 learned_lambda_off_over_in=lam_off / lam_in)
    return stats


def flipped_patterns(net, x: torch.Tensor) -> torch.Tensor:
    """Share of (neuron, point) activation patterns 1[<w, x> + b ≥ 0] that differ between W(0), b(0) and the trained
    W, b, per replica (E,): ≈ 0 in the lazy (kernel) regime; x (E, n, d) or (n, d) shared."""
    W0, b0 = getattr(net, "W0", None), getattr(net, "b0", None)
    if W0 is None:
        return torch.full((net.W.shape[0],), float("nan"), dtype=net.W.dtype, device=net.W.device)
    with torch.no_grad():
        z0 = x @ W0.transpose(1, 2) + (0 if b0 is None else b0[:, None, :])
        z = net.preactivation(x)
        return ((z0 >= 0) != (z >= 0)).to(x.dtype).mean((-1, -2))


def kclass_alignment(net, dist, k: int) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Cosine matrix (equivalent weights) and Thm 4.7 (2) statistics of a trained k-class net."""
    with torch.no_grad():
        w = equivalent_weights(net.W, k)
        cos = cosine_matrix(dist.mu, w)
        stats = decoupling_stats(cos)
        dev = net.W.device
        groups = torch.kron(torch.eye(k, device=dev), torch.ones(net.W.shape[1] // k, 1, device=dev))  # (k·h, k)
        v = target_directions(dist.mu, groups)
        stats["fd_rel_residual"] = fit_coefficients(net.W, v)["rel_residual"].mean(-1)
    return cos, stats


def min_perturbation_direction(bounds, dist, te) -> torch.Tensor:
    """Thm 4.5 (3): mean cos(δ*, −y(Σ_{J+}μ_j − Σ_{J−}μ_j)) per replica (E,) over the test points whose exact
    minimal perturbation δ* (``bounds.delta``) is resolved and non-zero. f_FA's δ* is along the averaged direction
    (cos 1); a decoupled net read out by f's plain sum moves along −μ_i + Σ_{J−y}μ_l (cos √((1 + |J−y|)/k))."""
    sums = dist.class_sums()  # (E, 2, d)
    u = (sums[:, 0] - sums[:, 1])[:, None, :] * -te.y[..., None].to(sums.dtype)  # (E, n, d)
    delta = bounds.delta.to(u.dtype)
    tiny = torch.finfo(u.dtype).tiny
    cos = (delta * u).sum(-1) / (delta.norm(dim=-1) * u.norm(dim=-1)).clamp_min(tiny)
    ok = bounds.exact & (bounds.lower > 0) & torch.isfinite(cos)
    return torch.where(ok, cos, 0).sum(-1) / ok.sum(-1).to(u.dtype)
