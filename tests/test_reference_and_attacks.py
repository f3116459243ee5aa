"""Closed forms of the Feature Averaging paper, recovered by the probes and the attacks."""

import math

import pytest
import torch

from featlab.nn.twolayer import logit_margin_readout, sign_prediction
from featlab.papers.feature_averaging import attacks, measures, reference
from featlab.papers.feature_averaging.data import MultiClusterDistribution
from featlab.probes.robustness import (
    correct,
    critical_radius,
    direction_attack,
    pgd_l2,
    random_in_ball,
    robust_accuracy_curve,
    worst_case,
)
from featlab.utils import generator

K, D = 10, 800


@pytest.fixture(scope="session")
def setup():
    dist = MultiClusterDistribution.create([0, 1], k=K, d=D, positive=[0, 1, 2, 3, 4], dtype=torch.float64)
    test = dist.sample(200, [0, 1], "test")
    return dist, test


def test_fa_network_cosine_is_one_over_sqrt_class_size():
    dist = MultiClusterDistribution.create([0], k=7, d=50, positive=[0, 1, 2], dtype=torch.float64)
    f = reference.feature_averaging(dist)
    cos = measures.cosine_matrix(dist.mu, f.W)[0]  # (k, 2)
    assert torch.allclose(cos[:3, 0], torch.full((3,), 1 / math.sqrt(3), dtype=torch.float64))
    assert torch.allclose(cos[3:, 1], torch.full((4,), 1 / math.sqrt(4), dtype=torch.float64))
    assert cos[3:, 0].abs().max() < 1e-12 and cos[:3, 1].abs().max() < 1e-12


def test_alignment_summaries_of_the_reference_networks():
    """f_FA is the exact averaging solution (fidelity 1, no residual); f_dec's neurons are the centres (cosine 1)."""
    dist = MultiClusterDistribution.create([0, 1], k=6, d=40, positive=[0, 1], dtype=torch.float64)
    f = reference.feature_averaging(dist)
    cos, stats = measures.binary_alignment(f, dist, 1)
    assert torch.allclose(cos, measures.fa_ideal(dist, 1))
    assert torch.allclose(stats["fa_fidelity"], torch.ones(2, dtype=torch.float64))
    assert stats["fa_rel_residual"].max() < 1e-12 and stats["cos_off_class_max_abs"].max() < 1e-12
    cos, stats = measures.kclass_alignment(reference.feature_decoupled(dist), dist, 6)
    assert torch.allclose(cos, torch.eye(6, dtype=torch.float64).expand(2, 6, 6), atol=1e-12)
    assert stats["fd_rel_residual"].max() < 1e-12

def test_fa_network_breaks_at_sqrt_d_over_k_along_the_averaged_direction(setup):
    """f_FA flips once ‖ρ‖ > √(d/k) along −y(Σ_{J+}μ − Σ_{J−}μ) (derived in the spec from Thm 4.5 (3))."""
    dist, te = setup
    f = reference.feature_averaging(dist)
    u = dist.averaged_direction()
    r0 = math.sqrt(D / K)
    acc = lambda r: (sign_prediction(f(direction_attack(te.x, te.y, u, r))) == te.y).double().mean().item()
    assert acc(0.0) > 0.99
    assert acc(0.6 * r0) > 0.9
    assert acc(1.5 * r0) < 0.1


