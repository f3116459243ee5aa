"""Midpoint Mixup pieces: ReLU~, the multi-view data, the exact all-pairs objectives, the reduced simulation."""

import math

import pytest
import torch

from featlab.nn.activations import SmoothedReLU, smoothed_relu, smoothed_relu_grad
from featlab.nn.twolayer import (
    EnsembleTwoLayer,
    binary_readout,
    block_readout,
    logit_margin_readout,
    patch_logits,
    positive_mask,
)
from featlab.papers.midpoint_mixup import losses as mm
from featlab.papers.midpoint_mixup.data import (
    LinearMultiView,
    MultiViewDistribution,
    compress_patches,
    embed,
    orthonormal_features,
)
from featlab.papers.midpoint_mixup.learned_features import (
    correlation_stats,
    correlations,
    feature_test,
    learned_counts,
    train_accuracy,
)
from featlab.train.mixup import Mixup, mixup_cross_entropy, random_pairing, sample_beta

D = torch.float64


# ------------------------------------------------------------------------------------------ ReLU~ (Def 4.2)
@pytest.mark.parametrize("alpha", [2.0, 4.0, 8.0])
def test_smoothed_relu_pieces_and_c1_at_rho(alpha):
    rho = 0.1
    z = torch.tensor([-1.0, -1e-3, 0.0, 0.05, rho, 0.3], dtype=D, requires_grad=True)
    out = smoothed_relu(z, alpha, rho)
    expect = torch.tensor([0, 0, 0, 0.05**alpha / (alpha * rho ** (alpha - 1)), rho / alpha,
                           0.3 - (1 - 1 / alpha) * rho], dtype=D)
    assert torch.allclose(out, expect, atol=1e-15)
    out.sum().backward()
    assert torch.equal(z.grad[:3], torch.zeros(3, dtype=D))  # zero below 0 (the public code is not)
    assert torch.allclose(z.grad, smoothed_relu_grad(z.detach(), alpha, rho))
    # C¹ at ρ: one-sided values and slopes agree
    eps = 1e-7
    lo, hi = torch.tensor([rho - eps], dtype=D), torch.tensor([rho + eps], dtype=D)
    assert abs(float(smoothed_relu(hi, alpha, rho) - smoothed_relu(lo, alpha, rho))) < 3 * eps
    assert abs(float(smoothed_relu_grad(lo, alpha, rho)) - 1) < alpha * eps / rho


def test_smoothed_relu_rejects_bad_params():
    with pytest.raises(ValueError):
        SmoothedReLU(alpha=0.5)
    with pytest.raises(ValueError):
        SmoothedReLU(rho=0.0)


# ------------------------------------------------------------------------------------------ Def 4.1 / 4.5
def small_dist(**kw):
    base = dict(k=4, P=6, C_P=2, delta1=0.5, delta2=2.0, delta3=0.01, delta4=0.03, Q=2)
    return MultiViewDistribution(**{**base, **kw})


@pytest.mark.parametrize("positions,gamma_law", [("fixed", "per-point"), ("random", "per-patch")])
def test_def41_structure(positions, gamma_law):
    dist = small_dist(positions=positions, gamma_law=gamma_law, bijection="random")
    b = dist.sample(50, [0, 1])
    x, y = b.x, b.y
    k = dist.k
    cls = x.reshape(*x.shape[:-1], k, 2)  # (E, n, P, k, 2)
    own = cls.gather(3, y[..., None, None, None].expand(-1, -1, dist.P, 1, 2)).squeeze(3)  # (E, n, P, 2)
    s1, s2 = own[..., 0] > 0, own[..., 1] > 0
    assert (s1.sum(-1) == dist.C_P).all() and (s2.sum(-1) == dist.C_P).all()
    assert not (s1 & s2).any()
    # paired patches sum to δ2 in total: Σ β + Σ (δ2 − β) = C_P δ2; β ∈ [δ1, δ2 − δ1]
    assert torch.allclose(own.sum((-1, -2)), torch.full_like(own.sum((-1, -2)), dist.C_P * dist.delta2))
    betas = own[..., 0][s1]
    assert betas.min() >= dist.delta1 and betas.max() <= dist.delta2 - dist.delta1
    # noise patches: Q classes other than y, coefficients in [δ3, δ4]
    noise = x[~(s1 | s2)]
    nz = noise[noise != 0]
    assert nz.min() >= dist.delta3 - 1e-12 and nz.max() <= dist.delta4 + 1e-12
    assert ((noise != 0).sum(-1) == 2 * dist.Q).all()
    assert (b.noise_classes != y[..., None]).all()


