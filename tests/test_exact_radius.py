"""Exact minimum-norm adversarial distances (probes/exact.py) and certified lower bounds (probes/certify.py): against
an independent enumeration of every activation region (one least-distance QP each, scipy's NNLS), a dense grid, the
attacks (exact ≤ any attack), lower ≤ exact, device-following, replica = solo."""

import numpy as np
import pytest
import torch
from scipy.optimize import nnls

from featlab.devicecheck import RUN, SimulatedDevice
from featlab.nn.twolayer import EnsembleTwoLayer, block_readout, logit_margin_readout, sign_prediction, signed_readout
from featlab.probes.certify import attack_distance, certified_lower_bound, robust_interval
from featlab.probes.exact import exact_min_distance
from featlab.probes.robustness import robust_masks

pytestmark = pytest.mark.usefixtures("one_thread")
D = torch.float64


def _net(E, M, d, seed, a=None, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(E, M, d, generator=g, dtype=D)
    b = torch.randn(E, M, generator=g, dtype=D) * scale
    a = torch.randn(M, generator=g, dtype=D) if a is None else a
    x = torch.randn(E, 40, d, generator=g, dtype=D) * 1.5
    y = torch.where(torch.rand(E, 40, generator=g, dtype=D) < 0.5, 1.0, -1.0)
    return W, b, a, x, y


def _ldp(Gm, h):
    """min ‖δ‖ s.t. Gm δ ≥ h (Lawson & Hanson's least-distance programming through NNLS): δ or None if infeasible."""
    Em = np.vstack([Gm.T, h[None]])
    f = np.zeros(Em.shape[0])
    f[-1] = 1.0
    u, _ = nnls(Em, f, maxiter=5000)
    r = Em @ u - f
    if np.linalg.norm(r) < 1e-9 or abs(r[-1]) < 1e-12:
        return None
    d = -r[:-1] / r[-1]
    return d if (Gm @ d - h).min() >= -1e-10 * (1 + np.abs(h).max()) else None  # a feasible point, or none


def _by_regions(W, b, a, x, y, theta):
    """The reference: every one of the 2^M activation regions, one least-distance QP each (independent of exact.py)."""
    M = len(a)
    z0 = W @ x + b
    f0 = (a * np.maximum(z0, 0)).sum()
    if (y > 0 and f0 <= 0) or (y < 0 and f0 > 0):
        return 0.0
    best = np.inf
    for S in range(1 << M):
        on = np.array([(S >> r) & 1 for r in range(M)], bool)
        sg = np.where(on, 1.0, -1.0)
        gm = np.vstack([sg[:, None] * W, -y * (a * on) @ W])  # region: ±z_r ≥ 0; target: y·g ≤ −θ_y
        hm = np.concatenate([-sg * z0, [y * ((a * on) @ z0) + (theta if y < 0 else 0.0)]])
        d = _ldp(gm, hm)
        if d is not None:
            best = min(best, np.linalg.norm(d))
    return best


def test_exact_equals_an_independent_enumeration_of_every_region():
    for seed, (M, d) in enumerate([(4, 3), (5, 2), (4, 6)]):
        W, b, a, x, y = _net(2, M, d, seed)
        r = exact_min_distance(W, b, a, x[:, :15], y[:, :15])
        assert r.verified[torch.isfinite(r.dist)].all()
        for e in range(2):
            for i in range(15):
                z0 = W[e] @ x[e, i] + b[e]
                theta = 1e-8 * float((a.abs() * (z0.abs() + W[e].norm(dim=1))).sum())
                ref = _by_regions(W[e].numpy(), b[e].numpy(), a.numpy(), x[e, i].numpy(), float(y[e, i]), theta)
                assert float(r.dist[e, i]) == pytest.approx(ref, rel=1e-6, abs=1e-9), (seed, e, i)


def test_exact_against_a_dense_grid_with_the_tie_rule():
    W, b, a, x, y = _net(1, 4, 2, 7, a=torch.tensor([1.0, 1.0, -1.0, -1.0], dtype=D))
    x, y = x[:, :12], y[:, :12]
    r = exact_min_distance(W, b, a, x, y)
    ang = torch.linspace(0, 2 * torch.pi, 361, dtype=D)[:-1]
    rad = torch.linspace(0, 6, 601, dtype=D)
    u = torch.stack([ang.cos(), ang.sin()], -1)
    for i in range(12):
        z = (x[0, i] + rad[:, None, None] * u[None]) @ W[0].T + b[0]
        mis = sign_prediction((a * z.clamp_min(0)).sum(-1)) != y[0, i]  # featlab's own sign rule: sgn 0 = −1
        grid = rad[:, None].expand_as(mis)[mis].min() if mis.any() else torch.tensor(float("inf"), dtype=D)
        assert r.dist[0, i] <= grid + 1e-12  # the grid's points are real: exact is never above them ...
        assert grid <= r.dist[0, i] + 6 / 600 + 6 * torch.pi / 180 + 1e-9  # ... and the grid comes within a cell


def test_ties_and_flat_regions():
    W = torch.tensor([[[1.0, 0.0]]], dtype=D)
    b = torch.tensor([[-1.0]], dtype=D)
    x = torch.zeros(1, 2, 2, dtype=D)  # f = ReLU(x1 − 1) = 0 at x: sgn 0 = −1
    y = torch.tensor([[-1.0, 1.0]], dtype=D)
    r = exact_min_distance(W, b, torch.tensor([1.0], dtype=D), x, y)
    assert r.dist[0, 1] == 0  # y = +1 at f = 0: already misclassified
    assert float(r.dist[0, 0]) == pytest.approx(1.0, rel=1e-6)  # y = −1: f ≡ 0 nearby does not count, f > 0 does
    f_adv = (torch.bmm(x + r.delta(W), W.transpose(1, 2)) + b[:, None]).clamp_min(0)[0, 0, 0]
    assert f_adv > 0  # the returned minimiser of the y = −1 point is misclassified strictly
    never = exact_min_distance(W, b, torch.tensor([-1.0], dtype=D), x[:, :1], y[:, :1])
    assert torch.isinf(never.dist).all()  # f ≤ 0 everywhere: a y = −1 point can never be misclassified


def test_exact_is_never_above_an_attack_and_lower_bound_never_above_exact():
    m, d = 3, 40
    net = EnsembleTwoLayer.init([0, 1], d, signed_readout(m, m, 1 / m), sigma_w=1 / d**0.5, sigma_b=0.3, dtype=D)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 60, d, generator=g, dtype=D)
    y = sign_prediction(net(x).detach())
    y[:, ::3] *= -1  # some misclassified points: distance 0
    a = net.A[:, 0]
    r = exact_min_distance(net.W, net.b, a, x, y)
    assert r.verified.all() and (r.dist[:, ::3] == 0).all() and (r.dist[:, 1::3] > 0).all()
    radii = [0.25 * i for i in range(1, 25)]
    masks = robust_masks(lambda z: net(z), x, y, radii, steps=20, generator=torch.Generator().manual_seed(4))
    att = attack_distance(radii, masks)
    assert torch.isfinite(att).any() and (r.dist <= att + 1e-9).all()
    dense = sign_prediction(net(x + r.delta(net.W) * (1 + 1e-6)).detach()) != y  # the minimisers are adversarial
    assert dense[torch.isfinite(r.dist)].float().mean() > 0.95 and r.verified.all()
    lo = certified_lower_bound(net.W, net.b, a, x, y)
    assert (lo <= r.dist * (1 + 1e-9) + 1e-12).all() and (lo[:, 1::3] > 0).all()
    iv = robust_interval(radii, lo, r.dist)
    assert (iv.certified <= iv.attacked).all() and (iv.critical[:, 0] <= iv.critical[:, 1]).all()


