"""A verdict with its sampling uncertainty: a 95 % interval (runs/intervals.py picks the method) decides it.

An inequality **holds** when the whole interval lies on its side of the threshold, **fails** when the whole interval
lies on the wrong side, and is **inconclusive** otherwise; a claim whose measurement rests on a search flagged as not
converged is **unverified** whatever its value. The samples are the run's independent units (seeds, or test points);
a comparison between methods passes paired samples (the same seed or test point under both), so the interval is
that of the paired difference. Points pooled over seeds pass a :class:`Clustered` sample (each point's seed id): the
interval resamples seeds, then points within them, and counts the seeds.

**Which interval** (issue 32; runs/intervals.py; coverage measured by tests/test_interval_coverage.py): 0/1 units
with the default mean get the exact Clopper–Pearson interval (conservative; never zero-width, 5/5 → [0.478, 1]);
the mean of fewer than 30 units Student's t (``mean_difference`` of paired units: the paired t); any other
statistic, paired samples and the mean of 30 units or more a BCa bootstrap widened by the t factor κ_n; a
Clustered sample a two-stage cluster bootstrap with a t quantile on G − 1 degrees of freedom (every point 0, or
every point 1: Clopper–Pearson over the G seeds).

**The minimum-units rule.** A verdict that rests on fewer than ``MIN_UNITS`` = 5 independent replicas is
**inconclusive by rule**, even when its interval clears the threshold (either way), and ``units_to_settle`` gives at
least ``MIN_UNITS``: with 3 or 4 seeds the interval's own width is estimated from 2 or 3 degrees of freedom, and
one odd seed decides it. Replicas are what re-runs the whole experiment: an interval over units named ``seeds``,
``nets`` or ``runs`` (the first word of ``unit``: 'seeds, certified to attacked' counts) and every Clustered
interval (its n counts seeds). Test points, neurons, classes or noisy points are not replicas — they are drawn
from the run's nets, and their count says nothing about how many nets were trained — so the rule leaves them
alone (pool them over seeds with Clustered to make the seeds count). ``min_units=0`` switches the rule off for a
claim that quantifies over something else than replicas.

A claim measured without samples is a statement about every unit of the run (every neuron of every seed, the worst
case over seeds): its verdict is exact for the run and carries no interval; its ``Claim.exact`` says why.

A measurement known only between two bounds per unit (robust accuracy between a certified lower bound and an
attack's upper bound) passes a :class:`Bracket`: the interval runs from the lower side's low to the upper side's
high, so the claim holds only when both sides hold and fails only when both fail — it is judged on the side that
makes it hardest to pass. Its sides may be Clustered.
"""

from __future__ import annotations

import math

from .intervals import (
    CONFIDENCE,
    RESAMPLES,
    Bracket,
    Clustered,
    Interval,
    Samples,
    clopper_pearson,
    interval,
    mean_difference,
    t_interval,
)

__all__ = ["CONFIDENCE", "RESAMPLES", "Bracket", "Clustered", "Interval", "Samples", "clopper_pearson", "interval",
           "mean_difference", "t_interval", "HELD", "FAILED", "INCONCLUSIVE", "UNVERIFIED", "STATUSES", "MIN_UNITS",
           "REPLICA_UNITS", "replicas", "too_few_units", "decide", "units_to_settle"]

HELD, FAILED, INCONCLUSIVE, UNVERIFIED = "held", "failed", "inconclusive", "unverified"
STATUSES = (HELD, FAILED, INCONCLUSIVE, UNVERIFIED)
MIN_UNITS = 5  # independent replicas a verdict needs (issue 32: "say 5 seeds")
REPLICA_UNITS = frozenset({"seeds", "seed", "nets", "net", "runs", "run"})


def replicas(iv: Interval) -> int | None:
    """The independent replicas ``iv`` rests on: its n when it counts clusters or its unit names seeds, nets or
    runs; None when its units are not replicas (test points, neurons, classes of the run's nets)."""
    first = iv.unit.split(maxsplit=1)[0].strip(",;:()").lower() if iv.unit.strip() else ""
    return iv.n if iv.clustered or first in REPLICA_UNITS else None


def too_few_units(iv: Interval | None, min_units: int = MIN_UNITS) -> bool:
    """Whether the minimum-units rule makes a verdict on ``iv`` inconclusive (fewer than ``min_units`` replicas)."""
    r = replicas(iv) if iv is not None else None
    return r is not None and r < min_units


def decide(bounds: tuple[float | None, float | None], strict: bool, value: float, iv: Interval | None,
           converged: bool | None = None, *, min_units: int = MIN_UNITS) -> str:
    """held / failed / inconclusive / unverified for a measured value, its interval and the threshold's bounds;
    inconclusive by rule when the interval rests on fewer than ``min_units`` replicas."""
    if converged is False:
        return UNVERIFIED
    if not isinstance(value, float) or math.isnan(value):
        return FAILED
    lo, hi = bounds
    a, b = (iv.lo, iv.hi) if iv is not None else (value, value)

    def above(x: float, bound: float) -> bool:  # x on the holding side of a lower bound
        return x > bound if strict else x >= bound

    def below(x: float, bound: float) -> bool:
        return x < bound if strict else x <= bound

    inside = (lo is None or above(a, lo)) and (hi is None or below(b, hi))
    outside = (lo is not None and not above(b, lo)) or (hi is not None and not below(a, hi))
    if (inside or outside) and too_few_units(iv, min_units):
        return INCONCLUSIVE
    if inside:
        return HELD
    return FAILED if outside else INCONCLUSIVE


def units_to_settle(bounds: tuple[float | None, float | None], value: float, iv: Interval, *,
                    min_units: int = MIN_UNITS) -> int | None:
    """For an inconclusive verdict: how many units would shrink the interval (∝ 1/√n) clear of the nearest bound,
    at the same point estimate, and at least ``min_units`` where the minimum-units rule applies; None when the
    estimate sits on the bound (no number of units settles it) or a Bracket's own width reaches the bound (a
    tighter bound settles it, not more units), or no interval was measured (NaN: e.g. a curve that never
    crosses)."""
    if not (math.isfinite(iv.lo) and math.isfinite(iv.hi)):
        return None
    gaps = [abs(value - x) for x in bounds if x is not None]
    gap = min(gaps) if gaps else 0.0
    half = (iv.hi - iv.lo) / 2
    if gap <= 0 or iv.gap >= gap:
        return None
    few = too_few_units(iv, min_units)
    if half <= 0:
        return min_units if few else None
    need = max(iv.n + 1, math.ceil(iv.n * (half / gap) ** 2))
    return max(need, min_units) if few else need