def test_def45_removes_exactly_the_other_features_patches():
    dist = small_dist(positions="random")
    b = dist.sample(40, [3])
    for ell in (1, 2):
        xs = dist.single_view(b.x, b.y, ell)
        other = 2 * b.y + (2 - ell)  # coordinate of v_{y,3−ℓ}
        holds = b.x.gather(-1, other[..., None, None].expand(-1, -1, dist.P, 1)).squeeze(-1) != 0
        assert (holds.sum(-1) == dist.C_P).all()
        assert (xs[holds] == 0).all()  # those patches are the zero vector
        assert torch.equal(xs[~holds], b.x[~holds])  # every other patch untouched
        keep = 2 * b.y + (ell - 1)
        assert (xs.gather(-1, other[..., None, None].expand(-1, -1, dist.P, 1)) == 0).all()
        assert (xs.gather(-1, keep[..., None, None].expand(-1, -1, dist.P, 1)).sum((-1, -2)) > 0).all()


def test_orthonormal_features_and_linear_data():
    V = orthonormal_features([0, 1], 5, 40)
    eye = V @ V.transpose(1, 2)
    assert torch.allclose(eye, torch.eye(10, dtype=D).expand(2, -1, -1), atol=1e-12)
    b = LinearMultiView(5).sample(200, [0])
    assert torch.allclose(b.x.sum(-1), torch.ones(1, 200, dtype=D))  # β + (1 − β) = 1 (Eq. 3.2)
    assert b.beta.min() >= 0.1 and b.beta.max() <= 0.9


# ------------------------------------------------------------------------------------------ objectives
def cnn(seeds, dim, k=4, m=2, alpha=3.0, rho=0.5, sigma=0.7):
    return EnsembleTwoLayer.init(seeds, dim, block_readout(k, m, 1.0), sigma_w=sigma, dtype=D,
                                 activation=SmoothedReLU(alpha, rho))


def test_all_pairs_midpoint_equals_naive_and_chunks():
    dist = small_dist()
    b = dist.sample(9, [0, 1])
    net = cnn([0, 1], 8)
    xc, mult = compress_patches(b.x)
    assert xc.shape[-2] < b.x.shape[-2]  # the noise patches merged
    naive = mm.naive_midpoint_loss(net, b.x, b.y)
    naive.sum().backward()
    g_naive = net.W.grad.clone()
    for chunk in (1 << 14, 7):
        net.W.grad = None
        fast = mm.midpoint_all_pairs_loss(net, xc, b.y, mult, chunk=chunk)
        fast.sum().backward()
        assert torch.allclose(fast, naive, rtol=1e-12, atol=1e-13)
        assert torch.allclose(net.W.grad, g_naive, rtol=1e-10, atol=1e-14)
    # the materialised reference on merged patches (weighted by their multiplicities) is the same loss
    assert torch.allclose(mm.naive_midpoint_loss(net, xc, b.y, mult), naive, rtol=1e-12, atol=1e-13)


