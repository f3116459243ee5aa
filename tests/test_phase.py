"""The phase-diagram experiments (fa-phase, mm-phase, rfa-phase) at tiny overrides: they run end to end, write
their figure and judge every declared claim. Their quick verdicts are in the paper docs (quick runs take
40 s – 3 min, too long for the suite); their controls run in tests/test_controls.py."""

import math

import numpy as np
import pytest

import featlab
from featlab.papers.feature_averaging.phase import loglog_fit

pytestmark = pytest.mark.usefixtures("one_thread")

TINY = {
    "fa-phase": dict(seeds=1, ks=[2, 4], ds=[64, 128], n=100, n_test=40, T=20, n_radii=4, pgd_steps=2,
                     attacks=["pgd", "avgdir", "midpoint"]),
    "mm-phase": dict(ks=[3], ds=[1e3, 1e4], n_per_class=4, steps=3, n_test_per_class=5, region_d_lo=1e3,
                     region_d_hi=1e4),
    "rfa-phase": dict(seeds=1, ds=[4, 40], n=20, m=20, steps_long=30, n_test=100, etas=[0.0, 0.2]),
}


@pytest.mark.parametrize("exp_id", list(TINY))
def test_phase_experiment_runs_and_judges_every_claim(exp_id, out):
    rec = featlab.run(exp_id, "quick", out=out, quiet=True, **TINY[exp_id])
    assert rec.ok
    declared = [c.id for c in featlab.get_experiment(exp_id).claims]
    assert [c["id"] for c in rec.claims] == declared
    assert len(rec.summary["figures"]) == 1 and (rec.dir / rec.summary["figures"][0]).exists()


def test_loglog_fit_recovers_a_power_law_and_refuses_nan():
    x = np.array([64.0, 128, 256, 512, 1024])
    slope, icpt, lo, hi = loglog_fit(x, 3 * x ** 0.5 * np.exp([0.01, -0.02, 0.0, 0.015, -0.01]))
    assert abs(slope - 0.5) < 0.02 and lo < slope < hi and abs(math.exp(icpt) - 3) < 0.2
    assert math.isnan(loglog_fit(x, np.array([1, 2, float("nan"), 4, 5]))[0])
    assert math.isnan(loglog_fit(x[:2], x[:2])[0])  # two points: no interval
