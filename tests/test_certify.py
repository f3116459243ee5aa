"""The joint certified bound of the k-class logit margin (probes/certify_dual.py, used by certify.py): its per-neuron
supremum in closed form against a dense search, the whole bound never above a verified adversarial point (dense
direction line searches in low dimension, PGD in higher) on many small random nets with block, dense and signed
read-outs, and tighter than the pairs/aggregated bound where the pairs bound pays log|J−| (a planted FA-like net)."""

import pytest
import torch

from featlab.nn.twolayer import EnsembleTwoLayer, block_readout, logit_margin_readout, sign_prediction
from featlab.probes.certify import attack_distance, certified_lower_bound
from featlab.probes.certify_dual import joint_radius, psi
from featlab.probes.robustness import robust_masks

pytestmark = pytest.mark.usefixtures("one_thread")
D = torch.float64


def test_psi_is_the_supremum_over_s():
    g = torch.Generator().manual_seed(0)
    p, z0 = torch.randn(120, generator=g, dtype=D) * 2, torch.randn(120, generator=g, dtype=D) * 2
    lam_d = torch.rand(120, generator=g, dtype=D) * 3 + 0.05
    s = torch.cat([torch.linspace(-30, 30, 30001, dtype=D).expand(120, -1), -z0[:, None]], -1)  # + the kink
    dense = (p[:, None] * (z0[:, None] + s).clamp_min(0) - lam_d[:, None] * s**2).amax(-1)
    val = psi(p, z0, lam_d)
    assert (val >= dense - 1e-12).all()  # a supremum: never below a value it is attained at ...
    assert torch.allclose(val, dense, atol=1e-5)  # ... and attained (away from the kink the grid errs by O(Δs²))


def _score(W, b, A, pos, grad: bool = False):
    net = EnsembleTwoLayer(W, A, b).requires_grad_(False)
    return lambda z: logit_margin_readout(net(z), pos) if grad else logit_margin_readout(net(z), pos).detach()


def _direction_search(score, x, y, dirs: int, r_max: float, steps: int, seed: int):
    """The first sign change along many random directions (each point's own), on a radius grid: distances of verified
    adversarial points (E, n), inf where none was found; 0 where x itself is misclassified."""
    E, n, d = x.shape
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(dirs, d, generator=g, dtype=D)
    u = u / u.norm(dim=-1, keepdim=True)
    t = torch.linspace(0, r_max, steps + 1, dtype=D)
    out = torch.full((E, n), float("inf"), dtype=D)
    for i in range(n):
        pts = x[:, i, None, None, :] + t[None, :, None, None] * u[None, None]  # (E, T, P, d)
        flip = sign_prediction(score(pts.reshape(E, -1, d)).reshape(E, steps + 1, dirs)) != y[:, i, None, None]
        hit = torch.where(flip, t[None, :, None], float("inf")).amin((1, 2))
        out[:, i] = hit
    return out


def _random_net(seed: int, k: int, h: int, d: int, kind: str):
    g = torch.Generator().manual_seed(seed)
    M = k * h
    W = torch.randn(2, M, d, generator=g, dtype=D)
    b = torch.randn(2, M, generator=g, dtype=D) * 0.5
    if kind == "block":
        A = block_readout(k, h, 1 / h)
    elif kind == "dense":
        A = torch.rand(M, k, generator=g, dtype=D)
    else:  # signed: neurons feed several classes with either sign
        A = torch.randn(M, k, generator=g, dtype=D)
    pos = torch.arange(k) < (k + 1) // 2
    x = torch.randn(2, 12, d, generator=g, dtype=D) * 1.5
    return W, b, A, pos, x