def test_kclass_lower_bound_is_below_a_grid_and_an_attack():
    k, h, d = 4, 2, 2
    g = torch.Generator().manual_seed(5)
    W = torch.randn(1, k * h, d, generator=g, dtype=D)
    net = EnsembleTwoLayer(W, block_readout(k, h, 1 / h))
    pos = torch.tensor([True, True, False, False])
    x = torch.randn(1, 30, d, generator=g, dtype=D) * 2
    score = lambda z: logit_margin_readout(net(z), pos)
    y = sign_prediction(score(x).detach())
    lo = certified_lower_bound(net.W, None, net.A, x, y, positive=pos)
    ang = torch.linspace(0, 2 * torch.pi, 181, dtype=D)[:-1]
    rad = torch.linspace(0, 8, 401, dtype=D)
    u = torch.stack([ang.cos(), ang.sin()], -1)
    for i in range(30):
        pts = x[0, i] + rad[:, None, None] * u[None]
        mis = sign_prediction(score(pts.reshape(1, -1, d)).detach().reshape(pts.shape[:2])) != y[0, i]
        if mis.any():
            assert lo[0, i] <= rad[:, None].expand_as(mis)[mis].min() + 1e-12
    assert (lo > 0).float().mean() > 0.8  # and it is not vacuous


