"""The worst-case ℓ2 attack ensemble of fa-synthetic (Fig 3 left; Thm 4.5 (3), Thm 4.7 (3)).

Robust accuracy is the worst case, point by point, over:

* ``min_norm``: minimum-norm first (:mod:`featlab.probes.subspace_min_norm`) — DDN run exactly in the span of the
  first-layer weights from several starts (and on the softplus surrogate's margin), then PGD at the grid radius just
  below each point's distance, warm-started from its closest adversarial point: one distance per point, i.e. the
  whole curve. It is what makes the k-class attacked side tight: the fixed-radius attacks alone left 187 of 2,000
  points (fa-synthetic quick) robust at a grid radius where torchattacks' FAB or a dense DDN breaks them, this
  stage none (tests/test_fa_min_norm.py cross-checks it against FAB);
* ``pgd``: ℓ2 PGD on the margin (random start, restarts), run exactly in the span of the first-layer weights
  (:mod:`featlab.probes.subspace`: the same iterates as dense PGD at O(M) per point and step);
* ``pgd_softplus``: ℓ2 PGD whose ascent direction is the margin of the same net with ReLU replaced by a softplus
  (temperature ``softplus_temperature`` × the RMS pre-activation at the test points): a ReLU unit inactive at x
  passes no gradient, so margin PGD never sees the other class's neurons — the masking that leaves 15 % of the
  binary net's points "robust" at δ = 22 (d = 3072, k = 10) where the averaged direction leaves 0.1 %;
* ``avgdir``: x − y·r·u along the averaged feature u ∝ Σ_{J+}μ_j − Σ_{J−}μ_j (Thm 4.5 (3)'s attack);
* ``centre``: along ±μ_l/‖μ_l‖ for every centre μ_l (adding another cluster's feature, or removing the own one);
* ``midpoint``: along (μ_l − μ_j)/‖μ_l − μ_j‖ from the point's own centre μ_j to every other centre μ_l, which
  reaches their midpoint at r = ‖μ_l − μ_j‖/2 = √(d/2) (Thm 4.7 (3)'s radius for the decoupled net).

Success is always judged on the true net. The direction attacks use the distribution's centres (a white-box
attacker that knows the data model); every radius' perturbation lies in the ball, so each is a valid attack.

The ensemble only bounds robust accuracy from above. :func:`distance_bounds` adds the other side: the binary net's
exact minimum distance (:mod:`featlab.probes.exact`; it is also an attack, so the curve is exact where it succeeds)
and, for the k-class net, a certified lower bound (:mod:`featlab.probes.certify`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

from ...nn.twolayer import EnsembleTwoLayer, logit_margin_readout
from ...probes.certify import attack_distance, certified_lower_bound
from ...probes.exact import exact_min_distance
from ...probes.robustness import lipschitz_certificate, transition_radii, worst_case
from ...probes.subspace import LinearHead, subspace_direction_masks, subspace_masks
from ...probes.subspace_min_norm import min_norm_masks

ATTACKS = ("min_norm", "pgd", "pgd_softplus", "avgdir", "centre", "midpoint")
SEARCH_ATTACKS = ("min_norm", "pgd", "pgd_softplus")  # the searches: the convergence check reruns them at 2×


class Target(NamedTuple):
    """One attacked net: its dense score (judges every success), the score as head(x Wᵀ + b) for subspace PGD,
    and the softplus surrogate's head (pgd_softplus's ascent direction)."""
    score: Callable
    lin: LinearHead
    surrogate_head: Callable


def target(net: EnsembleTwoLayer, x: torch.Tensor, temperature: float, positive=None) -> Target:
    """The binary net's output (``positive`` None) or the k-class net's logit margin G = LSE_{J+} − LSE_{J−}."""
    sur = softplus_surrogate(net, x, temperature)
    if positive is None:
        return Target(lambda z: net(z), LinearHead(net.W, net.b, net.head), sur.head)
    return Target(lambda z: logit_margin_readout(net(z), positive),
                  LinearHead(net.W, net.b, lambda h: logit_margin_readout(net.head(h), positive)),
                  lambda h: logit_margin_readout(sur.head(h), positive))


def softplus_surrogate(net: EnsembleTwoLayer, x: torch.Tensor, temperature: float) -> EnsembleTwoLayer:
    """The same weights with ReLU → t·softplus(z/t), t = ``temperature`` × each replica's RMS pre-activation on x."""
    with torch.no_grad():
        z = net.preactivation(x)
        t = temperature * z.pow(2).mean(dim=tuple(range(1, z.dim())), keepdim=True).sqrt().clamp_min(1e-12)
    act = lambda h: t * torch.nn.functional.softplus(h / t)
    return EnsembleTwoLayer(net.W.detach(), net.A, None if net.b is None else net.b.detach(), act, net.squeeze)


