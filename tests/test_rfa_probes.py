"""Amplification probes: Lemma 12's first step, Conditions 9–10, Lemma 14, the (A1)–(A7) checker, and the
replica axis (replica i = training it alone)."""

import math

import torch

from featlab.papers.feature_amplification import lemmas
from featlab.papers.feature_amplification.common import gd, make_net
from featlab.papers.feature_amplification.data import XORClusterDistribution
from featlab.papers.feature_amplification.theorem1 import Theorem1Config, _measure, _train


def _setup(seeds, d=300, n=200, m=40, sigma=1e-4, omega=1e-6, eta=0.1, dtype=torch.float64):
    dist = XORClusterDistribution.create(seeds, d, sigma, eta, dtype=dtype)
    tr = dist.sample(n, seeds)
    cfg = Theorem1Config(d=d, n=n, m=m, sigma=sigma, omega=omega, alpha=0.1)
    net = make_net(cfg, seeds, dtype, torch.device("cpu"))
    return dist, tr, net


def test_lemma12_first_step_formula_matches_actual_step():
    alpha = 0.1
    dist, tr, net = _setup([0, 1])
    W0 = net.W.detach().clone()
    with torch.no_grad():
        s0 = net(tr.x)
    pred = lemmas.lemma12_first_step(W0, net.A, tr.x, tr.y, tr.cluster, dist.mu, s0, alpha)
    gd(net, tr, 1, alpha, [0, 1], probe_every=10)
    actual = lemmas.first_step_actual(net.W.detach(), W0, dist.mu)
    gap = (actual - pred["predicted"]).abs()
    assert (gap <= pred["bound"] + 1e-15).all()  # the exact ζ1 + ζ2 remainder bound
    # small σ and ω: the prediction is the step up to a relative error ~ σ + ω√(md)
    assert float(gap.max() / pred["predicted"].abs().max()) < 1e-3
    # and a wrong formula (without the 1/2 from −ℓ'(0)) would not match
    assert float((actual - 2 * pred["predicted"]).abs().max()) > 10 * float(pred["bound"].max())


def test_amplification_and_lemma_thresholds_in_the_theory_regime():
    alpha, T = 0.1, lemmas.stopping_time(0.1)
    assert T == 3
    dist, tr, net = _setup([0])
    W0 = net.W.detach().clone()
    J = lemmas.neuron_sets(W0, net.A, dist.mu)
    assert J.sum() == net.W.shape[1]  # with Def 7's C0 the threshold is ≈ 0: J is every neuron
    rho0 = lemmas.median_rho_own(W0, dist.mu, J)
    assert float(rho0) < 3 / math.sqrt(300)  # Θ(1/√d) at init (Lemma 4)
    Ws = [W0]
    for _ in range(T):
        gd(net, tr, 1, alpha, [0], probe_every=10)
        Ws.append(net.W.detach().clone())
    assert float(lemmas.median_rho_own(Ws[1], dist.mu, J)) > 0.3  # Θ(1) after one step (Lemma 12)
    for t in range(1, T + 1):
        assert float(lemmas.frobenius_ratio(Ws[t], alpha, t)) <= 1  # Lemma 14
        assert float(lemmas.condition10(Ws[t], net.A, dist.mu, J, alpha)) <= 3  # Cond 10
        assert float(lemmas.condition9(Ws[t], tr.x, tr.cluster, J)) == 1.0  # Cond 9
    assert float(lemmas.growth(Ws[2], Ws[1], net.A, dist.mu, J, alpha)) >= lemmas.GROWTH_FLOOR  # eq. (39)
    assert float(lemmas.span_share(Ws[T], dist.mu)) > 0.9
    # a neuron pointing at the other class's mean breaks Condition 10
    bad = Ws[T].clone()
    bad[0, 0] += 10 * alpha * dist.mu[0, 1]
    assert float(lemmas.condition10(bad, net.A, dist.mu, J, alpha)) > 3