def test_replica_in_a_batch_equals_replica_alone():
    W, b, a, x, y = _net(3, 5, 6, 11)
    both = exact_min_distance(W, b, a, x, y)
    lo = certified_lower_bound(W, b, a, x, y)
    for e in range(3):
        one = exact_min_distance(W[e:e + 1], b[e:e + 1], a, x[e:e + 1], y[e:e + 1])
        assert torch.allclose(one.dist, both.dist[e:e + 1]) and torch.allclose(one.lam, both.lam[e:e + 1])
        assert torch.allclose(certified_lower_bound(W[e:e + 1], b[e:e + 1], a, x[e:e + 1], y[e:e + 1]), lo[e:e + 1])


def test_float32_inputs_give_the_float64_answer():
    W, b, a, x, y = _net(1, 5, 7, 19)
    r64 = exact_min_distance(W, b, a, x, y)
    r32 = exact_min_distance(W.float(), b.float(), a.float(), x.float(), y.float())
    assert r32.dist.dtype == torch.float32 and r32.verified.all()
    assert torch.allclose(r32.dist.double(), r64.dist, rtol=1e-5, atol=1e-6)


def test_an_upper_bound_below_the_truth_costs_a_pass_not_the_answer():
    W, b, a, x, y = _net(1, 5, 4, 13)
    r = exact_min_distance(W, b, a, x, y)
    bad = exact_min_distance(W, b, a, x, y, upper=r.dist * 0.5)
    good = exact_min_distance(W, b, a, x, y, upper=r.dist * 1.01)
    assert torch.allclose(bad.dist, r.dist) and torch.allclose(good.dist, r.dist)


def test_every_tensor_follows_the_input_device():
    pos = torch.tensor([True, False])
    with SimulatedDevice() as dev:  # every input on the simulated run device; a host tensor beside them is reported
        W, b, a, x, y = (t.to(RUN) for t in _net(2, 4, 3, 17))
        r = exact_min_distance(W, b, a, x, y, max_unstable=3)
        lo = certified_lower_bound(W, b, a, x, y)
        certified_lower_bound(W, None, block_readout(2, 2, 0.5), x, y, positive=pos)
        robust_interval([0.0, 0.5, 1.0], lo, r.dist)
        attack_distance([0.0, 1.0], torch.ones(2, 2, 40, dtype=torch.bool, device=RUN))
    assert dev.problems == []
    unresolved = torch.isnan(r.dist)  # beyond max_unstable: said so, with the best adversarial point found
    assert unresolved.any() and torch.isfinite(r.upper[unresolved]).all() and r.verified[unresolved].all()
    full = exact_min_distance(W, b, a, x, y)
    assert (full.dist[unresolved] <= r.upper[unresolved] + 1e-12).all()


def test_robust_interval_and_attack_distance():
    lower = torch.tensor([[0.0, 1.0, 2.0, 3.0]], dtype=D)
    upper = torch.tensor([[0.0, 1.5, 2.0, float("inf")]], dtype=D)
    iv = robust_interval([0.0, 1.0, 2.0], lower, upper)
    assert iv.certified[:, 0].tolist() == [0.75, 0.5, 0.25] and iv.attacked[:, 0].tolist() == [0.75, 0.75, 0.25]
    iv = robust_interval([0.0, 1.2, 2.5], lower, upper)
    assert iv.certified[:, 0].tolist() == [0.75, 0.5, 0.25] and iv.attacked[:, 0].tolist() == [0.75, 0.75, 0.25]
    assert iv.critical[0, 0] <= iv.critical[0, 1]
    masks = torch.tensor([[[True, False]], [[False, False]]])  # (R=2, E=1, n=2) at radii 0 and 1
    assert attack_distance([0.0, 1.0], masks).tolist() == [[1.0, 0.0]]


def test_the_returned_point_is_misclassified_strictly():
    """On small random nets (where rounding at the boundary is common), every verified point is misclassified by a
    plain dense forward pass with featlab's sign rule, its norm (``upper``) brackets the distance from above by at
    most a relative 1e-5, and every finite distance is verified."""
    checked = 0
    for seed, (M, d) in enumerate([(4, 3), (5, 2), (4, 6), (6, 4), (3, 8)]):
        W, b, a, x, y = _net(3, M, d, 100 + seed)
        r = exact_min_distance(W, b, a, x, y)
        fin = torch.isfinite(r.dist)
        assert r.verified[fin].all()
        f = (a * (torch.bmm(x + r.delta(W), W.transpose(1, 2)) + b[:, None]).clamp_min(0)).sum(-1)
        assert (sign_prediction(f) != y)[fin].all()
        assert (r.upper[fin] >= r.dist[fin] * (1 - 1e-9)).all()
        assert (r.upper[fin] <= r.dist[fin] * (1 + 1e-5) + 1e-12).all()
        checked += int(fin.sum())
    assert checked > 400
