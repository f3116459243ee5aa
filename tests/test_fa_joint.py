"""One data read for both FA nets: ``joint_preactivation`` and ``fit_both`` against the nets one at a time."""

import pytest
import torch

from featlab.nn.twolayer import EnsembleTwoLayer, block_readout, joint_preactivation, signed_readout
from featlab.papers.feature_averaging.common import FASyntheticConfig, fit_binary, fit_both, fit_kclass, make_data


@pytest.mark.parametrize("shared", [True, False])
def test_joint_preactivation_equals_each_net(shared):
    """Values and the gradients of W and b as each net's own preactivation, shared or per-replica inputs."""
    g = torch.Generator().manual_seed(0)
    a = EnsembleTwoLayer.init([0, 1], 7, signed_readout(2, 2, 0.5), sigma_w=0.3, sigma_b=0.2, dtype=torch.float64)
    b = EnsembleTwoLayer.init([0, 1], 7, block_readout(3, 2, 0.5), sigma_w=0.3, dtype=torch.float64)
    x = torch.randn(*(() if shared else (2,)), 11, 7, generator=g, dtype=torch.float64)
    za, zb = joint_preactivation([a, b], x)
    (za.square().sum() + zb.sin().sum()).backward()
    got = [a.W.grad.clone(), a.b.grad.clone(), b.W.grad.clone()]
    for net in (a, b):
        net.zero_grad()
    ra, rb = a.preactivation(x), b.preactivation(x)
    (ra.square().sum() + rb.sin().sum()).backward()
    torch.testing.assert_close((za, zb), (ra, rb), rtol=1e-12, atol=0)
    torch.testing.assert_close(got, [a.W.grad, a.b.grad, b.W.grad], rtol=1e-12, atol=1e-15)


def test_fit_both_equals_fitting_one_at_a_time():
    """The same weights and the same records (names, steps, values) as fit_binary then fit_kclass."""
    cfg = FASyntheticConfig(seeds=2, k=4, d=40, m=2, h=2, n=50, T=30, probe_every=10, eta=0.5, dtype="float64")
    seeds = cfg.seed_list()
    dist, tr, _ = make_data(cfg, seeds, torch.float64, None)
    bnet, bres, knet, kres = fit_both(cfg, seeds, dist, tr)
    bnet1, bres1 = fit_binary(cfg, seeds, dist, tr)
    knet1, kres1 = fit_kclass(cfg, seeds, dist, tr)
    torch.testing.assert_close((bnet.W, bnet.b, knet.W), (bnet1.W, bnet1.b, knet1.W), rtol=1e-9, atol=1e-12)
    for joint, alone in ((bres, bres1), (kres, kres1)):
        f, f1 = joint.frame(), alone.frame()
        assert list(zip(f.seed, f.step, f.metric)) == list(zip(f1.seed, f1.step, f1.metric))
        assert (f.value - f1.value).abs().max() <= 1e-9
    assert {m.split(".")[0] for m in bres.frame().metric} == {"binary"}
