"""The claims of the Feature Averaging experiments at quick scale (the same check the CLI prints)."""

import numpy as np
import pytest

import featlab


def claims(res):
    return {c["id"]: c for c in res.claims}


def every_seed_passed(c: dict) -> bool:
    """A claim about every seed (a per-seed pass count) where every seed of a small run passed: inconclusive by its
    Clopper–Pearson interval (5 of 5: [0.478, 1]), the best a run of so few seeds can say."""
    unit = c.get("unit", "")
    if "share passing: " not in unit:
        return False
    k, _, n = unit.partition("share passing: ")[2].rstrip(")").partition(" of ")
    return k == n and c["status"] == "inconclusive"


def assert_all_hold(res, but=()):
    """Every claim held — or, on fewer than 5 seeds, inconclusive by the minimum-units rule with its interval on the
    holding side (featlab.runs.uncertainty: 5 nets decide a claim; the interval is still judged)."""
    assert res.ok, res.summary.get("message")
    from featlab.runs.uncertainty import MIN_UNITS

    bad = [f"{c['id']}: {c['status']}, measured {c['measured']} vs {c['threshold']}" for c in res.claims
           if c["id"] not in but and c.get("kind") != "measurement"
           and not (c["status"] == "held" or (c.get("by_rule") == "held" and c.get("settle", 0) >= MIN_UNITS)
                    or every_seed_passed(c))]
    assert not bad, bad


def test_fa_synthetic_quick_claims_hold(out):
    res = featlab.run("fa-synthetic", "quick", out=out, seeds=2)
    # Lemma 5.3 gives no finite-k number: a measurement (the spread grows with log t on the longer run, 1.83 at
    # ηt = 10, quick, 4 seeds), reported with no verdict
    assert claims(res)["fa.lemma53_balanced"]["kind"] == "measurement"
    # the k-class critical radius is an interval [certified, attacked] ≈ [36.6, 38.4]: held on both sides
    assert claims(res)["fa.kclass_holds"]["interval"][0] > 0.7 * (3072 / 2) ** 0.5
    assert_all_hold(res, but=("fa.lemma53_balanced",))
    m = res.summary["metrics"]
    for key in ["binary.cos_in_class_mean", "binary.cos_off_class_max_abs", "multiclass.cos_diag_mean",
                "binary.clean_acc", "multiclass.clean_acc"]:
        assert key in m
    for r in range(0, 59, 2):  # Fig 3's axis at the paper's d: the worst case and every attack
        for net in ("binary", "multiclass"):
            assert all(f"{net}.robust_acc{a}@{r:g}" in m for a in ["", "_pgd", "_pgd_softplus", "_avgdir", "_midpoint"])
    # worst case over the ensemble: the k-class net holds well past the binary net's collapse (the paper's Fig 3)
    assert m["multiclass.robust_acc@26"] > 0.9 > 0.1 > m["binary.robust_acc@26"]
    # the bar: at 1.2·√(d/k) = 21 the binary net is broken (the grid has 20 and 22)
    assert m["binary.robust_acc@22"] <= m["binary.robust_acc@20"] <= 0.05
    assert m["binary.convergence_change"] < 0.01 and m["multiclass.convergence_change"] < 0.01
    # the binary curve is exact (certified = attacked at every radius); the ensemble alone sat above it
    assert m["binary.exact_share"] == 1.0 and m["binary.interval_width_max"] == 0.0
    assert all(m[f"binary.robust_acc_certified@{r}"] == m[f"binary.robust_acc@{r}"] for r in range(0, 59, 2))
    assert all(m[f"binary.robust_acc@{r}"] <= m[f"binary.robust_acc_ensemble@{r}"] for r in range(0, 59, 2))
    assert m["binary.ensemble_points_above"] >= 0 and m["multiclass.interval_width_max"] > 0
    assert all(m[f"multiclass.robust_acc_certified@{r}"] <= m[f"multiclass.robust_acc@{r}"] for r in range(0, 59, 2))
    assert len(res.figures) == 2
    assert m["binary.thm46_estimate"] <= m["binary.thm46_bound"] + 1e-9  # the ascent's lower estimate ≤ the sound U
    # uncertainty: clean accuracy per test point, the per-net statistics per seed, the trajectories exact
    units = {c["id"]: c.get("unit") for c in res.claims}
    assert units["fa.binary_clean"] == units["fa.kclass_clean"] == "test points"
    assert units["fa.thm46"] == "seeds" and units["fa.binary_breaks"] == "seeds, certified to attacked"
    assert "interval" not in claims(res)["fa.lemma53_balanced"] and "fa.lambda_log" in units


