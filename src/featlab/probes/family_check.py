"""The convergence check that changes the attack family, not only the budget.

Doubling a search's steps does not show what another kind of search finds: a curve can pass "twice the budget
moves nothing" and still be too high (on fa-resnet-digits quick, DDN's curve passed it while FMN and ALMA broke
points below DDN's distances). This check runs, on a fixed random subsample of the points, an attack family the
schedule did not use — a minimum-norm attack among DDN, FMN, ALMA (probes/min_norm.py) that it left out, else APGD
with the targeted DLR loss against every class of the other group ("apgd-dlr", Croce & Hein 2020) — on what the
result left robust, each point from its own break radius down (``frontier``), every break re-verified. It reports
which family ran, how many points it moved (broke at a radius where the result had them robust), the largest
drop of the subsample's accuracy and the largest shift of a point's break radius; it flags the curve when a point
moved at a transition radius (where the result's curve lies strictly between 2 % and 98 %: the radii the claims
read). The record joins the attack-failure indicators (``attack_indicators(..., family=...)``).

Limitation: on a two-logit net (the 2-class arm) the DLR loss needs 4 classes and falls back to the plain targeted
margin, so once the schedule uses all three minimum-norm families the check there is APGD-T's own family from other
random starts; it changes the family only on the k-class net.
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch

from .budget import MIN_NORM, AttackBudget
from .ensemble import EnsembleResult, robust_masks_ensemble
from .robustness import transition_radii

FAMILIES = (*MIN_NORM, "apgd-dlr")


def other_family(attacks: tuple[str, ...] | list[str], logits_given: bool = True) -> str:
    """The family the check runs: the first minimum-norm attack (ALMA, FMN, DDN) the schedule did not use, else
    targeted DLR APGD (which needs the logits; without them, ALMA from other random starts)."""
    for a in ("alma", "fmn", "ddn"):
        if a not in attacks:
            return a
    return "apgd-dlr" if logits_given else "alma"


def family_check(score, x: torch.Tensor, y: torch.Tensor, result: EnsembleResult, points: torch.Tensor, *,
                 budget: AttackBudget, family: str = "auto", generator: torch.Generator | None = None,
                 **kw) -> dict:
    """Run ``family`` ("auto": :func:`other_family` of ``budget.attacks``) on ``points`` (indices into the batch
    of x (n, *event) / y (n,)) from what ``result`` left robust there; ``kw`` as for
    :func:`~featlab.probes.ensemble.robust_masks_ensemble` (``logits``, ``positive``, ``event_dims``, ``clip``,
    ``batch_size``). Returns the check's record (``ok``, ``value``: the largest drop, ``detail``, ``family``,
    ``n``, ``moved``, ``moved_at_transition``, ``radius_shift``, ``passes``)."""
    if family == "auto":
        family = other_family(budget.attacks, kw.get("logits") is not None and kw.get("positive") is not None)
    if family not in FAMILIES:
        raise ValueError(f"the 'family' parameter of family_check must be one of {['auto', *FAMILIES]}; got "
                         f"{family!r} instead")
    radii = list(result.radii)
    base = result.worst[:, points]
    b = replace(budget, attacks=(family,), large_radius=0)
    check = robust_masks_ensemble(score, x[points], y[points], radii, budget=b, start=base, frontier=True,
                                  generator=generator, clean=result.clean[points], **kw)
    moved = base & ~check.worst  # (R, m): broken by the family where the result had the point robust
    m = int(points.numel())
    trans = transition_radii(radii, result.worst.double().mean(-1)[:, None])
    at_t = moved[trans].any(0) if trans else torch.zeros(m, dtype=torch.bool, device=moved.device)
    drop = float(moved.double().mean(-1).max()) if m and len(radii) else 0.0
    out = {"ok": not bool(at_t.any()), "value": drop, "family": family, "n": m, "moved": int(moved.any(0).sum()),
           "moved_at_transition": int(at_t.sum()), "radius_shift": _shift(radii, base, check.worst),
           "passes": check.passes.total(),
           "detail": f"{family} (a family the schedule did not use) on a {m}-point random subsample, from what the "
                     f"result left: points it broke below the result's break radius (flagged when one moved at a "
                     f"transition radius); value: the largest drop of the subsample's accuracy"}
    return out


def _shift(radii: list[float], before: torch.Tensor, after: torch.Tensor) -> float:
    """The largest decrease of a point's break radius (the smallest grid radius where it is not robust; a point
    robust at every radius counts from the largest radius), 0 when none moved."""
    r = torch.tensor(radii, dtype=torch.float64, device=before.device)[:, None]
    top = float(max(radii)) if radii else 0.0
    b0 = torch.where(~before, r, math.inf).amin(0).clamp(max=top)
    b1 = torch.where(~after, r, math.inf).amin(0).clamp(max=top)
    return float((b0 - b1).clamp_min(0).max()) if before.shape[-1] else 0.0
