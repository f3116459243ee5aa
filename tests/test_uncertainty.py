"""Verdicts with their sampling uncertainty: the 95 % interval decides held / failed / inconclusive, fewer than 5
seeds make a claim inconclusive by rule, a search that did not converge makes it unverified, and records count each
verdict apart. The methods' coverage: tests/test_interval_coverage.py."""

import numpy as np
import pytest

from featlab.runs.claims import AtLeast, AtMost, Claim, Near, Within
from featlab.runs.record import counts_text, status_counts
from featlab.runs.uncertainty import (
    MIN_UNITS,
    Bracket,
    Clustered,
    Interval,
    decide,
    interval,
    mean_difference,
    too_few_units,
    units_to_settle,
)

GE = Claim("x.ge", "s", "Thm 1", AtLeast(lo=0.5))


def test_an_interval_clear_of_the_bound_decides_and_one_across_it_is_inconclusive():
    rng = np.random.default_rng(0)
    assert GE.judge(0.6, samples=0.6 + 0.01 * rng.standard_normal(20)).status == "held"
    assert GE.judge(0.4, samples=0.4 + 0.01 * rng.standard_normal(20)).status == "failed"
    v = GE.judge(0.52, samples=0.52 + 0.3 * np.tile([-1.0, 1.0], 4))
    assert v.status == "inconclusive" and not v.holds
    assert v.interval[0] < 0.5 < v.interval[1] and v.n == 8 and v.settle > 8
    assert v.to_dict()["interval"] == list(v.interval) and v.to_dict()["settle"] == v.settle


def test_the_interval_is_reproducible_and_its_method_follows_the_samples():
    x = np.arange(10.0)
    a, b = interval(x), interval(x)
    assert a == b and a.lo < 4.5 < a.hi and a.n == 10 and a.method == "t"
    assert interval(np.arange(40.0)).method == "BCa"  # 30 units or more: the bootstrap
    assert interval(x, lambda v: float(np.median(v))).method == "BCa"
    assert interval([1.0]) is None  # one unit: no interval
    assert interval([2.0, 2.0, 2.0]).lo == 2.0  # every unit the same, not 0/1: t's spread is 0


def test_all_successes_get_the_exact_binomial_bound_not_a_point():
    """issue 32: 5/5 seeds was 'held [1, 1]' against 0.5; 20/20 classes against 0.9."""
    five, twenty = interval(np.ones(5)), interval(np.ones(20), unit="classes")
    assert five.method == "clopper-pearson" and round(five.lo, 3) == 0.478 and five.hi == 1
    assert round(twenty.lo, 3) == 0.832
    assert interval(np.zeros(5)).hi == pytest.approx(1 - 0.025 ** (1 / 5))
    assert GE.judge(1.0, samples=np.ones(5)).status == "inconclusive"  # [0.478, 1] reaches below 0.5
    assert GE.judge(1.0, samples=np.ones(6)).status == "held"  # 0.025^(1/6) = 0.541


@pytest.mark.parametrize("n", [2, 3, 5, 12, 40])
def test_constant_0_1_units_never_give_a_zero_width_interval(n):
    for v in (0.0, 1.0):
        iv = interval(np.full(n, v))
        assert iv.hi - iv.lo > 0.05


def test_a_3_seed_mean_gets_the_t_interval():
    from scipy import stats

    x = np.array([0.61, 0.70, 0.66])
    iv = interval(x)
    lo, hi = stats.t.interval(0.95, 2, loc=x.mean(), scale=stats.sem(x))
    assert (iv.lo, iv.hi) == pytest.approx((lo, hi)) and iv.method == "t"
    assert iv.hi - iv.lo > 2 * np.ptp(x)  # the percentile bootstrap gave at most the data's own range
    d = interval((x, x - 0.1 + np.array([0.01, -0.02, 0.0])), mean_difference)
    assert d.method == "paired t" and d.lo < 0.1 < d.hi


def _clustered_data(G=5, m=200, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.arange(G), m)
    return rng.normal(0, 1, G)[ids] + 0.2 * rng.standard_normal(G * m), ids