def certified_radius(net: EnsembleTwoLayer, score, x: torch.Tensor, y: torch.Tensor, kclass: bool) -> torch.Tensor:
    """Per point, a radius below which no attack can flip it: margin / Lipschitz constant. ReLU is 1-Lipschitz, so
    output j is L_j = Σ_r |A_rj|·‖w_r‖-Lipschitz; the binary score is L_1-Lipschitz, and the k-class logit margin
    LSE_{J+} − LSE_{J−} has a gradient of ℓ1 norm 2 in the logits, so it is 2·max_j L_j-Lipschitz."""
    with torch.no_grad():
        L = net.A.abs().T[None] @ net.W.norm(dim=-1)[..., None]  # (E, out, 1): L_j per replica
        L = (2 * L.amax(1) if kclass else L[:, 0]).to(x.dtype)  # (E, 1)
        return lipschitz_certificate(y.to(x.dtype) * score(x).to(x.dtype), L)


def _unit(v: torch.Tensor) -> torch.Tensor:
    return v / v.norm(dim=-1, keepdim=True).clamp_min(1e-30)


def directions(name: str, dist, x: torch.Tensor, y: torch.Tensor, cluster: torch.Tensor) -> Callable:
    """The candidate unit directions of a direction attack, as a generator factory (see direction_masks)."""
    mu = dist.mu.to(x.dtype)  # (E, k, d)
    if name == "avgdir":  # Thm 4.5 (3): −y·u
        u = dist.averaged_direction().to(x.dtype)
        return lambda: iter([-y.to(x.dtype)[..., None] * u[:, None, :]])
    if name == "centre":
        return lambda: (s * _unit(mu[:, l, None, :]) for l in range(mu.shape[1]) for s in (1, -1))
    if name == "midpoint":  # point i of cluster j moves along the table row (μ_l − μ_j)/‖μ_l − μ_j‖, indexed by j
        return lambda: ((_unit(mu[:, l, None, :] - mu), cluster) for l in range(mu.shape[1]))
    raise ValueError(f"unknown direction attack {name!r}; choose from {ATTACKS}")


def ensemble(tgt: Target, dist, te, radii: list[float], attacks, pgd: dict, steps_factor: int = 1,
             only: list[int] | None = None) -> dict[str, torch.Tensor]:
    """Each attack's (R, E, n) robust masks on the test batch ``te`` (``only``: these radii indices, the rest
    copied as all-robust). ``pgd``: subspace_masks keywords (one generator per replica; ``certified``: the points
    PGD need not attack) plus ``ddn_steps`` (default 300), ``ddn_restarts`` (2) and ``ddn_generators`` (min_norm:
    one per replica, a stream of its own); ``steps_factor`` multiplies every search's steps and restarts."""
    rs = radii if only is None else [radii[i] for i in only]
    pgd = dict(pgd)
    ddn = dict(steps=pgd.pop("ddn_steps", 300) * steps_factor, restarts=pgd.pop("ddn_restarts", 2) * steps_factor,
               generators=pgd.pop("ddn_generators", None))
    if "min_norm" in attacks and ddn["generators"] is None:
        raise ValueError("ensemble: the min_norm attack needs ddn_generators (one per replica) in its keywords")
    kw = dict(pgd, steps=pgd["steps"] * steps_factor, restarts=pgd["restarts"] * steps_factor,
              dim=dist.d)  # a Gram simulation's random starts: uniform in the ball of R^d, not of its coordinates
    out = {}
    for name in attacks:
        if name == "min_norm":  # every radius at once (``only`` is moot)
            m, _ = min_norm_masks(tgt.score, tgt.lin, te.x, te.y, rs, surrogate_head=tgt.surrogate_head,
                                  pgd_steps=kw["steps"], step_size_factor=kw["step_size_factor"], **ddn)
        elif name == "pgd":
            m = subspace_masks(tgt.score, tgt.lin, te.x, te.y, rs, **kw)
        elif name == "pgd_softplus":
            m = subspace_masks(tgt.score, tgt.lin, te.x, te.y, rs, grad_head=tgt.surrogate_head, **kw)
        else:
            m = subspace_direction_masks(tgt.score, tgt.lin, te.x, te.y, rs,
                                         directions(name, dist, te.x, te.y, te.cluster))
        if only is not None:
            full = torch.ones((len(radii), *m.shape[1:]), dtype=torch.bool, device=m.device)
            full[only] = m
            m = full
        out[name] = m
    return out


