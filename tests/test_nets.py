import torch

from featlab.nn.twolayer import (
    EnsembleTwoLayer,
    binary_readout,
    block_readout,
    logit_margin_readout,
    relu,
    signed_readout,
)
from featlab.papers.feature_averaging.common import FASyntheticConfig, fit_binary, fit_kclass, make_data
from featlab.papers.feature_averaging.data import MultiClusterDistribution
from featlab.train.objectives import cross_entropy, logistic


def small_cfg(**kw):
    base = dict(k=6, d=64, m=3, n=120, n_test=50, T=15, eta=0.05, sigma_w=1e-3, sigma_b=1e-3, seeds=3,
                probe_every=5)
    base.update(kw)
    return FASyntheticConfig(**base)


def test_relu_derivative_at_zero_is_one():
    z = torch.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    relu(z).sum().backward()
    assert z.grad.tolist() == [0.0, 1.0, 1.0]


def test_binary_gradient_matches_appendix_b_formula():
    """w_{s,r} update = −(sη/(nm)) Σ_i ℓ'_i 1(<w,x_i>+b ≥ 0) x_i with ℓ'_i = −y_i/(1+exp(y_i f(x_i)))."""
    torch.manual_seed(0)
    E, n, d, m = 2, 30, 8, 3
    x, y = torch.randn(E, n, d, dtype=torch.float64), torch.randint(0, 2, (E, n)).double() * 2 - 1
    net = EnsembleTwoLayer(torch.randn(E, 2 * m, d, dtype=torch.float64), signed_readout(m, m, 1 / m),
                           torch.randn(E, 2 * m, dtype=torch.float64))
    logistic(net(x), y).sum().backward()
    with torch.no_grad():
        f = net(x)
        lp = -y / (1 + torch.exp(y * f))  # (E, n)
        act = (net.preactivation(x) >= 0).double()  # (E, n, 2m)
        s = torch.cat([torch.ones(m), -torch.ones(m)]).double()
        gW = torch.einsum("en,enM,end->eMd", lp, act, x) * s[None, :, None] / (n * m)
        gb = torch.einsum("en,enM->eM", lp, act) * s[None, :] / (n * m)
    assert torch.allclose(net.W.grad, gW) and torch.allclose(net.b.grad, gb)


def test_shared_inputs_equal_per_replica_inputs():
    torch.manual_seed(1)
    net = EnsembleTwoLayer(torch.randn(4, 6, 10), block_readout(3, 2, 0.5), None)
    x = torch.randn(7, 10)
    assert torch.allclose(net(x), net(x.expand(4, 7, 10)), atol=1e-6)


def test_binary_readout_sign_equals_logit_margin_sign():
    logits = torch.randn(1000, 6) * 5
    pos = torch.tensor([True, True, False, True, False, False])
    F, G = binary_readout(logits, pos), logit_margin_readout(logits, pos)
    assert torch.equal(F > 0, G > 0)


def _train_both(cfg, seeds):
    dist, tr, _ = make_data(cfg, seeds, torch.float64)
    b, _ = fit_binary(cfg, seeds, dist, tr)
    k, _ = fit_kclass(cfg, seeds, dist, tr)
    return b, k


def test_replica_equals_training_that_seed_alone():
    cfg = small_cfg(dtype="float64")
    b_all, k_all = _train_both(cfg, cfg.seed_list())
    for i, s in enumerate(cfg.seed_list()):
        b_one, k_one = _train_both(cfg, [s])
        assert torch.allclose(b_all.W[i], b_one.W[0], rtol=1e-9, atol=1e-12)
        assert torch.allclose(b_all.b[i], b_one.b[0], rtol=1e-9, atol=1e-12)
        assert torch.allclose(k_all.W[i], k_one.W[0], rtol=1e-9, atol=1e-12)


def test_distribution_def_3_1():
    dist = MultiClusterDistribution.create([0, 1], k=5, d=40, positive=[0, 1], alpha=2.0, sigma=0.5,
                                           dtype=torch.float64)
    assert dist.positive.tolist() == [True, True, False, False, False]  # `positive` holds 0-based cluster indices
    gram = dist.mu @ dist.mu.transpose(1, 2)
    assert torch.allclose(gram, 40 * torch.eye(5, dtype=torch.float64).expand(2, 5, 5), atol=1e-9)
    b = dist.sample(4000, [0, 1])
    assert torch.equal(b.y, dist.signs[b.cluster])
    noise = b.x - 2.0 * torch.stack([dist.mu[e, b.cluster[e]] for e in range(2)])
    assert abs(noise.std().item() - 0.5) < 0.01
    assert not torch.equal(dist.mu[0], dist.mu[1])  # every seed has its own centres


def test_near_orthogonal_centres_have_the_requested_cosine():
    dist = MultiClusterDistribution.create([3], k=4, d=30, positive=[0], pairwise_cos=0.09, dtype=torch.float64)
    mu = dist.mu[0]
    cos = (mu @ mu.T) / 30
    assert torch.allclose(cos, torch.full((4, 4), 0.09, dtype=torch.float64).fill_diagonal_(1.0), atol=1e-9)


def test_unequal_norms():
    dist = MultiClusterDistribution.create([0], k=3, d=20, positive=[0], norm_scales=[1.0, 2.0, 0.5],
                                           dtype=torch.float64)
    assert torch.allclose(dist.mu[0].norm(dim=-1), torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64) * 20**0.5)


def test_gradient_of_cross_entropy_block_net_matches_formula():
    """w_{j,r} update = −(η/(nh)) Σ_i (p_j(x_i) − 1(c_i = j)) 1(<w,x_i> ≥ 0) x_i (FA §3.2)."""
    torch.manual_seed(2)
    E, n, d, k, h = 2, 25, 7, 3, 2
    x, c = torch.randn(E, n, d, dtype=torch.float64), torch.randint(0, k, (E, n))
    net = EnsembleTwoLayer(torch.randn(E, k * h, d, dtype=torch.float64), block_readout(k, h, 1 / h), None)
    cross_entropy(net(x), c).sum().backward()
    with torch.no_grad():
        p = net(x).softmax(-1)
        lp = p - torch.nn.functional.one_hot(c, k).double()  # (E, n, k)
        lp_neuron = lp.repeat_interleave(h, dim=-1)  # (E, n, k·h)
        act = (net.preactivation(x) >= 0).double()
        g = torch.einsum("enM,end->eMd", lp_neuron * act, x) / (n * h)
    assert torch.allclose(net.W.grad, g)


def test_shared_data_replicas_differ_only_in_init():
    cfg = small_cfg(shared_data=True, dtype="float64")
    dist, tr, _ = make_data(cfg, cfg.seed_list(), torch.float64)
    assert tr.x.shape[0] == 3 and torch.equal(tr.x[0], tr.x[2])
    b_all, _ = fit_binary(cfg, cfg.seed_list(), dist, tr)
    solo_cfg = small_cfg(shared_data=False, dtype="float64")
    d1, t1, _ = make_data(solo_cfg, [0], torch.float64)  # seed 0's own data = the shared data
    assert torch.equal(t1.x[0], tr.x[0])
    b0, _ = fit_binary(solo_cfg, [0], d1, t1)
    assert torch.allclose(b_all.W[0], b0.W[0], rtol=1e-9, atol=1e-12)
    assert not torch.allclose(b_all.W[1], b0.W[0])

