"""The 95 % interval methods behind runs/uncertainty.py, and the one function, :func:`interval`, that picks one.

Which method a sample gets (issue 32: a percentile bootstrap over few units is not a 95 % interval):

* **0/1 units, the mean** (k successes of n units, unpaired, ``statistic=None``): Clopper–Pearson, exact and
  conservative — never zero-width from finitely many units (5/5 → [0.478, 1], 20/20 → [0.832, 1]).
* **the mean of n < 30 units** (``statistic=None``), or of paired differences (``statistic=mean_difference``):
  Student's t (paired t on the differences).
* **anything else** (a custom statistic, paired samples, the mean of n ≥ 30 units): scipy's BCa bootstrap, its
  ends pushed away from the estimate by κ_n = t_{n−1}·√(n/(n−1)) / z (Hesterberg 2015's expansion: for the mean
  of normal data it gives the t interval; κ_30 = 1.06, κ → 1 as n grows); percentile where BCa is NaN or
  degenerate, and above BCA_MAX_UNITS units (its jackknife costs n² evaluations; its correction is O(n^−½) there).
* **a Clustered share** (0/1 points pooled over seeds, the mean): Wilson's score interval at the cluster-robust
  effective number of points, Student's t on G − 1 degrees of freedom (:func:`clustered_share`): inside [0, 1] by
  construction, never clipped.
* **any other Clustered sample** (points pooled over seeds): a two-stage bootstrap — the seeds with replacement,
  then the points within each drawn seed — whose standard error, times √(G/(G−1)) and Student's t on G − 1 degrees of
  freedom, gives θ̂ ± half-width (the few-cluster correction; the second stage counts the within-seed noise twice,
  so it errs wide when that noise dominates). n is the number of seeds. Every point 0 (or every point 1):
  Clopper–Pearson over the seeds, each one unit (the seeds' spread is not seen, so none is assumed away).

Paired 0/1 units that never disagree (every unit the same on both sides): the statistic ± the Clopper–Pearson
bound on the share of units that could disagree, none seen (never zero-width). Samples where every unit measured
the same and no method above applies (a custom statistic of 30 units or more) give a point.
tests/test_interval_coverage.py measures the coverage of each method.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..placement import to_numpy

CONFIDENCE = 0.95
RESAMPLES = 2000  # the bootstrap's own Monte-Carlo error is well under the interval's width at this count
SMALL_N = 30  # below: the mean of the units gets Student's t
BCA_MAX_UNITS = 5_000  # above: percentile instead of BCa
_CELLS = 4_000_000  # array elements a batch of resamples may hold (bounds memory for pooled points)

Samples = Sequence[float] | np.ndarray | Any  # 1-D per-unit values, or a tuple of equal-length arrays (paired)


@dataclass(frozen=True)
class Interval:
    lo: float
    hi: float
    n: int  # independent units resampled (a Clustered sample: its clusters)
    unit: str  # 'seeds', 'test points', 'seeds (× test points)', ...
    gap: float = 0.0  # a Bracket's width at the point estimate: what more units cannot shrink
    method: str = ""  # 'clopper-pearson', 't', 'paired t', 'BCa', 'percentile', 'cluster', 'point'
    clustered: bool = False  # n counts the clusters (seeds, nets) of a Clustered sample


class Bracket(NamedTuple):
    """Per-unit samples of a sound lower and upper bound on the measurement (each an array, a paired tuple or a
    :class:`Clustered`)."""

    lower: Samples
    upper: Samples


class Clustered(NamedTuple):
    """Points pooled over seeds: ``values`` (an array, or a tuple of equal-length arrays for paired points) and
    ``clusters``, each point's seed (or net) id. Resampled seeds first, then points within each seed."""

    values: Samples
    clusters: Samples
    of: str = "seeds"  # what a cluster is: the interval's unit reads '<of> (× <unit>)'


