"""XOR cluster distribution of the Random Feature Amplification paper: laws, noise models, f*, symmetry."""

import math

import pytest
import torch

from featlab.papers.feature_amplification.data import CLEAN_LABEL, XORClusterDistribution, f_star, rfa_readout


@pytest.mark.parametrize("law", ["gaussian", "uniform", "laplace"])
def test_fstar_classifies_clean_points_of_separated_clusters(law):
    # σ√d = 0.05: every clean point has |<µ, x>| ≈ 1 and |<µ_other, x>| ≈ 0 (App. D)
    d = 100
    dist = XORClusterDistribution.create([0, 1], d, 0.005, 0.2, law=law)
    b = dist.sample(4000, [0, 1])
    pred = torch.where(f_star(b.x, dist.mu) > 0, 1.0, -1.0)
    assert (pred == b.y_clean).all()
    assert not (pred == b.y)[b.noisy].any()  # noisy points are the ones f* gets "wrong"


def test_info_is_consistent_and_means_orthonormal():
    dist = XORClusterDistribution.create([3], 20, 0.1, 0.3, means="random", dtype=torch.float64)
    G = dist.mu[0] @ dist.mu[0].T
    torch.testing.assert_close(G, torch.eye(2, dtype=torch.float64))
    b = dist.sample(2000, [3])
    assert torch.equal(b.y_clean, torch.tensor(CLEAN_LABEL, dtype=torch.float64)[b.cluster])
    assert torch.equal(b.y == -b.y_clean, b.noisy)
    # prior 1/4 per cluster
    counts = torch.bincount(b.cluster[0], minlength=4).double() / 2000
    assert (counts - 0.25).abs().max() < 0.04
    axis = XORClusterDistribution.create([0], 5, 0.1, means="axis")
    assert torch.equal(axis.mu[0], torch.eye(5)[:2])


@pytest.mark.parametrize("law", ["gaussian", "uniform", "laplace"])
def test_cluster_noise_has_covariance_sigma2_identity(law):
    sigma, d = 0.3, 8
    dist = XORClusterDistribution.create([0], d, sigma, law=law, means="axis", dtype=torch.float64)
    b = dist.sample(60000, [0])
    centres = torch.stack([dist.mu[0, 0], -dist.mu[0, 0], dist.mu[0, 1], -dist.mu[0, 1]])
    z = b.x[0] - centres[b.cluster[0]]
    cov = torch.cov(z.T)
    assert z.mean(0).abs().max() < 0.01
    torch.testing.assert_close(cov, sigma**2 * torch.eye(d, dtype=torch.float64), atol=0.006, rtol=0)


def test_bias_free_linear_classifier_is_at_chance():
    # §2: x → −x keeps the clean label, so any homogeneous halfspace gets exactly 1/2 in the population
    dist = XORClusterDistribution.create([0], 30, 0.2, law="laplace")
    b = dist.sample(40000, [0])
    g = torch.Generator().manual_seed(1)
    for _ in range(5):
        w = torch.randn(30, generator=g)
        acc = (torch.where(b.x[0] @ w > 0, 1.0, -1.0) == b.y_clean[0]).float().mean()
        assert abs(float(acc) - 0.5) < 3 * 0.5 / math.sqrt(40000) + 1e-3
        # exact on the antithetic sample {x, −x}
        both = torch.cat([b.x[0], -b.x[0]])
        yc = torch.cat([b.y_clean[0], b.y_clean[0]])
        assert float((torch.where(both @ w > 0, 1.0, -1.0) == yc).float().mean()) == pytest.approx(0.5, abs=1e-6)
    # the direction µ1 itself, the best-looking one, is at chance too
    acc = (torch.where(b.x[0] @ dist.mu[0, 0] > 0, 1.0, -1.0) == b.y_clean[0]).float().mean()
    assert abs(float(acc) - 0.5) < 0.02


@pytest.mark.parametrize("eta", [0.0, 0.05, 0.15, 0.3])
def test_noise_models_give_requested_rates(eta):
    n = 20000
    flip = XORClusterDistribution.create([0], 10, 0.1, eta, noise="flip").sample(n, [0])
    assert abs(float(flip.noisy.double().mean()) - eta) <= 4 * math.sqrt(eta * (1 - eta) / n) + 1e-12
    exact = XORClusterDistribution.create([0], 10, 0.1, eta, noise="exact").sample(n, [0])
    for k in range(4):
        idx = exact.cluster[0] == k
        assert int(exact.noisy[0][idx].sum()) == round(eta * int(idx.sum()))
    bd = XORClusterDistribution.create([0], 10, 0.1, eta, noise="boundary")
    b = bd.sample(n, [0])
    assert abs(float(b.noisy.double().mean()) - eta) <= 4 * math.sqrt(max(eta * (1 - eta), 1e-9) / n) + 0.01
    if eta > 0:  # η(x) depends on x: the flipped points are the ones closest to f*'s boundary
        margin = f_star(b.x, bd.mu).abs()[0]
        assert margin[b.noisy[0]].max() <= margin[~b.noisy[0]].min()


def test_same_seed_shares_x_and_noisy_sets_are_nested():
    dist = XORClusterDistribution.create([5, 5], 12, 0.1, [0.1, 0.2])
    b = dist.sample(3000, [5, 5])
    assert torch.equal(b.x[0], b.x[1])
    assert not (b.noisy[0] & ~b.noisy[1]).any()


def test_readout_half_and_half_and_zero_for_odd_m():
    A = rfa_readout(6)[:, 0]
    torch.testing.assert_close(A, torch.tensor([1, 1, 1, -1, -1, -1], dtype=torch.float64) / math.sqrt(6))
    A = rfa_readout(7)[:, 0]
    assert A[-1] == 0 and (A[:3] > 0).all() and (A[3:6] < 0).all()
    assert float(A.pow(2).sum()) == pytest.approx(6 / 7)


def test_cluster_noise_puts_every_flip_in_one_cluster():
    """The majority-noise controls' setting: all flips in +µ1 at rate 4η (overall rate η), a wrong majority there."""
    n = 20000
    b = XORClusterDistribution.create([0], 10, 0.1, 0.15, noise="cluster").sample(n, [0])
    assert not b.noisy[0][b.cluster[0] != 0].any()
    rate = float(b.noisy[0][b.cluster[0] == 0].double().mean())
    assert abs(rate - 0.6) < 0.03 and abs(float(b.noisy.double().mean()) - 0.15) < 0.015