@pytest.mark.parametrize("exp, preset, extra", [
    ("fa-ablation-init", "quick", {}),
    ("fa-ablation-lr", "extended", {}),
    ("fa-ablation-snr", "quick", {"seeds": 1}),
    pytest.param("fa-ablation-cosine", "quick", {"seeds": 1}, marks=pytest.mark.xfail(strict=True, reason=(
        "Fig 9 at cos(μ_i, μ_j) = 0.09: in-class fidelity 0.86 passes, but the off-class coefficients are −0.35× the "
        "in-class ones (bar 0.25): the net drops the shared component that Σ_{J_s}μ_j keeps (off-class |cos| ≤ "
        "0.01, residual 0.36); margin 0.71 < 1 (quick, 2 seeds). See docs/feature-averaging.md"))),
    ("fa-ablation-n", "quick", {"values": [1000, 10000]}),
])
def test_ablation_claims_hold(shared_out, exp, preset, extra):
    # shared_out: fa-ablation-init's quick run is the one its rivals are compared with (test_mechanism_controls.py)
    assert_all_hold(featlab.run(exp, preset, out=shared_out, **extra))


def test_lr_ablation_at_the_papers_values_reports_the_non_reproduction(out):
    """At the paper's η ∈ {1e-2, 1e-3, 1e-4} and T = 100 the binary net still averages at η = 1e-2: the claim
    that a large η breaks averaging is reported as not holding (see docs), not hidden."""
    res = featlab.run("fa-ablation-lr", "quick", out=out, seeds=1)
    c = claims(res)
    assert every_seed_passed(c["fa.ablation_lr.fa_when_small"])  # 1 of 1 seed: inconclusive, the seed passed
    assert "passing: 0 of 1" in c["fa.ablation_lr.breaks_when_large"]["unit"]  # the seed still averages at 1e-2
    assert not c["fa.ablation_lr.breaks_when_large"]["holds"]


@pytest.mark.slow
def test_fa_ablation_n_paper_values(out):
    assert_all_hold(featlab.run("fa-ablation-n", "quick", out=out))


def test_fa_synthetic_seed_alone_equals_the_same_seed_in_a_batch(tmp_path):
    """Every metric row of seed 1 (training, alignment, Thm 4.6 search, every attack, the convergence check) is the
    same whether seed 1 runs alone or beside seed 0: every random stream is keyed per replica (float64: exact)."""
    import featlab

    kw = dict(k=4, d=64, m=2, n=60, n_test=50, T=20, eta=0.05, pgd_steps=8, thm46_starts=4, thm46_steps=5,
              radii=[0.0, 2.0, 4.0, 8.0], dtype="float64", quiet=True, long_T=40, long_eta=0.05)
    both = featlab.run("fa-synthetic", "quick", out=tmp_path / "a", seed=0, seeds=2, **kw).metrics
    alone = featlab.run("fa-synthetic", "quick", out=tmp_path / "b", seed=1, seeds=1, **kw).metrics
    b = both[both.seed == 1].set_index(["step", "metric"]).value.sort_index()
    a = alone.set_index(["step", "metric"]).value.sort_index()
    assert list(a.index) == list(b.index) and len(a) > 50
    assert np.allclose(a.to_numpy(), b.to_numpy(), rtol=1e-12, atol=1e-14, equal_nan=True)