def test_mixup_triangle_equals_all_ordered_pairs_for_symmetric_nodes():
    dist = small_dist()
    b = dist.sample(7, [0])
    net = cnn([0], 8)
    lam = torch.tensor([0.2, 0.5, 0.8], dtype=D)  # a symmetric node set
    tri = mm.mixup_all_pairs_loss(net, b.x, b.y, lam, symmetric=True)
    full = mm.mixup_all_pairs_loss(net, b.x, b.y, lam, symmetric=False, chunk=5)
    assert torch.allclose(tri, full, rtol=1e-12)
    # λ = ½ is Midpoint Mixup; Eq. 2.2 at a point mass ½ equals Eq. 3.1
    half = mm.mixup_all_pairs_loss(net, b.x, b.y, torch.tensor([0.5], dtype=D))
    assert torch.allclose(half, mm.midpoint_all_pairs_loss(net, b.x, b.y), rtol=1e-12)
    # asymmetric node sets must not be folded: they differ
    lop = torch.tensor([0.2], dtype=D)
    assert not torch.allclose(mm.mixup_all_pairs_loss(net, b.x, b.y, lop, symmetric=True),
                              mm.mixup_all_pairs_loss(net, b.x, b.y, lop, symmetric=False))


@pytest.mark.parametrize("linear", [False, True])
def test_mixup_all_pairs_gradient_equals_materialised_mixup(linear):
    """The blocked pair sum's hand-written gradient (pairs.py) against autograd through the N² mixed inputs, for the
    smoothed-ReLU CNN and for a linear model (whose logits, not pre-activations, are mixed)."""
    from featlab.nn.activations import identity

    dist = small_dist()
    b = dist.sample(9, [0, 1])
    net = cnn([0, 1], 8)
    if linear:
        net = EnsembleTwoLayer(net.W.detach().clone(), net.A, None, identity)
    lam = torch.tensor([[0.2, 0.7], [0.4, 0.9]], dtype=D)  # per replica, asymmetric: every ordered pair counts
    E, N = b.y.shape
    z = lam[:, :, None, None, None, None] * b.x[:, None, :, None] + (1 - lam[:, :, None, None, None, None]) * b.x[
        :, None, None, :]  # (E, L, N, N, P, d)
    logp = patch_logits(net, z.reshape(E, -1, *b.x.shape[2:])).log_softmax(-1).reshape(E, 2, N, N, -1)
    li = logp.gather(-1, b.y[:, None, :, None, None].expand(E, 2, N, N, 1)).squeeze(-1)
    lj = logp.gather(-1, b.y[:, None, None, :, None].expand(E, 2, N, N, 1)).squeeze(-1)
    lm = lam[:, :, None, None]
    ref = -(lm * li + (1 - lm) * lj).mean(1).sum((1, 2)) / N**2
    ref.sum().backward()
    g_ref = net.W.grad.clone()
    for chunk in (1 << 14, 5):
        net.W.grad = None
        fast = mm.mixup_all_pairs_loss(net, b.x, b.y, lam, symmetric=False, chunk=chunk)
        fast.sum().backward()
        assert torch.allclose(fast, ref, rtol=1e-12) and torch.allclose(net.W.grad, g_ref, rtol=1e-10, atol=1e-14)


def test_sampled_pairs_match_the_batch_transform_loss():
    dist = small_dist()
    b = dist.sample(8, [0])
    net = cnn([0], 8)
    g = torch.Generator().manual_seed(0)
    partner = torch.randint(8, (1, 8), generator=g)
    lam = torch.rand(1, 8, generator=g, dtype=D)
    ours = mm.mixup_sampled_loss(net, b.x, b.y, partner, lam)
    xm = lam[0, :, None, None] * b.x[0] + (1 - lam[0, :, None, None]) * b.x[0, partner[0]]
    ref = mixup_cross_entropy(net(xm[None], shared=False)[0], b.y[0], b.y[0, partner[0]], lam[0])
    assert torch.allclose(ours[0], ref, rtol=1e-12)