def mean_difference(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    """mean(a − b) of paired samples: with it a paired tuple of n < 30 units gets the paired t interval."""
    return np.mean(np.asarray(a) - np.asarray(b), axis=axis)


def _mean(a: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(a, axis=axis)


def _takes_axis(f: Callable[..., Any]) -> bool:
    """A statistic written ``f(a, ..., axis=-1)`` is applied to every resample at once; any other is called once per
    resample."""
    try:
        return "axis" in inspect.signature(f).parameters
    except (TypeError, ValueError):
        return False


def _arrays(samples: Samples) -> tuple[np.ndarray, ...]:
    if isinstance(samples, Bracket | Clustered):
        raise TypeError(f"a {type(samples).__name__} cannot be one side of a paired tuple")
    arrs = samples if isinstance(samples, tuple) else (samples,)
    out = tuple(to_numpy(a, float).reshape(-1) for a in arrs)
    if len({len(a) for a in out}) != 1:
        raise ValueError(f"paired samples must have equal lengths, got {[len(a) for a in out]}")
    return out


def _finite(samples: Samples) -> tuple[np.ndarray, ...]:
    arrs = _arrays(samples)
    finite = np.all([np.isfinite(a) for a in arrs], axis=0)
    return tuple(a[finite] for a in arrs)


def point(samples: Samples, statistic: Callable[..., float] | None) -> float:
    """The statistic on the finite units (the point estimate); a Clustered sample's on its pooled points."""
    stat: Callable[..., Any] = statistic or _mean
    values = samples.values if isinstance(samples, Clustered) else samples
    return float(stat(*_finite(values)))


def _kappa(n: int) -> float:
    """t_{n−1}·√(n/(n−1)) / z: the bootstrap's (n−1)/n variance and its normal tails, corrected to Student's."""
    from scipy.stats import norm, t

    q = (1 + CONFIDENCE) / 2
    return float(t.ppf(q, n - 1) * np.sqrt(n / (n - 1)) / norm.ppf(q))


def t_interval(x: np.ndarray, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Student's t interval of the mean along ``axis`` (any batch shape)."""
    from scipy.stats import t

    x = np.asarray(x, float)
    n = x.shape[axis]
    m, s = x.mean(axis), x.std(axis, ddof=1)
    half = t.ppf((1 + CONFIDENCE) / 2, n - 1) * s / np.sqrt(n)
    return m - half, m + half


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    """The exact binomial interval of k successes in n units (never narrower than 95 %: conservative)."""
    from scipy.stats import binomtest

    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=CONFIDENCE, method="exact")
    return float(ci.low), float(ci.high)


def bootstrap_interval(arrs: tuple[np.ndarray, ...], stat: Callable[..., Any], rng: np.random.Generator,
                       resamples: int = RESAMPLES) -> tuple[np.ndarray, np.ndarray, str]:
    """BCa (percentile above BCA_MAX_UNITS, or where BCa is NaN or degenerate), expanded by κ_n about the estimate.
    The arrays' last axis holds the units; leading axes (a statistic with ``axis``) are independent data sets."""
    from scipy.stats import bootstrap

    n = arrs[0].shape[-1]
    vec = _takes_axis(stat)
    method = "BCa" if n <= BCA_MAX_UNITS else "percentile"
    batch = max(1, min(resamples, _CELLS // max(n, 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on degenerate resamples; they are handled below
        res = bootstrap(arrs, stat, n_resamples=resamples, confidence_level=CONFIDENCE, method=method,
                        paired=len(arrs) > 1, vectorized=vec, rng=rng, batch=batch, axis=-1)
        theta = np.asarray(stat(*arrs, axis=-1) if vec else stat(*arrs), float)
    lo = np.array(res.confidence_interval.low, float, ndmin=1)
    hi = np.array(res.confidence_interval.high, float, ndmin=1)
    bad = ~np.isfinite(lo) | ~np.isfinite(hi) | (lo > hi)
    if bad.any():  # BCa's bias or acceleration undefined (e.g. every resample equals the estimate)
        dist = np.asarray(res.bootstrap_distribution, float).reshape(len(lo), -1)
        q = np.nanpercentile(dist[bad], [100 * (1 - CONFIDENCE) / 2, 100 * (1 + CONFIDENCE) / 2], axis=-1)
        lo[bad], hi[bad] = q[0], q[1]
        method = f"{method} (percentile where BCa degenerate)" if not bad.all() else "percentile"
    k, th = _kappa(n), theta.reshape(lo.shape)
    lo, hi = np.minimum(lo, th - k * (th - lo)), np.maximum(hi, th + k * (hi - th))
    flat = _flat(np.asarray(res.bootstrap_distribution, float).reshape(len(lo), -1), th)
    lo[flat], hi[flat] = th[flat], th[flat]  # every resample gave the estimate (up to rounding): a point
    return lo, hi, method


def _flat(dist: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Per data set: whether every resample's statistic equals the estimate up to float rounding (e.g. a paired
    difference that is 0 on every unit): no spread to widen, and rounding must not make a bound look crossed."""
    dev = np.abs(dist - theta[:, None])
    dev[~np.isfinite(dev)] = np.inf  # a NaN resample is not the estimate
    return np.max(dev, axis=-1) <= 1e-12 * (1 + np.abs(theta))


def cluster_bootstrap(arrs: tuple[np.ndarray, ...], clusters: np.ndarray, stat: Callable[..., Any],
                      rng: np.random.Generator, resamples: int = RESAMPLES) -> np.ndarray:
    """The statistic on ``resamples`` two-stage resamples: G clusters drawn with replacement, then, in each drawn
    cluster, as many of its points as it has, with replacement. Vectorised over resamples in memory-bounded batches
    (a statistic with ``axis`` and equal cluster sizes: one call per batch)."""
    codes = np.unique(clusters, return_inverse=True)[1].reshape(-1)
    order = np.argsort(codes, kind="stable")
    arrs = tuple(a[order] for a in arrs)  # each cluster's points contiguous
    sizes = np.bincount(codes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    G, N = len(sizes), len(codes)
    equal = bool((sizes == sizes[0]).all())
    vec = _takes_axis(stat)
    out = np.empty(resamples)
    chunk = max(1, _CELLS // N)
    for s in range(0, resamples, chunk):
        B = min(chunk, resamples - s)
        pick = rng.integers(G, size=(B, G)).ravel()  # stage 1: the clusters
        if equal:  # stage 2: as many points as the cluster has, drawn within it
            m = int(sizes[0])
            idx = (starts[pick][:, None] + rng.integers(0, m, size=(B * G, m))).reshape(B, G * m)
            if vec:
                out[s:s + B] = stat(*(a[idx] for a in arrs), axis=-1)
            else:
                out[s:s + B] = [stat(*(a[i] for a in arrs)) for i in idx]
            continue
        per = sizes[pick]
        flat = np.repeat(starts[pick], per) + rng.integers(0, np.repeat(per, per))
        ends = np.cumsum(per.reshape(B, G).sum(1))
        for r, sl in enumerate(np.split(flat, ends[:-1])):
            out[s + r] = stat(*(a[sl] for a in arrs))
    return out


def _clustered(samples: Clustered, statistic: Callable[..., float] | None, unit: str, seed: int,
               resamples: int) -> Interval | None:
    arrs = _arrays(samples.values)
    ids = np.asarray(to_numpy(samples.clusters)).reshape(-1)
    if len(ids) != len(arrs[0]):
        raise ValueError(f"Clustered: {len(arrs[0])} values but {len(ids)} cluster ids")
    if statistic is None and len(arrs) > 1:
        raise ValueError("paired Clustered samples need a statistic (e.g. mean_difference)")
    finite = np.all([np.isfinite(a) for a in arrs], axis=0)
    arrs, ids = tuple(a[finite] for a in arrs), ids[finite]
    label = f"{samples.of} (× {unit if unit != samples.of else 'points'})"
    G = len(np.unique(ids))
    if G < 2:  # one seed: the points' own interval; the between-seed spread is unknown (the minimum-units rule)
        inner = interval(arrs if len(arrs) > 1 else arrs[0], statistic, unit=unit, seed=seed, resamples=resamples)
        return None if inner is None else Interval(inner.lo, inner.hi, G, label, method=f"{inner.method}, 1 cluster",
                                                   clustered=True)
    stat: Callable[..., Any] = statistic or _mean
    theta = float(stat(*arrs))
    if statistic is None and np.ptp(arrs[0]) == 0 and _binary(arrs[0][:1]):
        # every point of every seed 0 (or 1): no spread to resample, and the seeds may differ wholly (a seed is
        # one unit that fully succeeded): Clopper–Pearson over the seeds, never zero-width
        lo, hi = clopper_pearson(int(theta) * G, G)
        return Interval(lo, hi, G, label, method="clopper-pearson over clusters", clustered=True)
    if all(np.ptp(a) == 0 for a in arrs):
        return Interval(theta, theta, G, label, method="point", clustered=True)
    if statistic is None and len(arrs) == 1 and _binary(arrs[0]):  # a share: bounded by construction
        codes = np.unique(ids, return_inverse=True)[1].reshape(-1)
        lo_a, hi_a = clustered_share(np.bincount(codes, weights=arrs[0]), np.bincount(codes))
        return Interval(float(lo_a), float(hi_a), G, label, method="wilson (clustered)", clustered=True)
    from scipy.stats import t

    boot = cluster_bootstrap(arrs, ids, stat, np.random.default_rng(seed), resamples)
    boot = boot[np.isfinite(boot)]
    if _flat(boot[None, :], np.array([theta]))[0]:
        if all(_binary(a) for a in arrs):  # paired 0/1 points that never disagree: no spread to resample, and
            # no seed disagreed at all: the share of disagreeing seeds by Clopper–Pearson bounds the difference
            half = clopper_pearson(0, G)[1]
            return Interval(theta - half, theta + half, G, label, method="clopper-pearson over clusters (no point "
                            "differs)", clustered=True)
        return Interval(theta, theta, G, label, method="point", clustered=True)
    half = float(t.ppf((1 + CONFIDENCE) / 2, G - 1) * np.sqrt(G / (G - 1)) * np.std(boot, ddof=1))
    return Interval(theta - half, theta + half, G, label, method="cluster", clustered=True)


def clustered_share(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 95 % interval of a share pooled over G clusters (k successes of n points in each; any leading batch
    axes): Wilson's score interval — inside [0, 1] by construction, never clipped — at the effective number of
    points p̂(1 − p̂)/v, v the cluster-robust (ratio-estimator) variance of p̂ with the G/(G − 1) correction, capped
    at the points counted (a seed effect only shrinks it), with Student's t on G − 1 degrees of freedom for z.
    Coverage: tests/test_interval_coverage.py (5 seeds × 100 points with a seed effect: ≥ 95 %)."""
    from scipy.stats import t

    k, n = np.asarray(k, float), np.asarray(n, float)
    G, N = k.shape[-1], n.sum(-1)
    p = k.sum(-1) / N
    v = G / (G - 1) * ((k - p[..., None] * n) ** 2).sum(-1) / N ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        n_eff = np.clip(np.where(v > 0, p * (1 - p) / v, N), 1e-9, N)
    z = t.ppf((1 + CONFIDENCE) / 2, G - 1)
    den = 1 + z * z / n_eff
    centre = (p + z * z / (2 * n_eff)) / den
    half = z / den * np.sqrt(p * (1 - p) / n_eff + z * z / (4 * n_eff ** 2))
    return centre - half, centre + half


def _binary(a: np.ndarray) -> bool:
    return bool(np.all((a == 0) | (a == 1)))


def interval(samples: Samples, statistic: Callable[..., float] | None = None, *, unit: str = "seeds",
             seed: int = 0, resamples: int = RESAMPLES) -> Interval | None:
    """The 95 % interval of ``statistic`` (default: the mean) over the samples, by the method the module docstring
    gives for them; paired when given a tuple of arrays (``statistic(a, b, ...)``, resampled together; give it an
    ``axis=-1`` parameter and it is applied to all resamples in one call). None with fewer than 2 units (a
    Clustered sample: fewer than 2 points). A :class:`Bracket` gives the hull of its two sides' intervals."""
    if isinstance(samples, Bracket):
        sides = [interval(s, statistic, unit=unit, seed=seed, resamples=resamples) for s in samples]
        if sides[0] is None or sides[1] is None:
            return None
        ends = [point(s, statistic) for s in samples]
        first = sides[0]
        return Interval(min(first.lo, sides[1].lo), max(first.hi, sides[1].hi), first.n,
                        first.unit if first.clustered else unit, gap=abs(ends[1] - ends[0]), method=first.method,
                        clustered=first.clustered)
    if isinstance(samples, Clustered):
        return _clustered(samples, statistic, unit, seed, resamples)
    arrs = _finite(samples)
    n = len(arrs[0])
    if n < 2:
        return None
    if statistic is None and len(arrs) > 1:
        raise ValueError("paired samples need a statistic (e.g. mean_difference)")
    if statistic is None and _binary(arrs[0]):  # k of n units: exact binomial (issue 32: 5/5 is not [1, 1])
        lo, hi = clopper_pearson(int(arrs[0].sum()), n)
        return Interval(lo, hi, n, unit, method="clopper-pearson")
    if len(arrs) > 1 and all(_binary(a) for a in arrs) and all(np.array_equal(a, arrs[0]) for a in arrs):
        # paired 0/1 units that never disagree: the share of units that could disagree (Clopper–Pearson over the
        # n units, none seen) bounds the difference — never zero-width
        v, half = float(statistic(*arrs) if statistic is not None else _mean(arrs[0])), clopper_pearson(0, n)[1]
        return Interval(v - half, v + half, n, unit, method="clopper-pearson (no unit differs)")
    if n < SMALL_N and (statistic is None or (statistic is mean_difference and len(arrs) == 2)):
        x = arrs[0] if statistic is None else arrs[0] - arrs[1]
        lo_t, hi_t = t_interval(x)
        return Interval(float(lo_t), float(hi_t), n, unit, method="t" if statistic is None else "paired t")
    stat: Callable[..., Any] = statistic or _mean
    if all(np.ptp(a) == 0 for a in arrs):  # every unit measured the same: the bootstrap distribution is a point
        v = float(stat(*arrs))
        return Interval(v, v, n, unit, method="point")
    lo_b, hi_b, method = bootstrap_interval(arrs, stat, np.random.default_rng(seed), resamples)
    return Interval(float(lo_b[0]), float(hi_b[0]), n, unit, method=method)
