"""The attack ensemble's budget (:class:`AttackBudget`) and the names of the attacks it can run: a module of its own,
so that every stage of the ensemble (the minimum-norm stage, the schedule, the family check) can take a budget
without importing the ensemble that calls it."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

ATTACKS = ("apgd-ce", "apgd-t", "ddn", "square")
MIN_NORM = ("ddn", "fmn", "alma")  # minimum-norm attacks: one distance per point, every radius at once
# "pgd": margin PGD with a fixed step (Madry et al.), a cascade's cheap stage; "apgd-dlr": APGD with the targeted
# DLR loss against every class of the other group (the convergence check's other family)
KNOWN = ("pgd", *ATTACKS, "fmn", "alma", "apgd-dlr")
GRADIENT_FREE = ("square",)


def _count(default: int, *, scaled: bool = True) -> Any:
    """An AttackBudget parameter that is an int >= 1 (checked once, from this declaration); ``scaled``: multiplied
    by :meth:`AttackBudget.stronger` (steps, restarts, starts, queries; not the number of target classes)."""
    return field(default=default, metadata={"count": True, "scaled": scaled})


@dataclass(frozen=True)
class AttackBudget:
    """Per-attack budget. ``attacks``: which to run, in attribution order (ties go to the earlier one), among
    ``KNOWN`` ("pgd" is not run unless named); APGD-T runs only when fine logits are given (on a binary score it
    is APGD on the margin). ``large_radius``: the radius of the "a large ε reaches 0 %" check (None: the pixel
    box's diameter with ``clip``, else 10·max r; 0 skips it). ``pgd_steps`` steps of ``pgd_step_factor``·ε/steps
    and ``pgd_restarts`` restarts for "pgd". ``fmn_steps``/``alma_steps``: FMN's and ALMA's iterations per start,
    ``min_norm_starts`` their starts (the first from x, the others from random points of the ball of radius
    max r/2)."""

    steps: int = _count(100)
    restarts: int = _count(1)
    n_targets: int = _count(3, scaled=False)
    queries: int = _count(1000)
    p_init: float = 0.3
    ddn_steps: int = _count(100)
    attacks: tuple[str, ...] = ATTACKS
    large_radius: float | None = None
    pgd_steps: int = _count(20)
    pgd_step_factor: float = 2.5
    pgd_restarts: int = _count(1)
    fmn_steps: int = _count(100)
    alma_steps: int = _count(100)
    min_norm_starts: int = _count(1)

    def __post_init__(self):
        bad = [a for a in self.attacks if a not in KNOWN]
        if bad:
            raise ValueError(f"the 'attacks' parameter of AttackBudget must name attacks among {list(KNOWN)}; "
                             f"got {bad!r} instead")
        for f in fields(self):
            if f.metadata.get("count") and getattr(self, f.name) < 1:
                raise ValueError(f"the {f.name!r} parameter of AttackBudget must be an int >= 1; got "
                                 f"{getattr(self, f.name)!r} instead")

    def stronger(self, factor: int = 2) -> AttackBudget:
        """The convergence check's budget: ``factor``× the steps, restarts, starts and queries."""
        scaled = [f.name for f in fields(self) if f.metadata.get("scaled")]
        return replace(self, **{name: getattr(self, name) * factor for name in scaled})