# ------------------------------------------------------------------------------------------ one Beta / pairing core
def test_one_beta_sampler_for_the_batch_transform_and_the_replica_losses():
    gens = [torch.Generator().manual_seed(s) for s in (3, 4)]
    lam = sample_beta(2.0, 5, gens)  # per replica: row i from generator i
    assert lam.shape == (2, 5) and lam.dtype == D and ((lam > 0) & (lam < 1)).all()
    for i, s in enumerate((3, 4)):
        assert torch.equal(lam[i], sample_beta(2.0, 5, torch.Generator().manual_seed(s)))
    # the batch transform draws the same λ from the same generator (one per batch, then expanded)
    mix = Mixup(2.0, generator=torch.Generator().manual_seed(3))
    assert torch.equal(mix.sample_lam(4, D), sample_beta(2.0, 1, [torch.Generator().manual_seed(3)])[0].expand(4))
    g = torch.Generator().manual_seed(3)  # Beta(a, a) as two Gammas drawn in that order (the generator calls of
    g1 = torch._standard_gamma(torch.full((5,), 2.0, dtype=D), generator=g)  # the former per-replica sampler)
    g2 = torch._standard_gamma(torch.full((5,), 2.0, dtype=D), generator=g)
    assert torch.equal(lam[0], g1 / (g1 + g2))


@pytest.mark.parametrize("independent", [False, True])
@pytest.mark.parametrize("allow_self_pairs", [False, True])
def test_one_pairing_function(independent, allow_self_pairs):
    n = 9
    gens = [torch.Generator().manual_seed(s) for s in (0, 1, 2)]
    j = random_pairing(n, allow_self_pairs, gens, independent=independent)
    assert j.shape == (3, n) and j.min() >= 0 and j.max() < n
    for i, s in enumerate((0, 1, 2)):
        alone = random_pairing(n, allow_self_pairs, torch.Generator().manual_seed(s), independent=independent)
        assert torch.equal(j[i], alone)  # replica i sees exactly its own seed's draws
    if not allow_self_pairs:
        assert (j != torch.arange(n)).all()
    if not independent:  # the batch transform pairs by a permutation
        assert (j.sort(-1).values == torch.arange(n)).all()
    if independent and allow_self_pairs:  # the public code's partners: one uniform draw per point
        assert torch.equal(j[0], torch.randint(n, (n,), generator=torch.Generator().manual_seed(0)))


# ------------------------------------------------------------------------------------------ read-outs
def test_readouts_take_a_mask_or_zero_based_class_indices():
    logits = torch.randn(2, 7, 5, generator=torch.Generator().manual_seed(0), dtype=D)
    mask = torch.tensor([True, False, True, False, False])
    for readout in (binary_readout, logit_margin_readout):
        ref = readout(logits, mask)
        for positive in ([0, 2], torch.tensor([2, 0]), [True, False, True, False, False]):
            assert torch.equal(readout(logits, positive), ref)
    assert torch.equal(positive_mask([], 5), torch.zeros(5, dtype=torch.bool))
    for bad in ([1, 5], [-1], [0.0, 2.0], torch.tensor([[0, 2]]), torch.ones(4, dtype=torch.bool)):
        with pytest.raises(ValueError):
            logit_margin_readout(logits, bad)


class _Oracle:
    """Logits log z on one-hot inputs: softmax(g(z_ij(λ))) = λ e_{y_i} + (1 − λ) e_{y_j}, the pointwise optimum."""

    def __init__(self, k, E):
        self.W = torch.eye(k, dtype=D).expand(E, k, k).contiguous()
        self.A = torch.eye(k, dtype=D)

    def preactivation(self, x, shared=False):
        return x @ self.W.transpose(1, 2)

    @staticmethod
    def activation(z):
        return z.clamp(min=1e-300).log()


