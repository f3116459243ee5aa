"""Subspace PGD (probes/subspace.py) is dense PGD run in the span of the first-layer weights: the same iterates, the
same masks, a random start uniform in the ball, successes confirmed on the dense score, replica = solo."""

import torch

from featlab.nn.twolayer import EnsembleTwoLayer, signed_readout
from featlab.probes.robustness import direction_masks, robust_masks
from featlab.probes.subspace import (
    LinearHead,
    random_start,
    subspace,
    subspace_direction_masks,
    subspace_masks,
    subspace_pgd,
)
from featlab.utils import generator

D = torch.float64


def _net(E=3, d=60, M=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return EnsembleTwoLayer(torch.randn(E, M, d, generator=g, dtype=D) / d**0.5, signed_readout(M // 2, M // 2, 0.5),
                            torch.randn(E, M, generator=g, dtype=D) * 0.1)


def _data(net, n=120, seed=1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(net.E, n, net.W.shape[-1], generator=g, dtype=D)
    return x, torch.where(net(x) > 0, 1.0, -1.0)


def _dense_pgd(net, x, y, eps, steps, delta):
    """Plain dense PGD from a given start: the reference the subspace iterates must reproduce."""
    fooled = torch.zeros(y.shape, dtype=torch.bool)
    for t in range(steps + 1):
        delta = delta.detach().requires_grad_(True)
        s = net(x + delta)
        fooled |= torch.where(s > 0, 1.0, -1.0) != y
        if t == steps:
            return fooled, delta.detach()
        (g,) = torch.autograd.grad((y * s).sum(), delta)
        with torch.no_grad():
            delta = delta - 2.5 * eps / steps * g / g.norm(dim=-1, keepdim=True)
            delta = delta * torch.clamp(eps / delta.norm(dim=-1, keepdim=True), max=1.0)


def test_subspace_iterates_equal_dense_pgd_from_the_same_start():
    net = _net()
    x, y = _data(net)
    eps, steps = 1.5, 15
    xi = torch.randn(x.shape, generator=torch.Generator().manual_seed(2), dtype=D)
    d0 = xi / xi.norm(dim=-1, keepdim=True) * 0.7 * eps
    fd, _ = _dense_pgd(net, x, y, eps, steps, d0)
    sub = subspace(LinearHead(net.W, net.b, net.head), x)
    c0 = torch.einsum("end,edk->enk", d0, sub.Q)
    s0 = (d0 - torch.einsum("enk,edk->end", c0, sub.Q)).norm(dim=-1)
    fs, _ = subspace_pgd(sub, y, eps, steps=steps, step_size=2.5 * eps / steps, head=net.head, c0=c0, s0=s0)
    assert 0.1 < fd.double().mean() < 0.9  # a radius where the attack succeeds on some points, not all
    assert torch.equal(fd, fs)


def test_masks_equal_dense_masks_without_random_start_and_successes_are_real():
    net = _net()
    x, y = _data(net)
    radii = [0.0, 0.5, 1.0, 2.0, 4.0]
    dense = robust_masks(lambda z: net(z), x, y, radii, steps=20, random_start=False)
    gens = [generator(s, "t") for s in range(net.E)]
    sub = subspace_masks(lambda z: net(z), LinearHead(net.W, net.b, net.head), x, y, radii, steps=20,
                         random_start_=False, generators=gens)
    assert torch.equal(dense, sub)
    assert sub[0].all() and not sub[-1].all()  # clean points all correct, the largest radius breaks some
    # a head that lies (claims every point is misclassified) cannot invent a success: the dense score confirms
    liar = LinearHead(net.W, net.b, lambda z: -net.head(z))
    assert subspace_masks(lambda z: net(z), liar, x, y, radii, steps=5, random_start_=False, generators=gens).all()


def test_random_start_is_uniform_in_the_ball():
    d, K, n, eps = 50, 6, 20000, 2.0
    c, s = random_start(n, d, K, eps, [generator(0, "rs")], D, "cpu")
    r = (c.pow(2).sum(-1) + s * s).sqrt()[0]
    assert (r <= eps + 1e-12).all()
    assert abs(float((r / eps).pow(d).mean()) - 0.5) < 0.02  # (r/eps)^d ~ U(0, 1)
    frac = c.pow(2).sum(-1)[0] / r**2  # share of ‖ξ‖² in a K-dim subspace: Beta(K/2, (d−K)/2), mean K/d
    assert abs(float(frac.mean()) - K / d) < 0.005


def test_replica_alone_equals_replica_in_a_batch():
    net = _net(E=3)
    x, y = _data(net)
    radii = [0.5, 1.0, 2.0]
    gens = lambda ids: [generator(s, "solo") for s in ids]
    both = subspace_masks(lambda z: net(z), LinearHead(net.W, net.b, net.head), x, y, radii, steps=10,
                          generators=gens([0, 1, 2]))
    one = net.replica(1)
    alone = subspace_masks(lambda z: one(z), LinearHead(one.W, one.b, one.head), x[1:2], y[1:2], radii, steps=10,
                           generators=gens([1]))
    assert torch.equal(both[:, 1:2], alone)


def test_direction_masks_equal_dense_direction_masks():
    net = _net()
    x, y = _data(net)
    u = torch.randn(net.E, 1, x.shape[-1], dtype=D, generator=torch.Generator().manual_seed(5))
    u_pt = torch.randn(x.shape, dtype=D, generator=torch.Generator().manual_seed(6))
    table = torch.randn(net.E, 4, x.shape[-1], dtype=D, generator=torch.Generator().manual_seed(7))
    table = table / table.norm(dim=-1, keepdim=True)
    idx = torch.randint(4, y.shape, generator=torch.Generator().manual_seed(8))  # e.g. each point's cluster
    rows = torch.gather(table, 1, idx[..., None].expand(-1, -1, x.shape[-1]))
    units = [u / u.norm(dim=-1, keepdim=True), -u_pt / u_pt.norm(dim=-1, keepdim=True)]
    radii = [0.0, 1.0, 3.0, 6.0]
    dense = direction_masks(lambda z: net(z), x, y, radii, lambda: iter(units + [rows]))
    sub = subspace_direction_masks(lambda z: net(z), LinearHead(net.W, net.b, net.head), x, y, radii,
                                   lambda: iter(units + [(table, idx)]))  # the table form: rows by index
    assert torch.equal(dense, sub) and not sub[-1].all()
