"""Verdicts with their sampling uncertainty: the bootstrap interval decides held / failed / inconclusive, a search
that did not converge makes a claim unverified, and records count each verdict apart."""

import numpy as np
import pytest

from featlab.runs.claims import AtLeast, AtMost, Claim, Near, Within
from featlab.runs.record import counts_text, status_counts
from featlab.runs.uncertainty import decide, interval, units_to_settle

GE = Claim("x.ge", "s", "Thm 1", AtLeast(lo=0.5))


def test_an_interval_clear_of_the_bound_decides_and_one_across_it_is_inconclusive():
    rng = np.random.default_rng(0)
    assert GE.judge(0.6, samples=0.6 + 0.01 * rng.standard_normal(20)).status == "held"
    assert GE.judge(0.4, samples=0.4 + 0.01 * rng.standard_normal(20)).status == "failed"
    v = GE.judge(0.52, samples=0.52 + 0.3 * np.tile([-1.0, 1.0], 4))
    assert v.status == "inconclusive" and not v.holds
    assert v.interval[0] < 0.5 < v.interval[1] and v.n == 8 and v.settle > 8
    assert v.to_dict()["interval"] == list(v.interval) and v.to_dict()["settle"] == v.settle


def test_the_interval_is_scipys_percentile_bootstrap_and_reproducible():
    x = np.arange(10.0)
    a, b = interval(x), interval(x)
    assert a == b and a.lo < 4.5 < a.hi and a.n == 10
    assert interval([1.0]) is None  # one unit: no interval
    assert interval([2.0, 2.0, 2.0]).lo == 2.0  # a point distribution


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
    from featlab.runs.uncertainty import Interval

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
    claims = [{"holds": True, "status": "held"}, {"holds": False, "status": "inconclusive", "settle": 9},
              {"holds": False}, {"holds": True, "kind": "check"}]
    assert status_counts(claims) == {"held": 1, "failed": 1, "inconclusive": 1, "unverified": 0}
    assert counts_text(claims) == "1/3 held (1 failed, 1 inconclusive)"


@pytest.mark.parametrize("n", [2, 5])
def test_tensors_are_accepted_as_samples(n):
    import torch

    v = GE.judge(0.7, samples=torch.full((n,), 0.75))
    assert v.status == "held" and v.interval == (0.75, 0.75)


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