def test_points_pooled_over_seeds_are_resampled_by_seed():
    v, ids = _clustered_data()
    pooled, clustered = interval(v, unit="test points"), interval(Clustered(v, ids), unit="test points")
    assert clustered.n == 5 and pooled.n == 1000 and clustered.unit == "seeds (× test points)"
    assert clustered.method == "cluster" and clustered.clustered
    assert clustered.hi - clustered.lo > 5 * (pooled.hi - pooled.lo)  # the seeds' spread, not the points'
    means = [v[ids == g].mean() for g in range(5)]
    t_iv = interval(np.array(means))
    t_width = t_iv.hi - t_iv.lo
    assert 0.8 < (clustered.hi - clustered.lo) / t_width < 1.5  # about the t interval over the 5 seed means
    assert interval(Clustered(v, ids)) == interval(Clustered(v, ids))  # seeded


def test_clustered_composes_with_paired_points_and_brackets():
    v, ids = _clustered_data(G=4, m=50)
    w = v + 0.3 + 0.05 * np.random.default_rng(1).standard_normal(len(v))
    paired = interval(Clustered((w, v), ids), mean_difference, unit="test points")
    assert paired.n == 4 and paired.lo < 0.3 < paired.hi and paired.hi - paired.lo < 0.2  # the pairs share the seed
    br = interval(Bracket(Clustered(v, ids), Clustered(w, ids)))
    assert br.clustered and br.n == 4 and br.gap == pytest.approx(0.3, abs=0.01) and br.unit == "seeds (× points)"
    same = interval(Clustered((v + 0.3, v), ids), mean_difference)  # every pair differs by 0.3, up to rounding
    assert same.method == "point" and same.lo == same.hi == pytest.approx(0.3)
    uneven = np.r_[np.zeros(10), np.ones(30), np.full(25, 2)]
    assert interval(Clustered(np.arange(65.0), uneven)).n == 3
    ok = interval(Clustered(np.ones(200), np.repeat(np.arange(5), 40)))  # every point of 5 seeds: 5/5 seeds
    assert round(ok.lo, 3) == 0.478 and ok.hi == 1 and ok.n == 5
    one = interval(Clustered(v[:50], ids[:50]))  # one seed: the points' interval, counted as 1 seed
    assert one.n == 1 and too_few_units(one)
    with pytest.raises(ValueError, match="statistic"):
        interval(Clustered((w, v), ids))


def test_fewer_than_5_seeds_is_inconclusive_by_rule():
    clear = 0.9 + 0.01 * np.array([-1.0, 1.0, 0.5, -0.5])  # far above 0.5, but 4 seeds
    v = GE.judge(0.9, samples=clear)
    assert v.status == "inconclusive" and v.interval[0] > 0.5 and v.settle >= MIN_UNITS == 5
    assert GE.judge(0.1, samples=clear - 0.8).status == "inconclusive"  # a clear failure too
    assert GE.judge(0.9, samples=np.r_[clear, 0.9]).status == "held"  # 5 seeds
    assert GE.judge(0.9, samples=clear, min_units=0).status == "held"  # switched off
    assert GE.judge(0.9, samples=clear, unit="test points").status == "held"  # not replicas: not counted
    assert GE.judge(0.9, samples=clear, unit="seeds, certified to attacked").status == "inconclusive"
    v, ids = _clustered_data(G=3, m=100)
    c = GE.judge(9.0, samples=Clustered(v + 9, ids), unit="test points")  # 300 points, 3 seeds
    assert c.status == "inconclusive" and c.n == 3 and c.settle == 5
    assert units_to_settle((0.5, None), 0.9, Interval(0.9, 0.9, 3, "nets")) == 5  # zero width, still 3 nets


def test_paired_samples_give_the_interval_of_the_paired_difference():
    rng = np.random.default_rng(1)
    base = rng.normal(10, 5, 30)  # large spread between units, small consistent gap inside each pair
    gap = interval((base, base - 0.5 + 0.05 * rng.standard_normal(30)), lambda a, b: float(np.mean(b - a)))
    assert gap.hi < 0  # unpaired, the spread of `base` would swamp the 0.5 gap
    unpaired = interval(base - 0.5).lo, interval(base).hi
    assert unpaired[0] < unpaired[1]


