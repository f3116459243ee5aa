"""An AutoAttack-grade ℓ2 ensemble for images (or vectors): APGD-CE, APGD-T, the minimum-norm attacks (DDN, FMN,
ALMA: probes/min_norm.py), Square; worst case per point.

Every attack is run on its own survivors (points it has not yet broken at a smaller radius), so each attack has a
complete, monotone mask over the radii — what the masking indicator compares — and the worst case is their AND.
With ``cascade=True`` each attack runs, at each radius, only on the points every earlier attack left (the cheap
ones first, e.g. margin PGD): the same worst case per point for a fraction of the cost, each mask then the worst
case of the attacks up to it (the masking indicator then measures what a gradient-free attack adds). With
``frontier=True`` the later attacks also skip the radii below one where they failed on a point.
Every adversarial point an attack reports is re-verified before it counts: a fresh forward pass misclassifies it,
it lies in the pixel box, and the actual (clipped) perturbation has norm ≤ ε. Two nets compared with the same
:class:`AttackBudget` and generator state (:func:`compare_ensembles`) are attacked with exactly the same strength.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from ..placement import to_host, to_numpy
from .apgd import Logits, apgd_l2, apgd_targeted
from .budget import GRADIENT_FREE, MIN_NORM, AttackBudget
from .min_norm_stage import _min_norm, _verify
from .passes import PassCounter
from .robustness import Score, _norm, correct, pgd_l2, worst_case
from .square import square_l2
from .survivors import check_radii, lift, on_survivors, survivor_masks, within


@dataclass
class EnsembleResult:
    """Masks are (R, *batch) in the order of ``radii``; batch = (n,) or (E, n)."""

    radii: list[float]
    clean: torch.Tensor
    masks: dict[str, torch.Tensor]
    worst: torch.Tensor
    break_radius: dict[str, torch.Tensor]  # smallest radius of the grid at which the attack broke the point (inf)
    distance: torch.Tensor | None  # the minimum-norm attacks' smallest distance per point (inf: none found)
    zero_grad: torch.Tensor  # the score's gradient is exactly zero at x (clean-correct points only)
    unverified: dict[str, int] = field(default_factory=dict)
    acc_large: float | None = None
    large_radius: float | None = None
    cascade: bool = False  # masks are cumulative: each the worst case of the attacks up to it
    passes: PassCounter = field(default_factory=PassCounter)  # point-passes per attack ("clean", "large" apart)
    closest: torch.Tensor | None = None  # the closest adversarial point found per point (x where none was)

    def curves(self) -> dict[str, torch.Tensor]:
        """Robust accuracy per attack and ``"worst"``: the mean over points, (R,) or (R, E)."""
        out = {k: m.double().mean(-1) for k, m in self.masks.items()}
        out["worst"] = self.worst.double().mean(-1)
        return out

    def attribution(self) -> pd.DataFrame:
        """One row per point: replica, point, clean-correct, the radius at which each attack broke it, which attack
        broke it first (smallest radius; "" if none, "clean" if misclassified at x) and the minimum-norm attacks'
        smallest distance."""
        clean = self.clean if self.clean.dim() == 2 else self.clean[None]
        E, n = clean.shape
        cols: dict[str, object] = {"replica": np.arange(E).repeat(n), "point": np.tile(np.arange(n), E),
                                   "clean_correct": to_numpy(clean.reshape(-1))}
        names = list(self.break_radius)
        first = [""] * (E * n)
        if names:
            br = to_host(torch.stack([self.break_radius[k].reshape(-1).double() for k in names], -1))
            for i, k in enumerate(names):
                cols[f"r_{k}"] = to_numpy(br[:, i])
            rmin, arg = br.min(-1)
            first = [names[int(a)] if math.isfinite(float(r)) else "" for r, a in zip(rmin, arg)]
        cols["broken_by"] = ["clean" if not c else f for c, f in zip(clean.reshape(-1).tolist(), first)]
        if self.distance is not None:
            cols["min_norm_distance"] = to_numpy(self.distance.reshape(-1).double())
        return pd.DataFrame(cols)


def robust_masks_ensemble(score: Score, x: torch.Tensor, y: torch.Tensor, radii: list[float], *,
                          budget: AttackBudget | None = None, logits: Logits | None = None,
                          positive: torch.Tensor | None = None, event_dims: int = 3,
                          clip: tuple[float, float] | None = (0.0, 1.0),
                          generator: torch.Generator | None = None,
                          batch_size: int | None = None, cascade: bool = False,
                          start: torch.Tensor | None = None, frontier: bool = False,
                          clean: torch.Tensor | None = None) -> EnsembleResult:
    """Per-attack robust masks over ``radii`` and the worst case per point, for x (n, *event) / y (n,) or
    replica-batched x (E, n, *event) / y (E, n), y ∈ {±1}.

    ``score``: x → signed score; for a k-class model pass ``logit_margin_readout`` of it and also ``logits``
    (x → (…, n, k)) and ``positive`` (J+ as a (k,) bool mask) to enable APGD-T over the other group's classes.
    ``batch_size``: points per replica attacked at once (None: all). Square needs images (``event_dims=3``).
    ``cascade``: each attack only on what the earlier ones left (module docstring); its gradient-free attacks
    must then come last. ``start``: (R, *batch) masks of the points still to attack at each radius (e.g. another
    result's ``worst``: the stronger budget's run then measures what it adds); implies ``cascade``.
    ``frontier`` (implies ``cascade``): every attack after the first (all, with ``start``) descends the radii from
    each point's break radius so far and stops at its first failure (:func:`_descend`; a run without ``frontier``
    shows what that skips). ``clean``: the clean-correct mask when already known (an earlier stage's): its pass
    and the zero-gradient count are not repeated.
    """
    budget = budget or AttackBudget()
    radii = check_radii(radii)
    cascade = cascade or start is not None or frontier
    free_at = [i for i, a in enumerate(budget.attacks) if a in GRADIENT_FREE]
    if cascade and free_at and any(a not in GRADIENT_FREE for a in budget.attacks[free_at[0]:]):
        raise ValueError(f"with cascade=True the gradient-free attacks {list(GRADIENT_FREE)} must come last in "
                         f"the budget's 'attacks'; got {list(budget.attacks)!r} instead")
    single = y.dim() == 1
    xr, yr = (x[None], y[None].to(x.dtype)) if single else (x, y.to(x.dtype))
    counter = PassCounter(event_dims)
    f = counter.wrap(lift(score, single, x.dtype))
    lg = None if logits is None else counter.wrap(lift(logits, single, x.dtype))
    counter.label = "clean"
    run = _Run(f, xr, yr, radii, event_dims, clip, batch_size or max(yr.shape[1], 1))
    clean, zero_grad = _clean(run, None if clean is None else clean[None] if single else clean)
    runners = _runners(budget, f, lg, positive, event_dims, clip, generator)
    base = {r: clean.clone() for r in run.grid}  # the points left to attack at each radius
    if start is not None:
        st = start if not single else start[:, None]
        base = {r: base[r] & st[radii.index(r)] for r in run.grid}
    masks: dict[str, torch.Tensor] = {}
    brk: dict[str, torch.Tensor] = {}
    unver: dict[str, int] = {}
    distance = closest = None
    for name in budget.attacks:
        counter.label = name
        if name in MIN_NORM:
            if run.r_max <= 0:
                continue
            d_own, unver[name], c_own = _min_norm(name, f, xr, yr, clean, run.chunks, budget, run.r_max, event_dims,
                                                  clip, generator)
            closer = d_own < distance if distance is not None else torch.ones_like(clean)
            distance = torch.where(closer, d_own, distance) if distance is not None else d_own
            closest = c_own if closest is None else torch.where(
                closer.reshape(*closer.shape, *(1,) * event_dims), c_own, closest)
            masks[name], brk[name] = survivor_masks(radii, clean, within(d_own), start=base if cascade else None)
        elif name in runners and frontier and (masks or start is not None):
            brk[name], unver[name] = _descend(runners[name], run, base)
            masks[name] = torch.stack([base[r] & ~(brk[name] <= r) for r in radii])
        elif name in runners:
            masks[name], brk[name], unver[name] = run.survivors(runners[name], clean, base if cascade else None)
        else:
            continue
        if cascade:
            base = {r: masks[name][radii.index(r)] for r in run.grid}
    counter.label = "other"
    worst = worst_case(masks) if masks else torch.stack([base[r] for r in radii])
    acc_large, large = _large_radius_check(run, budget, runners["apgd-ce"], worst, clean, counter)
    out = EnsembleResult(radii, clean, masks, worst, brk, distance, zero_grad, unver, acc_large, large, cascade,
                         counter, closest)
    return _unbatch(out) if single else out


@dataclass(frozen=True)
class _Run:
    """What every attack of one ensemble call shares: the lifted score, the replica-batched points, the radii, the
    pixel box and the chunking."""

    f: Score
    xr: torch.Tensor
    yr: torch.Tensor
    radii: list[float]
    event_dims: int
    clip: tuple[float, float] | None
    bs: int

    @property
    def grid(self) -> list[float]:
        return sorted(set(self.radii))

    @property
    def r_max(self) -> float:
        return max(self.radii) if self.radii else 0.0

    @property
    def chunks(self) -> list[slice]:
        return [slice(i, i + self.bs) for i in range(0, self.yr.shape[1], self.bs)]

    def verify(self, xs, x_adv, ys, rs) -> torch.Tensor:
        return _verify(self.f, xs, x_adv, ys, rs, self.event_dims, self.clip)

    def attack(self, attack, todo: torch.Tensor, r) -> tuple[torch.Tensor, int]:
        """``attack`` on the points ``todo`` at ``r`` (one radius or one per point): (verified broken, unverified)."""
        return on_survivors(attack, self.xr, self.yr, todo, r, self.bs, verify=self.verify)

    def survivors(self, attack, clean, start) -> tuple[torch.Tensor, torch.Tensor, int]:
        """A radius attack over the radii on its own survivors: (masks, break radius, count of unverified)."""
        unverified = [0]

        def broken(todo: torch.Tensor, r: float) -> torch.Tensor:
            b, u = self.attack(attack, todo, r)
            unverified[0] += u
            return b

        masks, b_r = survivor_masks(self.radii, clean, broken, start=start)
        return masks, b_r, unverified[0]


def _large_radius_check(run: _Run, budget: AttackBudget, apgd, worst, clean, counter: PassCounter):
    """The "a large ε reaches 0 %" check: APGD-CE at ``budget.large_radius`` (None: the pixel box's diameter with a
    box, else 10·max r) on the points robust at the largest radius (the others are broken in any larger ball).
    Returns (accuracy there or None when skipped, the radius)."""
    large = budget.large_radius
    if large is None:
        large = math.sqrt(run.xr[0, 0].numel()) * (run.clip[1] - run.clip[0]) if run.clip is not None \
            else 10 * run.r_max
    if not large > 0:
        return None, large
    left = worst[[run.radii.index(run.r_max)]][0] if run.radii else clean
    with counter.stage("large"):
        b, _ = run.attack(apgd, left, large)
    return float((left & ~b).double().mean()), large


def _unbatch(out: EnsembleResult) -> EnsembleResult:
    """A one-batch call's result without the replica axis of 1 it was computed with."""
    out.clean, out.zero_grad = out.clean[0], out.zero_grad[0]
    out.masks = {k: m[:, 0] for k, m in out.masks.items()}
    out.worst = out.worst[:, 0]
    out.break_radius = {k: v[0] for k, v in out.break_radius.items()}
    out.distance = None if out.distance is None else out.distance[0]
    out.closest = None if out.closest is None else out.closest[0]
    return out


def _descend(attack, run: _Run, base: dict[float, torch.Tensor]) -> tuple[torch.Tensor, int]:
    """The frontier: each point is attacked first at the largest radius where it is still to attack (``base``),
    then, while the attack breaks it, at the next smaller such radius; it stops at the first failure (a point it
    cannot break at r it does not attack at r' < r, whose ball lies inside r's). All points descend together, one
    radius per point per round (per-point radii), so an attack runs a few rounds, not once per radius. Returns (the
    smallest radius at which it broke each point, inf where none; count of unverified)."""
    yr = run.yr
    pos = [r for r in run.grid if r > 0]
    todo = torch.stack([base[r] for r in pos]) if pos else None  # (P, *batch), ascending radii
    b_r = torch.full(yr.shape, math.inf, dtype=torch.float64, device=yr.device)
    if todo is None:
        return b_r, 0
    radii = torch.tensor(pos, dtype=torch.float64, device=yr.device)
    idx = torch.arange(len(pos), device=yr.device).reshape(-1, *(1,) * yr.dim())
    cur = torch.where(todo, idx, -1).amax(0)  # the largest radius still to attack, -1: none
    unverified = 0
    while (cur >= 0).any():
        active = cur >= 0
        r = radii[cur.clamp(min=0)].where(active, radii[-1]).to(run.xr.dtype)
        b, u = run.attack(attack, active, r)
        unverified += u
        b_r = torch.where(b, radii[cur.clamp(min=0)], b_r)
        below = todo & (idx < cur)  # the next smaller radius still to attack, for the points it broke
        cur = torch.where(b, torch.where(below, idx, -1).amax(0), -1)
    return b_r, unverified


def _clean(run: _Run, clean: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The clean-correct mask (E, n) and where the score's gradient is exactly zero there; ``clean`` when already
    known (an earlier stage's): its pass and the zero-gradient count are not repeated (zero_grad all False)."""
    if clean is not None:
        return clean, torch.zeros_like(clean)
    f, xr, yr = run.f, run.xr, run.yr
    with torch.no_grad():
        clean = torch.cat([correct(f(xr[:, c]), yr[:, c]) for c in run.chunks], 1)
    zero_grad = torch.cat([_zero_grad(f, xr[:, c], yr[:, c], run.event_dims) for c in run.chunks], 1) & clean
    return clean, zero_grad


def _zero_grad(f, x: torch.Tensor, y: torch.Tensor, event_dims: int) -> torch.Tensor:
    """Whether the score's gradient is exactly zero at each point of the chunk."""
    with torch.enable_grad():
        z = x.detach().requires_grad_(True)
        (g,) = torch.autograd.grad((y * f(z)).sum(), z)
    return _norm(g, event_dims).reshape(y.shape) == 0


def _runners(budget: AttackBudget, f, lg, positive, event_dims: int, clip, generator) -> dict[str, Callable]:
    """The radius attacks ``(xs, ys, r) → (x_adv, fooled)`` of the budget."""
    b = budget
    runners: dict[str, Callable] = {
        "pgd": lambda xs, ys, r: pgd_l2(f, xs, ys, r, steps=b.pgd_steps, step_size=b.pgd_step_factor * r / b.pgd_steps,
                                        restarts=b.pgd_restarts, event_dims=event_dims, clip=clip,
                                        generator=generator),
        "apgd-ce": lambda xs, ys, r: apgd_l2(f, xs, ys, r, steps=b.steps, restarts=b.restarts,
                                             event_dims=event_dims, clip=clip, generator=generator),
        "square": lambda xs, ys, r: square_l2(f, xs, ys, r, queries=b.queries, p_init=b.p_init,
                                              clip=clip, generator=generator, event_dims=event_dims),
    }
    if lg is not None and positive is not None:
        runners["apgd-t"] = lambda xs, ys, r: apgd_targeted(lg, positive, xs, ys, r, n_targets=b.n_targets,
                                                            steps=b.steps, event_dims=event_dims, clip=clip,
                                                            generator=generator)
        runners["apgd-dlr"] = lambda xs, ys, r: apgd_targeted(lg, positive, xs, ys, r, n_targets=len(positive),
                                                              steps=b.steps, event_dims=event_dims, clip=clip,
                                                              generator=generator, loss="dlr")
    return runners


def compare_ensembles(scores: Mapping[str, Score], x: torch.Tensor, y: torch.Tensor, radii: list[float], *,
                      generator: torch.Generator, **kw) -> dict[str, EnsembleResult]:
    """Attack each net of a comparison with the same budget and the same random draws (each starts from a copy
    of ``generator``'s state), on the same points. ``kw``: see :func:`robust_masks_ensemble` (``logits``, if given,
    must then be a mapping with the same keys as ``scores``)."""
    logits = kw.pop("logits", None)
    out = {}
    state = generator.get_state()
    for name, sc in scores.items():
        g = torch.Generator(device=generator.device)
        g.set_state(state.clone())
        out[name] = robust_masks_ensemble(sc, x, y, radii, generator=g,
                                          logits=None if logits is None else logits[name], **kw)
    return out
