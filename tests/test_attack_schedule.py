"""Minimum-norm first (probes/schedule.py), attack cost in passes (probes/passes.py) and the convergence check on a
subsample with its own interval (probes/indicators.py), on the tiny CNN of test_image_attacks."""

import pytest
import torch

from featlab.probes.ensemble import AttackBudget, EnsembleResult, robust_masks_ensemble
from featlab.probes.indicators import attack_indicators
from featlab.probes.min_norm import ddn_l2
from featlab.probes.passes import PassCounter
from featlab.probes.schedule import min_norm_first
from test_image_attacks import POS, tiny_models

pytestmark = pytest.mark.usefixtures("one_thread")
RADII = [0.0, 0.3, 0.5, 0.7, 0.9, 1.1]


@pytest.fixture(scope="module")
def models():
    return tiny_models()


def test_passes_count_every_forward_and_backward_point_pass(models):
    """DDN with S steps on n points: a clean forward, S forward/backward steps, a last forward — (S + 2)·n forward
    and S·n backward point-passes; stages keep their own counts."""
    net, score, x, y = models
    counter = PassCounter(event_dims=3)
    with counter.stage("ddn"):
        ddn_l2(counter.wrap(score), x[:10], y[:10], steps=7, event_dims=3, clip=(0.0, 1.0))
    with counter.stage("clean"), torch.no_grad():
        counter.wrap(score)(x[:4])
    assert counter.to_dict() == {"clean": {"forward": 4, "backward": 0}, "ddn": {"forward": 90, "backward": 70}}
    assert counter.total() == 164 and counter.total("ddn") == 160


def test_min_norm_first_is_never_weaker_than_the_full_ensemble_and_far_cheaper(models):
    """Same points, same budgets: the schedule's worst case sits at no radius more than 2 points of 48 above the
    full ensemble run at every radius independently (other random draws), and costs under half its passes and
    under 0.8 of the former schedule's (PGD over every radius first, the rest descending)."""
    net, score, x, y = models
    x, y = x[:48], y[:48]
    b = AttackBudget(steps=8, queries=20, ddn_steps=20, n_targets=1, pgd_steps=8,
                     attacks=("pgd", "apgd-ce", "apgd-t", "ddn", "square"))
    kw = dict(logits=net, positive=POS, budget=b)
    full = robust_masks_ensemble(score, x, y, RADII, generator=torch.Generator().manual_seed(0), **kw)
    mnf = min_norm_first(score, x, y, RADII, generator=torch.Generator().manual_seed(0), **kw)
    gap = (mnf.worst.double().mean(-1) - full.worst.double().mean(-1)).max()
    assert gap <= 2 / len(y), gap
    acc = mnf.worst.double().mean(-1)
    assert (acc[1:] <= acc[:-1]).all() and torch.equal(mnf.worst[0], mnf.clean)  # monotone, clean at 0
    assert list(mnf.masks)[0] == "ddn" and torch.equal(mnf.worst, mnf.masks["square"])
    assert mnf.distance is not None and torch.equal(mnf.masks["ddn"][1], mnf.clean & (mnf.distance > RADII[1]))
    broken = mnf.attribution()
    assert int((broken.clean_correct & (broken.broken_by != "")).sum()) == int((mnf.clean & ~mnf.worst[-1]).sum())
    assert set(mnf.passes.to_dict()) >= {"clean", "ddn", "pgd", "apgd-ce", "apgd-t", "square"}
    today = robust_masks_ensemble(score, x, y, RADII, generator=torch.Generator().manual_seed(0), frontier=True, **kw)
    assert 2 * mnf.passes.total() < full.passes.total(), (mnf.passes.to_dict(), full.passes.to_dict())
    assert mnf.passes.total() < 0.8 * today.passes.total(), (mnf.passes.to_dict(), today.passes.to_dict())
    with pytest.raises(ValueError, match="needs 'ddn'"):
        min_norm_first(score, x, y, RADII, budget=AttackBudget(attacks=("apgd-ce",)))


def _fake(worst: torch.Tensor) -> EnsembleResult:
    R, n = worst.shape
    clean = worst[0].clone()
    return EnsembleResult([0.1 * i for i in range(R)], clean, {"apgd-ce": worst}, worst, {}, None,
                          torch.zeros(n, dtype=torch.bool), acc_large=0.0, large_radius=9.0)


@pytest.mark.parametrize("k, flagged", [(0, False), (3, False), (12, True)])
def test_the_check_on_a_subsample_flags_only_a_drop_its_interval_clears(k, flagged):
    """100 of 400 points checked: a stronger budget breaking k of them at one radius is a drop k/100 with its exact
    95 % interval; the check fails only when that interval lies above the 1-point bar (3/100: [0.006, 0.085])."""
    worst = torch.ones(3, 400, dtype=torch.bool)
    points = torch.arange(0, 400, 4)
    strong_worst = worst[:, points].clone()
    strong_worst[2, :k] = False
    ind = attack_indicators(_fake(worst), strong=_fake(strong_worst), strong_points=points)
    c = ind["checks"]["convergence"]
    assert c["value"] == pytest.approx(k / 100) and c["n"] == 100
    assert c["interval"][0] <= k / 100 <= c["interval"][1]
    assert ("convergence" in ind["flagged"]) is flagged


def test_the_boundary_stage_only_lowers_distances_and_is_counted(models):
    """Margin PGD warm-started from DDN's closest point at the grid radius below each distance: every point it
    breaks had a DDN distance above that radius, its new distance is at most the radius, the masks only lose
    points, and its passes are counted apart."""
    net, score, x, y = models
    x, y = x[:48], y[:48]
    b = AttackBudget(ddn_steps=4, attacks=("ddn",))  # a weak DDN leaves the boundary stage something to find
    kw = dict(budget=b, generator=torch.Generator().manual_seed(0))
    plain = min_norm_first(score, x, y, RADII, **kw)
    warm = min_norm_first(score, x, y, RADII, boundary_steps=5, boundary_step=0.125, **kw)
    assert plain.distance is not None and warm.distance is not None
    assert (warm.distance <= plain.distance).all() and not (warm.worst & ~plain.worst).any()
    lowered = warm.distance < plain.distance
    assert lowered.any()
    r = torch.tensor(RADII, dtype=torch.float64)
    below = torch.stack([r[r < d].max() for d in plain.distance[lowered]])  # the grid radius just below
    assert (warm.distance[lowered] <= below.to(warm.distance.dtype)).all()
    for i, rb in zip(lowered.nonzero().squeeze(1).tolist(), below.tolist()):  # not robust at its boundary radius
        assert not warm.worst[RADII.index(rb), i] and warm.break_radius["boundary"][i] == rb
    assert warm.passes.total("boundary") > 0 and plain.passes.total("boundary") == 0
    acc = warm.worst.double().mean(-1)
    assert (acc[1:] <= acc[:-1]).all()
