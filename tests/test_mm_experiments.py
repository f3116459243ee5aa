"""Midpoint Mixup experiments: config validation through the CLI, replica = seed, the claims at quick scale."""

import pytest
import torch

from featlab.cli import main
from featlab.devicecheck import RUN, SimulatedDevice, is_host
from featlab.papers.midpoint_mixup.data import LinearMultiView, MultiViewDistribution
from featlab.papers.midpoint_mixup.linear import CLAIMS as LINEAR_CLAIMS
from featlab.papers.midpoint_mixup.multiview import CLAIMS as MULTIVIEW_CLAIMS
from featlab.papers.midpoint_mixup.multiview import MultiViewConfig, _data, fit
from featlab.papers.midpoint_mixup.spurious import BELOW_ERM
from featlab.runs.registry import get_experiment


@pytest.mark.parametrize("exp,override,field", [
    ("mm-multiview", "d=10", "'d'"),             # d < 2k
    ("mm-multiview", "P=2", "'P'"),              # P < 2·C_P + 1 (no noise patch)
    ("mm-multiview", "delta1=1.5", "'delta1'"),  # δ1 > δ2/2
    ("mm-multiview", "rho=0", "'rho'"),
    ("mm-multiview", "alpha=0.5", "'alpha'"),
    ("mm-multiview", "Q=10", "'Q'"),             # Q >= k
    ("mm-multiview", "mixup_a=0", "'mixup_a'"),  # Beta parameter <= 0
    ("mm-multiview", "positions=diagonal", "'positions'"),
    ("mm-linear", "beta_params=[1,-2]", "'beta_params'"),
    ("mm-linear", "starve_C=5", "'starve_C'"),          # not on the grad_C grid
])
def test_bad_input_names_the_field_and_exits_2(exp, override, field, capsys, tmp_path):
    code = main(["run", exp, override, "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and field in err[0], err


def test_replica_i_equals_seed_i_alone():
    kw = dict(k=4, d=400, N=12, P=5, m=2, steps=30, probe_every=10, eta=20.0, n_test_per_class=5, rho=0.2)
    for method in ("erm", "midpoint", "mixup"):
        cfg = MultiViewConfig(**kw, seeds=2, seed=3, pairs="all" if method != "mixup" else "sampled")
        dist, tr, te = _data(cfg, cfg.seed_list())
        net2, _, _ = fit(method, cfg, cfg.seed_list(), torch.float64, dist, tr, te)
        cfg1 = MultiViewConfig(**kw, seeds=1, seed=4, pairs=cfg.pairs)
        dist1, tr1, te1 = _data(cfg1, cfg1.seed_list())
        net1, _, _ = fit(method, cfg1, cfg1.seed_list(), torch.float64, dist1, tr1, te1)
        assert not torch.allclose(net2.W[0], net2.W[1])
        assert torch.allclose(net2.W[1], net1.W[0], rtol=1e-12, atol=1e-15), method


# The quick presets' claims with their expected verdicts: each experiment runs once per module; a claim known to
# fail at quick is a strict xfail with its numbers, so a change of verdict either way is seen.
def _fails(reason):
    return pytest.mark.xfail(strict=True, reason=reason)


KNOWN = {
    "mm.starvation": _fails("at Δ_y = 8 log k (k = 20) ERM's lagging gradient is 1.58× Midpoint's for the worst class "
                            "(class mean 0.54×): the bounds k^{1−0.8} and 1/k² do not separate before C = 30"),
    "mm.offdiag_b18": _fails("Cor B.18 at quick (first seed): Midpoint Mixup's off-diagonal correlations reach the "
                             "diagonals' order, k·max off-diagonal / max diagonal = 5.70 for the worst class (≤ 1 "
                             "stated; uniform Mixup 14.3, ERM 0.004)"),
    "mm.midpoint_below_erm": _fails("8×8 digits, small CNN, 3 runs of 30 epochs: Midpoint 8.63 % > ERM 6.73 % "
                                    "(Uniform Mixup 5.57 % is below); see docs/image-benchmarks.md"),
    "mm.mixup_below_erm": _fails("3 runs: Uniform Mixup − ERM = −0.89 pp, but the paired t interval over 3 seeds "
                                 "straddles 0 (inconclusive; fewer than 5 nets in any case)"),
}
# mm-spurious-digits quick costs ≈ 41 s inside pytest (57 s from the CLI), about the CI budget of such a check.
# mm-multiview runs the quick preset's first seed here (its 2 seeds: ≈ 225 s of CPU with the 'trained on' claims of
# issue 20, ERM and Midpoint trained on to 7500 steps); the whole preset is
# the slow test below. Each experiment's checks are one class: ``--dist loadscope`` keeps a class on one worker,
# so each quick run happens once.
FAST = {"mm-multiview": {"seeds": 1}}
CLAIMS = {"mm-multiview": MULTIVIEW_CLAIMS, "mm-linear": LINEAR_CLAIMS, "mm-spurious-digits": BELOW_ERM}


# Issue 20: verdicts by their 95 % interval over (seed, class) units. The ERM shares are inconclusive at quick: one
# seed is 10 classes, two are 20, and 0.7–0.8 of them is not clear of the 0.7 bar at that size.
_ERM_ONE = ("ERM learns exactly one feature for {} classes: {} ≥ 0.7 is not settled by so few classes "
            "(inconclusive)")
QUICK_KNOWN = {"mm.erm_one": _fails(_ERM_ONE.format("16 of 20", "0.80 [0.60, 0.95]")),
               "mm.erm_one_long": _fails(_ERM_ONE.format("16 of 20 (at 7500 steps)", "0.80 [0.60, 0.95]"))}
FIRST_SEED_KNOWN = {"mm.erm_one": _fails(_ERM_ONE.format("7 of 10", "0.70 [0.40, 1.0]")),
                    "mm.erm_one_long": _fails(_ERM_ONE.format("7 of 10 (at 7500 steps)", "0.70 [0.40, 1.0]")),
                    "mm.separation": _fails("first seed: Midpoint both for 10 of 10 classes, ERM for 3: 0.70 "
                                            "[0.40, 1.0] ≥ 0.5 is not settled by 10 classes (inconclusive; 2 seeds: "
                                            "0.80 [0.60, 0.95], held)"),
                    **{c: _fails("first seed: 10 of 10 classes; the exact (Clopper–Pearson) interval over 10 "
                                 "classes is [0.69, 1], not clear of the 0.9 bar (inconclusive)")
                       for c in ("mm.midpoint_all_both", "mm.mixup_all_both", "mm.midpoint_both_long")}}


def _params(exp, known=None):
    known = {**KNOWN, **(known or {})}
    return [pytest.param(c.id, id=c.id, marks=[known[c.id]] if c.id in known else []) for c in CLAIMS[exp]]


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory):
    from featlab.runs.runner import run

    out, done = tmp_path_factory.mktemp("quick"), {}

    def get(exp, **overrides):
        key = (exp, tuple(sorted(overrides.items())))
        if key not in done:
            done[key] = run(exp, "quick", out=out, quiet=True, **overrides)
            assert done[key].status == "complete"
            assert [c["id"] for c in done[key].claims] == [c.id for c in get_experiment(exp).claims]
        return done[key]

    return get


def _holds(rec, claim):
    """Held — or, on fewer than 5 seeds, inconclusive by the minimum-units rule with its interval alone held."""
    verdict = next(c for c in rec.claims if c["id"] == claim)
    assert verdict["holds"] or verdict.get("by_rule") == "held", verdict


class TestMultiviewQuick:
    @pytest.mark.parametrize("claim", _params("mm-multiview", FIRST_SEED_KNOWN))
    def test_claim_verdict_on_the_first_seed(self, claim, quick_run):
        _holds(quick_run("mm-multiview", **FAST["mm-multiview"]), claim)

    def test_records_every_method(self, quick_run):
        rec = quick_run("mm-multiview", **FAST["mm-multiview"])
        assert {"erm.frac_classes_both", "midpoint.frac_classes_both", "mixup.frac_classes_both", "erm.train_acc",
                "midpoint.train_acc", "mixup.train_acc"} <= set(rec.summary["metrics"])

    @pytest.mark.slow
    @pytest.mark.parametrize("claim", _params("mm-multiview", QUICK_KNOWN))
    def test_claim_verdict_at_quick(self, claim, quick_run):
        _holds(quick_run("mm-multiview"), claim)


class TestLinearQuick:
    @pytest.mark.parametrize("claim", _params("mm-linear"))
    def test_claim_verdict(self, claim, quick_run):
        _holds(quick_run("mm-linear"), claim)


class TestSpuriousDigitsQuick:
    @pytest.mark.parametrize("claim", _params("mm-spurious-digits"))
    def test_claim_verdict(self, claim, quick_run):
        _holds(quick_run("mm-spurious-digits"), claim)


def test_reduced_simulation_runs_at_theory_scale_d():
    # d = 10^12 (the theory's k^20 at k = 4): the cost does not depend on d, only the init scale 1/√d does
    cfg = MultiViewConfig(k=4, d=10**12, N=12, P=5, m=2, steps=5, probe_every=5, n_test_per_class=5, seeds=2)
    dist, tr, te = _data(cfg, cfg.seed_list())
    net, res, _ = fit("midpoint", cfg, cfg.seed_list(), torch.float64, dist, tr, te)
    assert res.status == "complete"
    assert net.W.shape == (2, 8, 8)  # (E, k·m, 2k): no d axis
    assert 0.5e-6 < float(net.W.detach().std()) < 2e-6
    assert torch.isfinite(torch.tensor(res.frame().value.to_numpy())).all()


# ------------------------------------------------------------------------------------------ placement
def test_fixed_labels_from_the_run_device_are_drawn_beside_the_host_draws():
    """sample(labels=...) once cloned the caller's labels where they were: on a GPU they then indexed the host's
    draws (the check's (a)). Taken to the host first, the points equal those of host labels."""
    labels = torch.arange(3).repeat_interleave(2)
    host = (LinearMultiView(3).sample(6, [0], labels=labels), MultiViewDistribution(3, 4).sample(6, [0], labels=labels))
    with SimulatedDevice() as dev:
        run = (LinearMultiView(3).sample(6, [0], labels=labels.to(RUN), device=RUN),
               MultiViewDistribution(3, 4).sample(6, [0], labels=labels.to(RUN), device=RUN))
    assert dev.problems == [] and all(not is_host(b.x) for b in run)
    assert all(torch.equal(a.x, b.x) and torch.equal(a.y, b.y) for a, b in zip(host, run))
