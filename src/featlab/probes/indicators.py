"""Indicators of attack failure (after Pintor et al., NeurIPS 2022, and AutoAttack's checks) on one robust-accuracy
curve: a JSON-able dict a run records beside the curve, with an overall ``converged`` a claim can pass on
(``ctx.claim(..., converged=ind["converged"])``): a claim on a flagged curve is "unverified", not judged.

Checks (each ``{"ok": bool, "value": ..., "detail": str}``):

* ``eps0_clean``     robust accuracy at ε = 0 equals clean accuracy (skipped if 0 is not a radius);
* ``monotone``       the worst-case curve never rises with ε (per replica);
* ``reaches_zero``   an unbounded-ish ε (the result's ``large_radius``) leaves 0 % robust;
* ``verified``       every adversarial point re-verified (fresh forward pass, in the box, clipped norm ≤ ε);
* ``zero_gradient``  share of clean-correct points whose score gradient is exactly 0 at x is ≤ ``tol``;
* ``masking``        no gradient-free attack (Square, or direction attacks given as ``extra_masks``) beats the
                     gradient attacks' worst case by more than ``tol`` at any radius (on a ``cascade`` result,
                     whose masks are cumulative: Square adds at most ``tol`` to what the gradient attacks broke);
* ``convergence``    a stronger budget (``strong``: more steps, restarts, queries) lowers the worst case by at
                     most ``tol`` at every radius (skipped without ``strong``; ``strong`` may be run with
                     ``start=result.worst``, on what the result left only: then it measures what it adds);
* ``family``         an attack family the schedule did not use moved no point at a transition radius (skipped
                     without ``family``: the record of probes/family_check.py).
"""

from __future__ import annotations

import torch
from scipy.stats import binomtest

from .ensemble import GRADIENT_FREE, EnsembleResult
from .robustness import worst_case


def _acc(mask: torch.Tensor) -> torch.Tensor:
    """(R, *batch) → (R, E) accuracies (E = 1 for one batch)."""
    m = mask.double().mean(-1)
    return m[:, None] if m.dim() == 1 else m


def _check(ok: bool, value, detail: str) -> dict:
    return {"ok": bool(ok), "value": value, "detail": detail}


def attack_indicators(result: EnsembleResult, *, strong: EnsembleResult | None = None,
                      extra_masks: dict[str, torch.Tensor] | None = None, tol: float = 0.01,
                      strong_points: torch.Tensor | None = None,
                      family: dict | None = None) -> dict:
    """The indicators of one ensemble result (see the module docstring). ``extra_masks``: other gradient-free
    attacks' (R, *batch) masks on the same radii (e.g. :func:`~featlab.probes.robustness.direction_masks`), which
    join the masking check and are ANDed into the reported worst case. ``tol``: one point of accuracy."""
    radii = list(result.radii)
    clean_acc = result.clean.double().mean(-1).reshape(-1)  # (E,)
    masks = dict(result.masks) | dict(extra_masks or {})
    worst = _acc(worst_case(masks) if masks else result.worst)
    out: dict = {"radii": radii, "tol": tol, "clean_acc": clean_acc.tolist(),
                 "worst_acc": worst.mean(-1).tolist(), "checks": {}}
    checks = out["checks"]

    if 0.0 in radii:
        i0 = radii.index(0.0)
        gap = float((worst[i0] - clean_acc).abs().max())
        checks["eps0_clean"] = _check(gap == 0, gap, "max |robust acc at ε=0 − clean acc| over replicas")

    order = sorted(range(len(radii)), key=lambda i: radii[i])
    rise = float((worst[order][1:] - worst[order][:-1]).clamp_min(0).max()) if len(radii) > 1 else 0.0
    checks["monotone"] = _check(rise == 0, rise, "largest rise of the worst-case curve with ε")

    if result.acc_large is not None:
        checks["reaches_zero"] = _check(result.acc_large == 0, result.acc_large,
                                        f"APGD-CE robust accuracy at ε = {result.large_radius:.4g}")

    n_unv = sum(result.unverified.values())
    checks["verified"] = _check(n_unv == 0, dict(result.unverified),
                                "adversarial points that failed re-verification, per attack")

    n_clean = int(result.clean.sum())
    zshare = float(result.zero_grad.sum()) / max(n_clean, 1)
    checks["zero_gradient"] = _check(zshare <= tol, zshare, "share of clean-correct points with ∇score(x) = 0")

    grad_names = [k for k in result.masks if k not in GRADIENT_FREE]
    free = {k: m for k, m in masks.items() if k in GRADIENT_FREE or k in (extra_masks or {})}
    if grad_names and free:
        g_acc = _acc(worst_case({k: result.masks[k] for k in grad_names}))
        gaps = {k: float((g_acc - _acc(m)).max()) for k, m in free.items()}
        worst_gap = max(gaps.values())
        checks["masking"] = _check(worst_gap <= tol, gaps,
                                   "max over radii/replicas of (gradient attacks' acc − this attack's acc)")

    if strong is not None and strong_points is not None:
        checks["convergence"] = _subsample_drop(worst_case(masks) if masks else result.worst, strong, strong_points,
                                                tol)
    elif strong is not None:
        s_acc = _acc(worst_case(dict(strong.masks) | dict(extra_masks or {})) if strong.masks else strong.worst)
        drop = float((worst - s_acc).max())
        checks["convergence"] = _check(drop <= tol, drop, "max over radii/replicas of (acc − acc with the "
                                                          "stronger budget)")

    if family is not None:
        checks["family"] = dict(family)

    flagged = sorted(k for k, c in checks.items() if not c["ok"])
    out["flagged"] = flagged
    out["converged"] = not flagged
    return out


def _subsample_drop(worst: torch.Tensor, strong: EnsembleResult, points: torch.Tensor, tol: float) -> dict:
    """The stronger budget run on ``points`` (indices into the batch, one replica): at each radius the share of the
    subsample it breaks that the result left robust, and the exact 95 % interval of the largest; flagged only when
    that interval lies above ``tol`` (a drop the subsample cannot tell from ``tol`` is not a failure)."""
    base = worst[..., points]
    s_w = worst_case(dict(strong.masks)) if strong.masks else strong.worst
    k = (base & ~s_w).reshape(base.shape[0], -1).sum(-1)  # (R,)
    m = int(points.numel())
    kmax = int(k.max()) if m else 0
    ci = binomtest(kmax, m).proportion_ci(0.95, method="exact") if m else None
    lo, hi = (float(ci.low), float(ci.high)) if ci else (0.0, 1.0)
    out = _check(lo <= tol, kmax / max(m, 1), f"largest share over radii of a {m}-point random subsample that the "
                 f"stronger budget breaks beyond the result, 95 % interval [{lo:.3g}, {hi:.3g}] (flagged when it "
                 f"lies above {tol})")
    out.update(interval=[lo, hi], n=m)
    return out