def convergence_change(tgt: Target, dist, te, radii, attacks, pgd, worst: torch.Tensor) -> tuple[float, int]:
    """Doubling every search's steps and restarts (PGD's, the minimum-norm stage's) at the radii where the
    worst-case curve is in transition: the largest drop of robust accuracy (mean over seeds, in accuracy units) and
    how many radii were checked."""
    acc = worst.double().mean(-1)  # (R, E)
    idx = transition_radii(radii, acc)
    searches = [a for a in attacks if a in SEARCH_ATTACKS]
    if not idx or not searches:
        return 0.0, 0
    again = ensemble(tgt, dist, te, radii, searches, pgd, steps_factor=2, only=idx)
    stronger = worst_case({"base": worst, **again})
    drop = (acc - stronger.double().mean(-1)).mean(-1)  # (R,)
    return float(drop.max()), len(idx)


class Bounds(NamedTuple):
    """Per test point (E, n): ``lower`` a sound lower bound on the minimum ℓ2 distance that flips it (exact or
    certified), ``upper`` the distance of a verified adversarial point (the ensemble's radius grid, or the exact
    solver's point), ``ensemble`` the ensemble's alone, ``exact`` where the two meet; ``delta`` (E, n, d) the binary
    net's exact minimal perturbations δ* (None for the k-class net; meaningful where ``exact`` and lower > 0)."""
    lower: torch.Tensor
    upper: torch.Tensor
    ensemble: torch.Tensor
    exact: torch.Tensor
    delta: torch.Tensor | None = None


def distance_bounds(net: EnsembleTwoLayer, te, radii: list[float], worst: torch.Tensor, positive=None,
                    max_unstable: int = 12) -> Bounds:
    """Both sides of each test point's adversarial distance. Binary net (``positive`` None): the exact minimum
    distance (one small QP per reachable activation region, branch and bound over the unstable neurons); a point
    with more than ``max_unstable`` unstable neurons falls back to the certified bound. k-class net: the certified
    (CROWN-style) bound on the logit margin. ``worst``: the ensemble's (R, E, n) robust masks."""
    att = attack_distance(radii, worst)  # (E, n) float64
    if positive is None:
        ex = exact_min_distance(net.W, net.b, net.A, te.x, te.y, upper=att, max_unstable=max_unstable)
        ok = ex.verified & torch.isfinite(ex.dist)  # resolved (not nan) and its point (x where 0) misclassified
        exact = torch.where(ok, ex.dist.double(), float("nan"))  # the returned point's norm, ex.upper, is above
        lower, upper = exact.clone(), torch.minimum(att, torch.where(ok, ex.upper.double(), float("inf")))
        if not ok.all():  # out of the solver's reach: certified below, the ensemble above
            cert = certified_lower_bound(net.W, net.b, net.A, te.x, te.y, upper=att).double()
            lower = torch.where(ok, lower, cert)
        return Bounds(lower, upper, att, ok, ex.delta(net.W))
    cert = certified_lower_bound(net.W, net.b, net.A, te.x, te.y, positive=positive, upper=att).double()
    return Bounds(cert, att, att, cert >= att)
