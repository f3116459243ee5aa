"""Coverage of every interval path a counted claim can take (issue 44), at the smallest unit counts featlab uses —
5 seeds, and 5 seeds × 100 points with a seed effect — vectorised so the whole file takes a few seconds: the
per-seed pass rate (Clopper–Pearson, exact), Clopper–Pearson over clusters, a share of 0/1 points pooled over seeds
(Wilson at the cluster-robust effective n), the paired BCa bootstrap, and Student's t over seed means. Each must
cover 95 % within ±2.5 % plus 2.58 Monte-Carlo standard errors; a planted too-narrow method (the pooled points'
binomial interval, blind to the seeds) must fail the same check."""

import numpy as np
import pytest
from scipy.stats import binom, norm

from featlab.runs.claims import AtLeast, pass_count
from featlab.runs.intervals import (
    bootstrap_interval,
    clopper_pearson,
    clustered_share,
    mean_difference,
    t_interval,
)

NOMINAL, TOL, SEEDS, POINTS = 0.95, 0.025, 5, 100


def _within(c: float, reps: int) -> bool:
    return abs(c - NOMINAL) <= TOL + 2.58 * np.sqrt(max(c * (1 - c), 0.01) / reps)


def _covers(lo, hi, truth) -> float:
    return float(np.mean((np.asarray(lo) <= truth) & (truth <= np.asarray(hi))))


def _seeded_points(rng, reps: int, p: float, concentration: float = 20.0) -> tuple[np.ndarray, np.ndarray]:
    """k successes of POINTS per seed, each seed's own rate drawn around p (a seed effect)."""
    rates = rng.beta(p * concentration, (1 - p) * concentration, (reps, SEEDS))
    return rng.binomial(POINTS, rates).astype(float), np.full((reps, SEEDS), float(POINTS))


@pytest.mark.parametrize("q", [0.3, 0.6, 0.9])
def test_the_per_seed_pass_rate_and_clopper_pearson_over_clusters_cover_95_percent(q):
    """Exact: the binomial probability of every pass count whose interval holds the per-seed pass rate q (the same
    Clopper–Pearson interval over the seeds serves a Clustered sample whose every point is 0 or 1)."""
    for n in (SEEDS, 6, 10):
        hit = 0.0
        for k in range(n + 1):
            iv, _, _ = pass_count(AtLeast(lo=1), [2.0] * k + [0.0] * (n - k))
            assert (iv.lo, iv.hi) == pytest.approx(clopper_pearson(k, n))
            hit += binom.pmf(k, n, q) * (iv.lo <= q <= iv.hi)
        assert hit >= NOMINAL - 1e-9, (n, q, hit)


@pytest.mark.parametrize("p", [0.5, 0.85])
def test_a_share_of_points_pooled_over_seeds_covers_95_percent_and_stays_in_0_1(p):
    rng = np.random.default_rng(44)
    reps = 20_000
    k, n = _seeded_points(rng, reps, p)
    lo, hi = clustered_share(k, n)
    assert np.all((lo >= 0) & (hi <= 1) & (hi > lo))  # by construction: never clipped, never zero-width
    assert _within(_covers(lo, hi, p), reps)


def test_a_planted_too_narrow_interval_fails_the_same_check():
    rng = np.random.default_rng(45)
    reps = 20_000
    k, n = _seeded_points(rng, reps, 0.85)
    pooled = k.sum(-1) / n.sum(-1)  # the pooled points' binomial interval: the seeds' spread assumed away
    half = norm.ppf(0.975) * np.sqrt(pooled * (1 - pooled) / n.sum(-1))
    c = _covers(pooled - half, pooled + half, 0.85)
    assert c < 0.85 and not _within(c, reps)


def test_t_over_seed_means_covers_95_percent():
    rng = np.random.default_rng(46)
    reps = 20_000
    means = rng.normal(0.0, 1.0, (reps, SEEDS)) + rng.normal(0, 1, (reps, SEEDS, POINTS)).mean(-1)
    assert _within(_covers(*t_interval(means), 0.0), reps)


def test_the_paired_bca_covers_95_percent_at_5_seeds():
    rng = np.random.default_rng(47)
    reps = 800
    base = rng.normal(0, 3, (reps, SEEDS))
    a, b = base + rng.normal(0, 1, (reps, SEEDS)), base + 0.5 + rng.gamma(2.0, size=(reps, SEEDS))
    lo, hi, _ = bootstrap_interval((a, b), mean_difference, rng, resamples=600)
    assert _within(_covers(lo, hi, -2.5), reps)


def test_more_identical_units_never_widen_an_interval():
    for k, n in ((3, 3), (4, 5), (5, 5)):
        for m in (2, 4):  # the same seeds m times over
            a, b = clopper_pearson(k, n), clopper_pearson(m * k, m * n)
            assert b[1] - b[0] <= a[1] - a[0]
    k, n = np.array([[80.0, 90, 85, 70, 95]]), np.full((1, 5), 100.0)
    w = [np.diff(np.r_[clustered_share(np.tile(k, m), np.tile(n, m))])[0] for m in (1, 2, 3)]
    assert w[0] >= w[1] >= w[2] > 0


@pytest.mark.parametrize("n", [3, 5, 10, 29])
def test_paired_0_1_units_that_never_disagree_are_never_zero_width(n):
    from featlab.runs.intervals import interval

    a = np.r_[np.ones(n - n // 2), np.zeros(n // 2)]
    iv = interval((a, a.copy()), mean_difference)
    assert iv.lo < 0 < iv.hi and iv.hi == pytest.approx(clopper_pearson(0, n)[1]) and -1 <= iv.lo