@pytest.mark.parametrize("a", [0.5, 1.0, 2.0, 8.0])
def test_mixup_infimum_closed_form(a):
    from featlab.papers.midpoint_mixup.linear import beta_nodes

    k = 5
    y = torch.randint(k, (2, 30), generator=torch.Generator().manual_seed(1))
    x = torch.nn.functional.one_hot(y, k).to(D)
    lam, w = beta_nodes(a, 64)
    J = mm.mixup_all_pairs_loss(_Oracle(k, 2), x, y, lam, w)
    closed = mm.mixup_infimum(y, a)  # share of cross pairs × (ψ(2a+1) − ψ(a+1))
    assert torch.allclose(J, closed, rtol=1e-4), (J, closed)
    assert abs(mm.beta_entropy(1.0) - 0.5) < 1e-12  # uniform: −2E[λ log λ] = 1/2


def test_midpoint_infimum_is_log2_on_cross_pairs_and_lemma32():
    from featlab.papers.midpoint_mixup.linear import diagonal_weights, linear_model

    k = 6
    b = LinearMultiView(k).sample(120, [0])
    inf = float(mm.mixup_infimum(b.y, math.inf))
    assert abs(inf - float(mm.cross_class_fraction(b.y)) * math.log(2)) < 1e-15
    y = torch.arange(k)[None]  # one point per class: every off-diagonal pair is cross-class
    assert abs(float(mm.mixup_infimum(y, math.inf)) - (1 - 1 / k) * math.log(2)) < 1e-15
    C = torch.tensor([50.0, 50.0], dtype=D)
    eq = linear_model(diagonal_weights(C, C, k), k)
    un = linear_model(diagonal_weights(C * 1.2, C * 0.8, k), k)
    x, yy = b.x.expand(2, -1, -1), b.y.expand(2, -1)
    with torch.no_grad():
        assert float(mm.midpoint_all_pairs_loss(eq, x, yy)[0]) - inf < 1e-8  # Lemma 3.2: reaches the infimum
        assert float(mm.midpoint_all_pairs_loss(un, x, yy)[0]) - inf > 0.1  # unequal correlations do not


# ------------------------------------------------------------------------------------------ reduced = full
@pytest.mark.parametrize("method", ["erm", "midpoint"])
def test_reduced_simulation_equals_full(method):
    k, m, d, seeds = 3, 2, 48, [0, 1]
    dist = small_dist(k=k, P=5, C_P=1, Q=1)
    b = dist.sample(10, seeds)
    V = orthonormal_features(seeds, k, d)
    full = cnn(seeds, d, k, m, sigma=0.3)
    red = EnsembleTwoLayer((full.W.detach() @ V.transpose(1, 2)).clone(), block_readout(k, m, 1.0), None,
                           full.activation)
    xc, mult = compress_patches(b.x)
    xf = embed(b.x, V)
    lossf = {"erm": lambda net, x, mu: mm.erm_loss(net, x, b.y, mu),
             "midpoint": lambda net, x, mu: mm.midpoint_all_pairs_loss(net, x, b.y, mu)}[method]
    for _ in range(40):
        for net, x, mu in ((full, xf, None), (red, xc, mult)):
            net.W.grad = None
            lossf(net, x, mu).sum().backward()
            with torch.no_grad():
                net.W -= 2.0 * net.W.grad
    lf = patch_logits(full, xf)
    lr = patch_logits(red, xc, mult)
    assert lf.abs().max() > 1e-3  # something was learned
    assert torch.allclose(lf, lr, rtol=1e-9, atol=1e-12)
    assert torch.allclose(full.W.detach() @ V.transpose(1, 2), red.W.detach(), atol=1e-10)