def test_worst_case_ensemble_breaks_the_fa_network_just_past_sqrt_d_over_k():
    """f_FA's exact distance to its boundary is (d + a − b)/√(kd) = √(d/k)·(1 + O(√(k/d))·Z) (a, b: the noise's
    projections on Σ_{J±}μ), so at d = 3072, k = 10 about 0.02 % of points survive 1.2·√(d/k): the worst case over
    the ensemble must leave < 2 %; margin PGD alone leaves a masked tail there (the reason for the ensemble)."""
    d = 3072
    dist = MultiClusterDistribution.create([0], k=K, d=d, positive=[0, 1, 2, 3, 4], dtype=torch.float32)
    te = dist.sample(200, [0], "test")
    f = reference.feature_averaging(dist)
    r0 = math.sqrt(d / K)
    radii = [0.0, 0.6 * r0, 1.2 * r0]
    pgd = dict(steps=20, step_size_factor=2.5, random_start_=True, restarts=1, generators=[generator(0, "attack")],
               ddn_generators=[generator(0, "attack/min_norm")])
    masks = attacks.ensemble(attacks.target(f, te.x, 1.0), dist, te, radii, attacks.ATTACKS, pgd)
    acc = {a: m.double().mean(-1) for a, m in masks.items()}  # (R, E)
    worst = worst_case(masks).double().mean(-1)
    assert worst[0].min() > 0.99 and worst[1].min() > 0.9
    assert worst[2].max() < 0.02, worst[2]
    assert acc["pgd"][2].max() > 0.05  # margin PGD alone: masked by the inactive opposite-class neuron


def test_certificate_is_sound_and_skips_only_unbreakable_points(setup):
    """No attack fools a point below its Lipschitz-certified radius, and skipping them leaves the curve unchanged."""
    dist, te = setup
    f = reference.feature_averaging(dist)
    cert = attacks.certified_radius(f, lambda x: f(x), te.x, te.y, kclass=False)
    r = float(cert.median())
    inside = cert > r
    _, fooled = pgd_l2(lambda x: f(x), te.x, te.y, r, steps=30, generator=torch.Generator().manual_seed(3))
    assert not (fooled & inside).any()
    kw = dict(steps=10, generator=None, random_start=False)
    plain = robust_accuracy_curve(lambda x: f(x), te.x, te.y, [r, 2 * r], **kw)
    skipped = robust_accuracy_curve(lambda x: f(x), te.x, te.y, [r, 2 * r], certified=cert, **kw)
    assert torch.equal(plain, skipped)


def test_decoupled_network_is_robust_at_sqrt_d_over_3(setup):
    """Thm D.3: f_dec is (√d/3)-robust. Its positive points fall once their own neuron (bias −d/2) switches off,
    at √d/2 along −μ_j (f = 0 is predicted −1), which PGD must find."""
    dist, te = setup
    f = reference.feature_decoupled(dist)
    g = torch.Generator().manual_seed(1)
    pos = te.y > 0
    acc = robust_accuracy_curve(lambda x: f(x), te.x, te.y, [math.sqrt(D) / 3], steps=30, generator=g).mean(1)
    assert acc[0] > 0.99
    _, fooled = pgd_l2(lambda x: f(x), te.x, te.y, 1.2 * math.sqrt(D) / 2, steps=30, generator=g)
    assert fooled[pos].double().mean() > 0.95


def test_prop_4_8_network_fits_fine_labels_but_is_not_robust():
    """Prop 4.8: a k-class net that fits the cluster labels, yet whose binary read-out breaks along the averaged
    direction well inside the decoupling radius √(d/2) (for k = 20 at ≈ 2√(d/k))."""
    k, d = 20, 800
    dist = MultiClusterDistribution.create([0], k=k, d=d, positive=list(range(1, 11)), dtype=torch.float64)
    te = dist.sample(300, [0], "test")
    f = reference.nonrobust_multiclass(dist)
    assert (f(te.x).argmax(-1) == te.cluster).double().mean() > 0.99
    score = lambda x: logit_margin_readout(f(x), dist.positive)
    u = dist.averaged_direction()
    acc = lambda r: correct(score(direction_attack(te.x, te.y, u, r)), te.y).double().mean().item()
    assert acc(0.0) > 0.99
    assert acc(0.8 * math.sqrt(d / 2)) < 0.05
    dec = reference.feature_decoupled(dist)  # the decoupled net is still robust there... up to √d/2
    assert correct(dec(direction_attack(te.x, te.y, u, 0.8 * math.sqrt(d / 2))), te.y).double().mean() > 0.99


