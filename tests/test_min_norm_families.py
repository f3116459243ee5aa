"""The minimum-norm stage's other families (FMN, ALMA: probes/min_norm.py) and the convergence check that changes the
family (probes/family_check.py), on the tiny CNN of test_image_attacks; cross-checked against adv-lib's FMN
(installed ``--no-deps`` by the README's test command; the tests that need it are skipped without it)."""

import importlib
import importlib.util
import sys
import types

import pytest
import torch

from featlab.probes.apgd import group_logits
from featlab.probes.ensemble import AttackBudget
from featlab.probes.family_check import family_check, other_family
from featlab.probes.min_norm import alma_l2, ddn_l2, fmn_l2
from featlab.probes.robustness import correct
from featlab.probes.schedule import min_norm_first
from test_image_attacks import POS, tiny_models

pytestmark = [pytest.mark.usefixtures("one_thread"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]
# a fine grid around the tiny net's boundary distances (0.4–0.8): a weak search shows as a point broken one step late
RADII = [0.0] + [round(0.3 + 0.025 * i, 3) for i in range(25)]
KW = dict(event_dims=3, clip=(0.0, 1.0))
# the planted weak schedule: the tiny budget of the quick preset's ensemble (DDN, APGD-CE, APGD-T, Square) without
# the new stage; the full schedule adds FMN and ALMA (2 starts each)
WEAK = AttackBudget(steps=2, queries=2, ddn_steps=2, n_targets=1, attacks=("ddn", "apgd-ce", "apgd-t", "square"))
FULL = AttackBudget(steps=2, queries=2, ddn_steps=2, n_targets=1, fmn_steps=50, alma_steps=50, min_norm_starts=2,
                    attacks=("ddn", "fmn", "alma", "apgd-ce", "apgd-t", "square"))


@pytest.fixture(scope="module")
def models():
    net, score, x, y = tiny_models()
    return net, score, x[:32], y[:32]


def advlib_fmn():
    """adv-lib's FMN without importing adv_lib.attacks' package (whose other attacks need torchvision)."""
    spec = importlib.util.find_spec("adv_lib")
    if spec is None:
        pytest.skip("needs adv-lib (pip install --no-deps adv-lib==0.2.8, as the README's test command does)")
    saved = sys.modules.get("adv_lib.attacks")
    pkg = types.ModuleType("adv_lib.attacks")
    pkg.__path__ = [spec.submodule_search_locations[0] + "/attacks"]
    sys.modules["adv_lib.attacks"] = pkg
    try:
        return importlib.import_module("adv_lib.attacks.fast_minimum_norm").fmn
    except ImportError as e:  # e.g. its distutils import on a Python without distutils or setuptools
        pytest.skip(f"adv-lib's FMN could not be imported here: {e}")
    finally:
        if saved is not None:
            sys.modules["adv_lib.attacks"] = saved


def _break_radius(worst: torch.Tensor) -> torch.Tensor:
    r = torch.tensor(RADII, dtype=torch.float64)[:, None]
    return torch.where(~worst, r, torch.inf).amin(0)


def test_fmn_and_alma_return_verified_minimal_points(models):
    """Every point each returns is misclassified, in the box, at exactly the distance it reports; FMN reaches DDN's
    100-step distances (within 1 %) in 50 steps, ALMA (made for 1000) in 100 within 5 %, 1 % for the median."""
    net, score, x, y = models
    _, d_ddn = ddn_l2(score, x, y, steps=100, max_norm=2.0, alpha=2.0, init_norm=1.0, **KW)
    for fn, kw, tol in ((fmn_l2, dict(alpha=1.0, steps=50), 1.01), (alma_l2, dict(init_dist=0.4, steps=100), 1.05)):
        xa, d = fn(score, x, y, **kw, **KW)
        found = torch.isfinite(d)
        assert found.all(), fn.__name__
        assert not correct(score(xa[found]), y[found]).any() and xa.min() >= 0 and xa.max() <= 1
        assert torch.allclose((xa - x).flatten(1).norm(dim=1), d, atol=1e-5)
        assert (d <= d_ddn * tol).all() and (d / d_ddn).median() <= 1.01, (fn.__name__, (d / d_ddn).max())


def test_fmn_matches_the_reference_implementation(models):
    """featlab's FMN-ℓ2 and adv-lib's (the paper authors' algorithm, on the two-logit wrapper): the same distances
    (their schedules are the same; adv-lib steps without the box-cap of ε, hence a tolerance)."""
    fmn = advlib_fmn()
    net, score, x, y = models
    xa = fmn(lambda z: group_logits(net(z), POS), x, (y > 0).long(), norm=2, steps=100)
    ok = ~correct(score(xa), y)
    d_ref = (xa - x).flatten(1).norm(dim=1)
    _, d = fmn_l2(score, x, y, steps=100, alpha=1.0, **KW)
    assert ok.all() and torch.allclose(d, d_ref, rtol=2e-3), (d / d_ref).aminmax()


def test_the_family_check_flags_a_planted_weak_schedule_and_passes_the_full_one(models):
    """The weak schedule passes its own kind of check but not another family's: ALMA breaks points below its break
    radii at transition radii. With FMN and ALMA in the schedule the check moves nothing."""
    net, score, x, y = models
    kw = dict(logits=net, positive=POS, **KW)
    weak = min_norm_first(score, x, y, RADII, budget=WEAK, generator=torch.Generator().manual_seed(0), **kw)
    pts = torch.arange(len(y))
    c = family_check(score, x, y, weak, pts, budget=WEAK, generator=torch.Generator().manual_seed(1), **kw)
    assert c["family"] == "alma" and not c["ok"] and c["moved_at_transition"] >= 1, c
    assert c["moved"] >= c["moved_at_transition"] and c["value"] > 0 and c["radius_shift"] >= 0.025
    full = min_norm_first(score, x, y, RADII, budget=FULL, generator=torch.Generator().manual_seed(0), **kw)
    c = family_check(score, x, y, full, pts, budget=FULL, generator=torch.Generator().manual_seed(1), **kw)
    assert c["family"] == "apgd-dlr" and c["ok"] and c["moved"] == 0, c
    assert (_break_radius(full.worst) <= _break_radius(weak.worst)).all()
    assert set(full.passes.to_dict()) >= {"ddn", "fmn", "alma"} and full.passes.total("alma") > 0
    assert other_family(("ddn", "fmn")) == "alma" and other_family(("ddn", "fmn", "alma"), False) == "alma"


def test_the_full_schedule_leaves_no_point_an_independent_attack_breaks_lower(models):
    """adv-lib's FMN (1000 steps) on the same net and points: no point it breaks, re-judged with featlab's
    acceptance rule, at a grid radius below the full schedule's break radius (the weak schedule leaves some)."""
    fmn = advlib_fmn()
    net, score, x, y = models
    xa = fmn(lambda z: group_logits(net(z), POS), x, (y > 0).long(), norm=2, steps=1000)
    d = torch.where(~correct(score(xa), y), (xa - x).flatten(1).norm(dim=1), torch.inf).double()
    grid = torch.tensor(RADII, dtype=torch.float64)
    theirs = torch.tensor([float(grid[grid * (1 + 1e-5) + 1e-12 >= v].min()) if v <= grid[-1] else torch.inf
                           for v in d.tolist()], dtype=torch.float64)
    kw = dict(logits=net, positive=POS, **KW)
    lower = {}
    for name, b in (("weak", WEAK), ("full", FULL)):
        res = min_norm_first(score, x, y, RADII, budget=b, generator=torch.Generator().manual_seed(0), **kw)
        lower[name] = int((theirs < _break_radius(res.worst)).sum())
    assert lower["full"] == 0 and lower["weak"] > 0, lower


def test_the_new_stage_and_the_check_follow_the_input_device(models):
    """FMN and ALMA from random starts, the boundary stage and the family check create every tensor where the
    points live (the simulated device reports any made on the host beside them)."""
    from featlab.devicecheck import RUN, SimulatedDevice

    net, score, x, y = models
    b = AttackBudget(steps=2, queries=2, ddn_steps=2, n_targets=1, fmn_steps=3, alma_steps=3, min_norm_starts=2,
                     attacks=("ddn", "fmn", "alma", "apgd-ce", "apgd-t", "square"))
    with SimulatedDevice() as dev:
        net.to(RUN)
        xs, ys, pos = x[:8].to(RUN), y[:8].to(RUN), POS.to(RUN)
        kw = dict(logits=net, positive=pos, **KW)
        res = min_norm_first(score, xs, ys, [0.0, 0.5, 1.0], budget=b, generator=torch.Generator().manual_seed(0),
                             boundary_steps=2, **kw)
        family_check(score, xs, ys, res, torch.arange(8, device=RUN), budget=b,
                     generator=torch.Generator().manual_seed(1), **kw)
    assert dev.problems == []