def test_condition9_detects_a_misaligned_neuron():
    dist, tr, net = _setup([0], sigma=1e-3)
    W = torch.zeros_like(net.W.detach())
    W[0, :, :] = dist.mu[0, 0]  # all neurons along +µ1: fine for J_{+µ1}, wrong for the others
    J = torch.zeros(1, 4, W.shape[1], dtype=torch.bool)
    J[0, 0, 0] = True
    assert float(lemmas.condition9(W, tr.x, tr.cluster, J)) == 1.0
    J[0, 2, 1] = True  # neuron 1 claimed for +µ2 but points at +µ1
    assert float(lemmas.condition9(W, tr.x, tr.cluster, J)) == 0.5


def test_min_neg_lprime_and_feature_change():
    s = torch.tensor([[0.0, 2.0, -1.0]])
    y = torch.tensor([[1.0, 1.0, 1.0]])
    assert float(lemmas.min_neg_lprime(s, y)) == torch.sigmoid(torch.tensor(-2.0)).item()
    assert lemmas.LPRIME_FLOOR == math.exp(-2) / 2
    W0 = torch.ones(1, 2, 3)
    x = torch.ones(1, 4, 3)
    assert float(lemmas.feature_change(2 * W0, W0, x)) == 1.0


def test_replica_equals_training_alone():
    """rfa-theorem1 trains every (η, seed) pair in one batch; replica i must match a run of that pair alone."""
    cfg = Theorem1Config(d=30, n=80, m=10, etas=[0.0, 0.2], n_test=50, steps=5, n_sweep=[])
    run = _train(cfg, [3, 4], cfg.n, torch.float64, torch.device("cpu"))
    net, res, st = run.net, run.res, _measure(run)
    assert res.status == "complete" and len(run.reps) == 4
    i = 3  # (η = 0.2, seed 4)
    assert run.reps.values[i] == 0.2 and run.reps[i] == 4
    solo = Theorem1Config(d=30, n=80, m=10, etas=[0.2], n_test=50, steps=5, n_sweep=[])
    run1 = _train(solo, [4], solo.n, torch.float64, torch.device("cpu"))
    net1, st1 = run1.net, _measure(run1)
    torch.testing.assert_close(net.W.detach()[i], net1.W.detach()[0], rtol=1e-10, atol=1e-12)
    for k in ("test_err", "train_noisy_fit"):
        assert float(st[k][i]) == float(st1[k][0])
    # and replicas really differ: η changes the labels, so the weights differ from η = 0's with the same seed
    assert not torch.allclose(net.W.detach()[1], net.W.detach()[3])
    # the trainer names replica i's rows by its own seed and η: the same rows as training that pair alone
    f, f1 = res.frame(), run1.res.frame()
    assert sorted(f["seed"].unique()) == [3, 4]
    assert set(f["metric"]) == {f"eta={e}.{k}" for e in ("0", "0.2")
                                for k in ("loss", "train_clean_correct", "train_noisy_fit")}
    mine = f[f["metric"].str.startswith("eta=0.2.") & (f["seed"] == 4)].reset_index(drop=True)
    assert mine[["seed", "step", "metric"]].equals(f1[["seed", "step", "metric"]])
    assert (mine["value"] - f1["value"]).abs().max() < 1e-10


def test_assumption_checker():
    ok = lemmas.check_assumptions(d=700, n=200, m=32, sigma=0.002, eta=0.05, omega=5e-5, alpha=0.2, delta=0.05,
                               C=10)
    assert ok["label"] == "theory-checked" and all(ok["holds"].values())
    assert ok["C_max"] is not None and ok["C_max"] >= 10
    bad = lemmas.check_assumptions(d=200, n=1000, m=400, sigma=200**-0.6, eta=0.2, omega=math.sqrt(0.01 / 80000),
                                alpha=0.1, delta=0.05, C=25)
    assert bad["label"] == "experimental"
    assert not bad["holds"]["A2"] and not bad["holds"]["A4"] and bad["holds"]["A7"]
    assert any("(A2)" in line and "FAILS" in line for line in bad["lines"])