def test_not_converged_is_unverified_whatever_the_value():
    v = GE.judge(0.9, samples=[0.9, 0.91, 0.92], converged=False)
    assert v.status == "unverified" and not v.holds


def test_every_threshold_kind_decides_on_the_whole_interval():
    iv = Interval(0.4, 0.6, 10, "seeds")
    assert decide(AtMost(hi=0.7).bounds(None), False, 0.5, iv) == "held"
    assert decide(AtMost(hi=0.5).bounds(None), False, 0.5, iv) == "inconclusive"
    assert decide(AtMost(hi=0.3).bounds(None), False, 0.5, iv) == "failed"
    assert decide(Within(lo=0.3, hi=0.7).bounds(None), False, 0.5, iv) == "held"
    assert decide(Near(centre=1.0, tol=0.2).bounds(None), False, 0.5, iv) == "failed"
    assert decide(AtLeast(lo=0.6, strict=True).bounds(None), True, 0.5, Interval(0.6, 0.6, 3, "")) == "failed"
    assert units_to_settle((0.5, None), 0.55, Interval(0.45, 0.65, 10, "seeds")) == 40
    assert units_to_settle((0.5, None), 0.5, Interval(0.45, 0.55, 10, "seeds")) is None


def test_without_samples_the_value_alone_decides():
    assert GE.judge(0.5).status == "held" and GE.judge(0.49).status == "failed"
    assert GE.judge(float("nan")).status == "failed"


def test_records_count_each_verdict_apart_and_old_records_still_read():
    mech = {"role": "mechanism"}  # what the rival runs showed (runs/discrimination.py)
    claims = [{"holds": True, "status": "held", **mech},
              {"holds": False, "status": "inconclusive", "settle": 9, **mech},
              {"holds": False, **mech}, {"holds": True, "kind": "check"}]
    assert status_counts(claims) == {"held": 1, "failed": 1, "inconclusive": 1, "unverified": 0}
    assert counts_text(claims) == "1 of 3 mechanism claims held (1 failed, 1 inconclusive); not counted: 1 check"


@pytest.mark.parametrize("n", [2, 5])
def test_tensors_are_accepted_as_samples(n):
    import torch

    v = GE.judge(0.7, samples=torch.full((n,), 0.75))
    assert v.interval == (0.75, 0.75)  # not 0/1: t's spread is 0
    assert v.status == ("held" if n >= MIN_UNITS else "inconclusive")  # 2 seeds: inconclusive by rule


def test_a_statistic_with_an_axis_parameter_is_applied_to_every_resample_at_once():
    calls = []

    def gap(a, b, axis=-1):
        calls.append(np.shape(a))
        return np.mean(b - a, axis=axis)

    x = np.arange(12.0)
    iv = interval((x, x + 1 + 0.1 * np.sin(x)), gap)
    assert len(calls) < 10 and iv.lo < 1 < iv.hi + 0.2  # a few calls on stacked resamples, not one per resample
    slow = interval((x, x + 1 + 0.1 * np.sin(x)), lambda a, b: float(np.mean(b - a)))
    assert abs(slow.lo - iv.lo) < 0.05 and abs(slow.hi - iv.hi) < 0.05


def test_paired_points_that_never_disagree_get_no_zero_width_interval():
    """rfa-fig2's paired "net vs the optimal classifier" on 3 seeds × 6000 points, the net agreeing everywhere: the
    difference is 0 on every point; its interval is Clopper–Pearson over the seeds (none disagreed), not [0, 0]."""
    import numpy as np

    from featlab.runs.intervals import Clustered, clopper_pearson, interval, mean_difference

    a = (np.arange(600) % 7 == 0).astype(float)
    iv = interval(Clustered((a, a.copy()), np.repeat([0, 1, 2], 200), "seeds"), mean_difference, unit="test points")
    half = clopper_pearson(0, 3)[1]
    assert iv.n == 3 and iv.lo == -half and iv.hi == half and half > 0.7