def test_relabel_controls_keep_what_they_say_and_remove_the_rest():
    """'shuffled-in-class' keeps every binary label and draws the fine label inside the point's coarse class;
    'random' draws both independently of the cluster (the label controls of fa-synthetic and fa-phase)."""
    import torch

    from featlab.papers.feature_averaging.data import MultiClusterDistribution, relabel

    dist = MultiClusterDistribution.create([0, 1], 6, 32, [0, 1, 2])
    tr = dist.sample(600, [0, 1])
    sh = relabel(tr, dist.positive, [0, 1], "shuffled-in-class")
    assert torch.equal(sh.y, tr.y) and torch.equal(sh.x, tr.x)
    assert torch.equal(dist.positive[sh.cluster], dist.positive[tr.cluster])  # same coarse class
    assert 0.2 < (sh.cluster == tr.cluster).double().mean() < 0.5  # 1/3 by chance, not the cluster
    rnd = relabel(tr, dist.positive, [0, 1], "random")
    assert 0.4 < (rnd.y == tr.y).double().mean() < 0.6 and (rnd.cluster == tr.cluster).double().mean() < 0.3
    assert relabel(tr, dist.positive, [0, 1], "cluster") is tr


def test_trajectory_claims_read_the_training_record():
    """Lemma 5.3's spread is the largest over probed steps ≥ 1 (step 0 excluded) and seeds; Lemma B.23's band
    distance is measured only where ηt ≥ 1, and is negative when λ leaves the band."""
    import math

    from featlab.papers.feature_averaging.synthetic_claims import lambda_band, margin_spread
    from featlab.train.loop import TrainResult

    rec = TrainResult(records=[(0, 0, "binary.margin_spread", 9.0), (0, 10, "binary.margin_spread", 0.3),
                               (1, 10, "binary.margin_spread", 0.5)])
    assert margin_spread(rec) == 0.5
    rows = [(0, t, f"long.binary.lambda_in_class_{s}", v) for t, lo, hi in ((5, 0.0, 0.1), (100, 0.5, 0.7),
                                                                            (1000, 0.4, 2.0))
            for s, v in (("min", lo), ("max", hi))]
    gap = lambda_band(TrainResult(records=rows), eta=0.01)  # t = 5 (ηt < 1) is not judged
    assert math.isclose(gap, 0.4 - math.log(10) / 4)  # λ_min at ηt = 10 is 0.4 < ln(10)/4 = 0.58: outside
    assert math.isnan(lambda_band(TrainResult(records=rows[:2]), eta=0.01))


def test_joint_fit_separates_the_k_exponent_from_the_d_exponent():
    """fa.phase_kclass_exponent fits log r on log d and log k jointly: √(d/2) gives (0.5, 0), √(d/k) (0.5, −0.5),
    which a slope on log d alone cannot tell apart."""
    from featlab.papers.feature_averaging.phase import joint_fit

    ks, ds = [4, 4, 8, 8, 16, 16], [1024, 4096, 1024, 4096, 1024, 4096]
    a, b = joint_fit(ks, ds, [(d / 2) ** 0.5 for d in ds])
    assert abs(a - 0.5) < 1e-9 and abs(b) < 1e-9
    a, b = joint_fit(ks, ds, [(d / k) ** 0.5 for k, d in zip(ks, ds)])
    assert abs(a - 0.5) < 1e-9 and abs(b + 0.5) < 1e-9
    assert np.isnan(joint_fit(ks, ds, [1.0, float("nan"), 1, 1, 1, 1])[0])


def test_decoupled_init_control_starts_at_the_robust_network():
    """The 'decoupled-init' control (fa-synthetic, fa-phase): the binary net starts at Thm D.3's network, which
    classifies from step 0 with each point activating only its own cluster's neuron (so Lemma 5.5 fails), and
    GD keeps it there."""
    import torch

    from featlab.nn.twolayer import sign_prediction
    from featlab.papers.feature_averaging.common import FASyntheticConfig, fit_binary, make_data

    cfg = FASyntheticConfig(seeds=1, k=4, d=256, m=2, n=200, n_test=100, T=5, init="decoupled")
    dist, tr, te = make_data(cfg, [0], torch.float32)
    net, res = fit_binary(cfg, [0], dist, tr)
    assert res.status == "complete"
    with torch.no_grad():
        assert (sign_prediction(net(te.x)) == te.y).float().mean() == 1
        active = (net.preactivation(tr.x) >= 0).sum(-1)  # (1, n): neurons active per training point
    assert (active == 1).all()
