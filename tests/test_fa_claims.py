"""The claims of the Feature Averaging experiments at quick scale (the same check the CLI prints)."""

import numpy as np
import pytest

import featlab


def claims(res):
    return {c["id"]: c for c in res.claims}


def assert_all_hold(res):
    assert res.ok, res.summary.get("message")
    bad = [f"{c['id']}: measured {c['measured']} vs {c['threshold']}" for c in res.claims if not c["holds"]]
    assert not bad, bad


def test_fa_synthetic_quick_claims_hold(out):
    res = featlab.run("fa-synthetic", "quick", out=out, seeds=2)
    assert_all_hold(res)
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
    assert len(res.figures) == 2
    assert m["binary.thm46_estimate"] <= m["binary.thm46_bound"] + 1e-9  # the ascent's lower estimate ≤ the sound U


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
def test_ablation_claims_hold(out, exp, preset, extra):
    assert_all_hold(featlab.run(exp, preset, out=out, **extra))


def test_lr_ablation_at_the_papers_values_reports_the_non_reproduction(out):
    """At the paper's η ∈ {1e-2, 1e-3, 1e-4} and T = 100 the binary net still averages at η = 1e-2: the claim
    that a large η breaks averaging is reported as not holding (see docs), not hidden."""
    res = featlab.run("fa-ablation-lr", "quick", out=out, seeds=1)
    c = claims(res)
    assert c["fa.ablation_lr.fa_when_small"]["holds"]
    assert not c["fa.ablation_lr.breaks_when_large"]["holds"]


@pytest.mark.slow
def test_fa_ablation_n_paper_values(out):
    assert_all_hold(featlab.run("fa-ablation-n", "quick", out=out))


def test_fa_synthetic_seed_alone_equals_the_same_seed_in_a_batch(tmp_path):
    """Every metric row of seed 1 (training, alignment, Thm 4.6 search, every attack, the convergence check) is the
    same whether seed 1 runs alone or beside seed 0: every random stream is keyed per replica (float64: exact)."""
    import featlab

    kw = dict(k=4, d=64, m=2, n=60, n_test=50, T=20, eta=0.05, pgd_steps=8, thm46_starts=4, thm46_steps=5,
              radii=[0.0, 2.0, 4.0, 8.0], dtype="float64", quiet=True)
    both = featlab.run("fa-synthetic", "quick", out=tmp_path / "a", seed=0, seeds=2, **kw).metrics
    alone = featlab.run("fa-synthetic", "quick", out=tmp_path / "b", seed=1, seeds=1, **kw).metrics
    b = both[both.seed == 1].set_index(["step", "metric"]).value.sort_index()
    a = alone.set_index(["step", "metric"]).value.sort_index()
    assert list(a.index) == list(b.index) and len(a) > 50
    assert np.allclose(a.to_numpy(), b.to_numpy(), rtol=1e-12, atol=1e-14, equal_nan=True)
