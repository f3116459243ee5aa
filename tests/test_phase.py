"""The phase-diagram experiments (fa-phase, mm-phase, rfa-phase) at their registered ``tiny`` settings: they run end
to end, write their figure and judge every declared claim. Their quick verdicts are in the paper docs (quick runs
take 40 s – 3 min, too long for the suite); their controls run in tests/test_controls.py."""

import math

import numpy as np
import pytest

import featlab
from featlab.papers.feature_averaging.phase import loglog_fit

pytestmark = pytest.mark.usefixtures("one_thread")

PHASES = ["fa-phase", "mm-phase", "rfa-phase"]


@pytest.mark.parametrize("exp_id", PHASES)
def test_phase_experiment_runs_and_judges_every_claim(exp_id, out):
    rec = featlab.run(exp_id, "quick", out=out, quiet=True, **featlab.get_experiment(exp_id).tiny)
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
