"""The random-features rival of rfa-theorem1 (issue 46): W frozen at its init, the second layer trained."""

import torch

import featlab
from featlab.papers.feature_amplification.common import make_dist, make_net
from featlab.papers.feature_amplification.random_features import second_layer_gd, smoothness_step
from featlab.papers.feature_amplification.theorem1 import Theorem1Config
from featlab.utils import Replicas


def test_random_features_moves_the_second_layer_only():
    cfg = Theorem1Config(seeds=2, d=20, n=40, m=16, etas=[0.1], n_sweep=[], dtype="float64")
    reps = Replicas.grid(cfg.etas, [0, 1], label=lambda e: "")
    dev = torch.device("cpu")
    dist = make_dist(cfg, reps, reps.values, torch.float64, dev)
    tr = dist.sample(cfg.n, reps, "train")
    net = make_net(cfg, reps, torch.float64, dev)
    W0, A0 = net.W.detach().clone(), net.A.detach().clone()
    res = second_layer_gd(net, tr, 50, reps)
    assert res.status == "complete"
    assert torch.equal(net.W.detach(), W0)  # the first layer did not move: bitwise its init
    a = net.A.squeeze(-1)
    assert a.shape == (2, cfg.m) and not torch.allclose(a, A0[:, 0].expand_as(a))  # the second layer did
    assert torch.isfinite(a).all() and (net(tr.x).shape == tr.y.shape)


def test_smoothness_step_is_4n_over_the_top_singular_value_squared():
    phi = torch.randn(3, 10, 4, dtype=torch.float64)
    top = torch.stack([torch.linalg.svdvals(p)[0] for p in phi])
    assert torch.allclose(smoothness_step(phi), 40 / top**2)


def test_the_rival_is_declared_and_changes_the_trained_layer_only():
    c = next(c for c in featlab.get_experiment("rfa-theorem1").controls if c.name == "random-features")
    assert c.kind == "mechanism" and c.overrides["train_layer"] == "second"
    assert set(c.overrides) <= {"train_layer", "steps", "etas", "seeds"}  # one mechanism, plus its budget and scope
