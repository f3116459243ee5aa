"""A verdict with its sampling uncertainty: a 95 % bootstrap interval (scipy.stats.bootstrap) decides it.

An inequality **holds** when the whole interval lies on its side of the threshold, **fails** when the whole interval
lies on the wrong side, and is **inconclusive** otherwise; a claim whose measurement rests on a search flagged as not
converged is **unverified** whatever its value. The samples are the run's independent units (seeds, or test points
pooled over seeds); a comparison between methods passes paired samples (the same seed or test point under both),
so the interval is that of the paired difference (a paired bootstrap).

A claim measured without samples is a statement about every unit of the run (every neuron of every seed, the worst
case over seeds): its verdict is exact for the run and carries no interval; its ``Claim.exact`` says why.

A measurement known only between two bounds per unit (robust accuracy between a certified lower bound and an
attack's upper bound) passes a :class:`Bracket`: the interval runs from the lower side's bootstrap low to the upper
side's bootstrap high, so the claim holds only when both sides hold and fails only when both fail — it is judged on
the side that makes it hardest to pass.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..placement import to_numpy

HELD, FAILED, INCONCLUSIVE, UNVERIFIED = "held", "failed", "inconclusive", "unverified"
STATUSES = (HELD, FAILED, INCONCLUSIVE, UNVERIFIED)
CONFIDENCE = 0.95
RESAMPLES = 2000  # percentile bootstrap; the interval's own Monte-Carlo error is well under its width at this count

Samples = Sequence[float] | np.ndarray | Any  # 1-D per-unit values, or a tuple of equal-length arrays (paired)


@dataclass(frozen=True)
class Interval:
    lo: float
    hi: float
    n: int  # independent units resampled
    unit: str  # 'seeds', 'test points', 'neurons', ...
    gap: float = 0.0  # a Bracket's width at the point estimate: what more units cannot shrink


class Bracket(NamedTuple):
    """Per-unit samples of a sound lower and upper bound on the measurement (each an array or a paired tuple)."""

    lower: Samples
    upper: Samples


def _arrays(samples: Samples) -> tuple[np.ndarray, ...]:
    arrs = samples if isinstance(samples, tuple) and not isinstance(samples, Bracket) else (samples,)
    out = []
    for a in arrs:
        out.append(to_numpy(a, float).reshape(-1))
    if len({len(a) for a in out}) != 1:
        raise ValueError(f"paired samples must have equal lengths, got {[len(a) for a in out]}")
    return tuple(out)


def _takes_axis(f: Callable[..., Any]) -> bool:
    """A statistic written ``f(a, ..., axis=-1)`` is applied to every resample at once (scipy's vectorized mode:
    one call instead of one per resample); any other is called once per resample."""
    try:
        return "axis" in inspect.signature(f).parameters
    except (TypeError, ValueError):
        return False


def _mean(a: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(a, axis=axis)


def _finite(samples: Samples) -> tuple[np.ndarray, ...]:
    arrs = _arrays(samples)
    finite = np.all([np.isfinite(a) for a in arrs], axis=0)
    return tuple(a[finite] for a in arrs)


def _point(samples: Samples, statistic: Callable[..., float] | None) -> float:
    """The statistic on the finite units (the point estimate)."""
    stat: Callable[..., Any] = statistic or _mean
    return float(stat(*_finite(samples)))


def interval(samples: Samples, statistic: Callable[..., float] | None = None, *, unit: str = "seeds",
             seed: int = 0) -> Interval | None:
    """The 95 % percentile-bootstrap interval of ``statistic`` (default: the mean) over the samples; paired when
    given a tuple of arrays (``statistic(a, b, ...)``, resampled together; give it an ``axis=-1`` parameter and it
    is applied to all resamples in one call). None with fewer than 2 units. A :class:`Bracket` gives the hull of
    its two sides' intervals."""
    if isinstance(samples, Bracket):
        sides = [interval(s, statistic, unit=unit, seed=seed) for s in samples]
        if sides[0] is None or sides[1] is None:
            return None
        ends = [_point(s, statistic) for s in samples]
        return Interval(min(sides[0].lo, sides[1].lo), max(sides[0].hi, sides[1].hi), sides[0].n, unit,
                        gap=abs(ends[1] - ends[0]))
    arrs = _finite(samples)
    n = len(arrs[0])
    if n < 2:
        return None
    stat: Callable[..., Any] = statistic or _mean
    if all(np.ptp(a) == 0 for a in arrs):  # every unit measured the same: the bootstrap distribution is a point
        v = float(stat(*arrs)) if statistic else float(arrs[0][0])
        return Interval(v, v, n, unit)
    from scipy.stats import bootstrap  # lazy: scipy is a heavy import and most commands never judge a claim

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on near-degenerate resamples; the interval is still valid
        res = bootstrap(arrs, stat, n_resamples=RESAMPLES, confidence_level=CONFIDENCE, method="percentile",
                        paired=len(arrs) > 1, vectorized=_takes_axis(stat), rng=np.random.default_rng(seed))
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return Interval(lo, hi, n, unit)


def decide(bounds: tuple[float | None, float | None], strict: bool, value: float, iv: Interval | None,
           converged: bool | None = None) -> str:
    """held / failed / inconclusive / unverified for a measured value, its interval and the threshold's bounds."""
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
    if inside:
        return HELD
    outside = (lo is not None and not above(b, lo)) or (hi is not None and not below(a, hi))
    return FAILED if outside else INCONCLUSIVE


def units_to_settle(bounds: tuple[float | None, float | None], value: float, iv: Interval) -> int | None:
    """For an inconclusive verdict: how many units would shrink the interval (∝ 1/√n) clear of the nearest bound,
    at the same point estimate; None when the estimate sits on the bound (no number of units settles it) or a
    Bracket's own width reaches the bound (a tighter bound settles it, not more units)."""
    gaps = [abs(value - x) for x in bounds if x is not None]
    gap = min(gaps) if gaps else 0.0
    half = (iv.hi - iv.lo) / 2
    if gap <= 0 or half <= 0 or iv.gap >= gap:
        return None
    return max(iv.n + 1, math.ceil(iv.n * (half / gap) ** 2))