# ------------------------------------------------------------------------------------------ Def 4.5 probe
def test_feature_test_and_correlation_stats_on_a_planted_model():
    k, m = 4, 2
    dist = small_dist(k=k, P=6, C_P=1, delta3=0.001, delta4=0.001)
    te = dist.sample_balanced(20, [0])
    W = torch.zeros(1, k * m, 2 * k, dtype=D)
    for y in range(k):
        W[0, y * m, 2 * y] = 5.0  # every class learned v_{y,1}
        if y < 2:
            W[0, y * m + 1, 2 * y + 1] = 5.0  # classes 1, 2 also learned v_{y,2}
    net = EnsembleTwoLayer(W, block_readout(k, m, 1.0), None, SmoothedReLU(4.0, 0.1))
    learned, acc = feature_test(net, dist, te, 0.9)
    expect = torch.tensor([[True, True], [True, True], [True, False], [True, False]])
    assert torch.equal(learned[0], expect), acc
    assert learned_counts(learned).tolist() == [[0, 2, 2]]
    st = correlation_stats(correlations(W, k))
    assert torch.allclose(st["Lambda"][0], torch.where(expect, 5.0, 0.0).to(D))
    assert torch.allclose(st["gap"][0], torch.tensor([0, 0, 5.0, 5.0], dtype=D))
    b = dist.sample(30, [0])
    assert float(train_accuracy(net, b.x, b.y)) == 1.0


# ------------------------------------------------------------------------------------------ issue 20: MM pieces
def test_prop44_lp_finds_a_separator_exactly_when_one_exists():
    # Prop 4.4 (App. C.3): the construction is not linearly learnable, the quick preset's data are
    import numpy as np

    from featlab.papers.midpoint_mixup.prop44 import data_margin, lp_margin, prop44_margins

    assert max(prop44_margins(4, 100, [0, 1])) <= 1e-6
    quick = small_dist(k=6, P=12, C_P=1, delta3=0.002, delta4=0.002)
    b = quick.sample(60, [0])
    assert data_margin(b.x, b.y, 6) == [pytest.approx(1.0)]  # W = ±1 on the class features: margin 1
    z = np.array([[1.0, 0, 0, 0], [0, 0, 1.0, 0], [2.0, 0, 0, 0]])  # planted: 2 classes, separable
    assert lp_margin(z, np.array([0, 1, 0]), 2) > 0
    assert lp_margin(np.vstack([z, z[:1]]), np.array([0, 1, 0, 1]), 2) <= 1e-9  # the same point in both classes


def test_lambda_endpoints_is_erm_through_the_all_pairs_code():
    # the mechanism control of Midpoint/Mixup: λ ∈ {0, 1} makes every mixed point one of its pair (J_M = J over
    # all pairs; with one sampled partner it is an unbiased estimate of J, not tested here)
    from featlab.papers.midpoint_mixup.multiview import MultiViewConfig, _data, make_loss, patch_cnn

    for pairs in ("all",):
        cfg = MultiViewConfig(k=4, d=400, N=10, P=5, m=2, seeds=2, mix_lam="endpoints", pairs=pairs, rho=0.2)
        dist, tr, te = _data(cfg, cfg.seed_list())
        x, mult = compress_patches(tr.x)
        net = patch_cnn(cfg, cfg.seed_list(), D, 2 * cfg.k)
        with torch.no_grad():
            net.W.mul_(300.0)  # away from the init: the losses differ from log k
        erm = mm.erm_loss(net, x, tr.y, mult)
        for method in ("midpoint", "mixup"):
            got = make_loss(method, cfg, net, x, tr.y, mult, cfg.seed_list())(0)
            assert torch.allclose(got, erm, rtol=1e-10), (pairs, method)


def test_label_noise_flips_exactly_its_share_to_other_classes():
    from featlab.papers.midpoint_mixup.multiview import MultiViewConfig, _data

    kw = dict(k=5, d=400, N=40, P=5, m=2, seeds=2)
    _, clean, _ = _data(MultiViewConfig(**kw), [0, 1])
    _, noisy, te = _data(MultiViewConfig(**kw, label_noise=0.1), [0, 1])
    assert torch.equal(clean.x, noisy.x)
    assert (clean.y != noisy.y).sum(-1).tolist() == [4, 4]
    _, _, te_clean = _data(MultiViewConfig(**kw), [0, 1])
    assert torch.equal(te.y, te_clean.y)  # the test set stays clean