def test_pgd_iterates_stay_in_the_ball():
    torch.manual_seed(0)
    x = torch.randn(3, 40, 16, dtype=torch.float64)
    y = torch.randint(0, 2, (3, 40)).double() * 2 - 1
    eps = torch.rand(3, 40, dtype=torch.float64) * 2
    w = torch.randn(16, dtype=torch.float64)
    seen = []

    def score(z):
        seen.append((z - x).detach().norm(dim=-1))
        return (z * w).sum(-1) + 0.3 * z.pow(2).sum(-1).sqrt()

    x_adv, fooled = pgd_l2(score, x, y, eps, steps=15, restarts=2, generator=torch.Generator().manual_seed(3))
    assert all((n <= eps + 1e-9).all() for n in seen)
    assert ((x_adv - x).norm(dim=-1) <= eps + 1e-9).all()
    assert torch.equal(fooled, ~correct(score(x_adv), y))  # the returned points are the adversarial ones


def test_pgd_on_a_linear_model_matches_the_exact_answer():
    """For f(x) = <w, x> the minimal ℓ2 flip is |f(x)|/‖w‖: PGD must find exactly the points below eps."""
    torch.manual_seed(4)
    x = torch.randn(1, 500, 20, dtype=torch.float64)
    w = torch.randn(20, dtype=torch.float64)
    y = torch.where((x @ w) > 0, 1.0, -1.0).double()
    eps = 0.5
    _, fooled = pgd_l2(lambda z: z @ w, x, y, eps, steps=10, random_start=False)
    exact = (x @ w).abs() / w.norm() <= eps
    assert torch.equal(fooled, exact)


def test_random_start_is_inside_the_ball():
    d = random_in_ball((4, 100, 30), torch.tensor(2.0, dtype=torch.float64), 1,
                       torch.Generator().manual_seed(0), torch.float64)
    n = d.norm(dim=-1)
    assert (n <= 2.0 + 1e-12).all() and n.mean() > 1.8  # concentrates near the sphere in 30 dims


def test_critical_radius_interpolates():
    acc = torch.tensor([[1.0], [0.8], [0.2], [0.0]])
    assert critical_radius([0, 1, 2, 3], acc).item() == pytest.approx(1.5)
    assert critical_radius([0, 1], torch.tensor([[1.0], [0.9]])).item() == math.inf


def test_thm46_distance_is_zero_for_the_fa_network_itself():
    dist = MultiClusterDistribution.create([0], k=6, d=60, positive=[0, 1, 2], dtype=torch.float64)
    f = reference.feature_averaging(dist)
    # a binary net of width m=1 that IS f_FA scaled by C = λ/d with λ = d (w = Σμ_j)
    f.A = f.A.clone()
    starts = torch.randn(1, 8, 60, dtype=torch.float64)
    t = measures.thm46_distance(f, dist.mu, dist.positive, 1, starts=starts, steps=10)
    assert t["bound"].item() < 1e-9 and t["estimate"].item() < 1e-9 and t["scale"].item() > 1


def test_thm46_search_finds_a_planted_perturbation():
    """f = f_FA plus a perturbation δ ⟂ every centre on the + neuron: the analytic sup of |C f_FA − f| on the sphere
    ‖x‖ = √d is √d·‖δ‖ (at x = √d·δ/‖δ‖); the ascent must reach 0.9 of it from random starts (which give ≈ 1/√d)."""
    d = 60
    dist = MultiClusterDistribution.create([0], k=6, d=d, positive=[0, 1, 2], dtype=torch.float64)
    f = reference.feature_averaging(dist)
    u = torch.randn(d, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    u -= dist.mu[0].T @ torch.linalg.lstsq(dist.mu[0].T, u).solution  # ⟂ every centre
    delta = 0.3 * f.W[0, 0].detach().norm() * u / u.norm()
    with torch.no_grad():
        f.W[0, 0] += delta
    starts = torch.randn(1, 8, d, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    t = measures.thm46_distance(f, dist.mu, dist.positive, 1, starts=starts, steps=50)
    sup = d**0.5 * delta.norm()
    assert t["estimate"].item() >= 0.9 * sup.item()
    assert t["estimate"].item() <= t["bound"].item() + 1e-9  # the proof's bound holds (an identity)