@pytest.mark.parametrize("kind", ["block", "dense", "signed"])
def test_joint_bound_is_never_above_a_direction_search_in_low_dimension(kind):
    tight = []
    for seed in range(4):
        k, h = (3, 1) if seed % 2 else (4, 1)
        W, b, A, pos, x = _random_net(seed, k, h, 3 if k == 3 else 4, kind)
        score = _score(W, b, A, pos)
        y = sign_prediction(score(x))
        y[:, ::5] *= -1  # misclassified at x: distance 0
        lo = joint_radius(W, b, A, x, y, pos)
        up = _direction_search(score, x, y, dirs=200, r_max=6.0, steps=120, seed=seed)
        assert (lo <= up + 1e-12).all(), (kind, seed, (lo - up).max())
        assert (lo[:, ::5] == 0).all()
        both = certified_lower_bound(W, b, A, x, y, positive=pos, upper=up)  # the larger of the two bounds
        assert (both.double() <= up + 1e-12).all()
        fin = torch.isfinite(up) & (up > 0)
        tight += (lo[fin] / up[fin]).tolist()
    assert max(tight) > 0.5  # not vacuous: some point's certificate comes close to the search's distance


def test_joint_bound_is_never_above_pgd_in_higher_dimension():
    radii = [0.15 * i for i in range(1, 41)]
    for seed in range(4):
        W, b, A, pos, x = _random_net(10 + seed, 4, 2, 12, ("block", "dense", "signed", "block")[seed])
        score = _score(W, b, A, pos, grad=True)
        y = sign_prediction(score(x))
        lo = joint_radius(W, b, A, x, y, pos)
        masks = robust_masks(score, x, y, radii, steps=20, generator=torch.Generator().manual_seed(seed))
        att = attack_distance(radii, masks)
        assert torch.isfinite(att).any() and (lo <= att + 1e-12).all(), seed


def _planted(seed: int, k: int = 6, d: int = 48, n: int = 30):
    """An FA-like decoupled net: one neuron per class along its centre (nearly orthogonal), points at their centres
    plus noise; the adversary can raise only one wrong logit at a time, which the pairs bound does not know."""
    g = torch.Generator().manual_seed(seed)
    mu = torch.linalg.qr(torch.randn(d, k, generator=g, dtype=D))[0].T * d**0.5
    W = (mu / d**0.5 * 0.7 + 0.02 * torch.randn(k, d, generator=g, dtype=D))[None]  # logits ≈ 5 at the centres
    j = torch.randint(k, (n,), generator=g)
    x = (mu[j] + 0.3 * torch.randn(n, d, generator=g, dtype=D))[None]
    pos = torch.arange(k) < k // 2
    return W, block_readout(k, 1, 1.0), pos, x, mu, j


def test_joint_bound_is_tighter_than_the_pairs_bound_on_a_planted_net():
    W, A, pos, x, mu, j = _planted(0)
    score = _score(W, None, A, pos)
    y = sign_prediction(score(x))
    old = certified_lower_bound(W, None, A, x, y, positive=pos, joint=False)
    new = certified_lower_bound(W, None, A, x, y, positive=pos)
    # a verified attack: from x towards the midpoint of its centre and every other one (Thm 4.7 (3)'s direction)
    up = torch.full_like(new, float("inf"))
    t = torch.linspace(0, 3 * x.shape[-1] ** 0.5, 601, dtype=D)
    for l in range(mu.shape[0]):
        u = mu[l] - mu[j]
        u = u / u.norm(dim=-1, keepdim=True).clamp_min(1e-30)
        pts = x[0, :, None] + t[None, :, None] * u[:, None]  # (n, T, d)
        flip = sign_prediction(score(pts.reshape(1, -1, x.shape[-1])).reshape(pts.shape[:2])) != y[0, :, None]
        up[0] = torch.minimum(up[0], torch.where(flip, t, float("inf")).amin(-1))
    ok = torch.isfinite(up)
    assert ok.float().mean() > 0.9 and (new <= up + 1e-9).all() and (new >= old).all()
    assert (new[ok] / old[ok]).median() > 1.2  # the joint read-out recovers the pairs bound's log|J−| loss
    assert (new[ok] / up[ok]).median() > 0.8


def test_joint_replica_in_a_batch_equals_replica_alone():
    W, b, A, pos, x = _random_net(3, 3, 2, 5, "dense")
    y = sign_prediction(_score(W, b, A, pos)(x))
    both = joint_radius(W, b, A, x, y, pos)
    for e in range(2):
        assert torch.allclose(joint_radius(W[e:e + 1], b[e:e + 1], A, x[e:e + 1], y[e:e + 1], pos), both[e:e + 1])
