"""The lemma measurements behind the rfa-amplification claims (Lemmas 3–6, 8, 11, 14; App. D; eq. (12)'s c1), the
results that are true by construction (Lemma 3's count, Lemma 8) and the labels' null settings of the controls."""

import math

import pytest
import torch

from featlab.papers.feature_amplification import lemmas
from featlab.papers.feature_amplification.data import XORClusterDistribution, f_star, rfa_readout

pytestmark = pytest.mark.usefixtures("one_thread")


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_c1_C2_and_appd_constants():
    # eq. (12) for Gaussian clusters: Φ(1/9) − 1/2, the same for every direction u; C2 = 4/c1 (eq. 14)
    c1 = lemmas.c1_constant("gaussian")
    assert abs(c1 - 0.044237) < 1e-5 and abs(lemmas.C2_constant("gaussian") - 4 / c1) < 1e-12
    z = torch.randn(400_000, generator=_gen(), dtype=torch.float64)
    assert abs(float(((z >= -1 / 9) & (z <= 0)).double().mean()) - c1) < 2e-3
    # product laws: the smaller of u = e1 and the Gaussian limit; uniform's e1 value is the smaller one
    assert lemmas.c1_constant("uniform") == pytest.approx(1 / (18 * math.sqrt(3)))
    assert lemmas.c1_constant("laplace") == c1
    # App. D eq. (56): 2·2Φ(−1/(3σ)) for Gaussian clusters, below the log-concave 6e^{−1/(3σ)}
    for s in (0.05, 0.1, 0.3):
        assert lemmas.appd_bound(s) <= lemmas.appd_bound(s, "uniform") <= 1
    assert lemmas.appd_bound(0.1) == pytest.approx(4 * 0.5 * math.erfc(10 / 3 / math.sqrt(2)))


def test_lemma3_count_is_gaussian_anticoncentration():
    """Lemma 3's count holds for every Gaussian init (P(|g| ≤ 1/(2C0)) ≤ 1/(2C0), Hoeffding): a test, not a claim."""
    mu = torch.eye(50, dtype=torch.float64)[:2][None].expand(3, 2, 50)
    for C0 in (1.5, 3.0, lemmas.C0_PAPER):
        for omega in (1e-6, 1.0):
            W0 = omega * torch.randn(3, 400, 50, generator=_gen(1), dtype=torch.float64)
            share = lemmas.lemma3_count(W0, mu, omega, C0)
            assert (share >= lemmas.lemma3_count_floor(400, C0, 0.05)).all()
    # and the norm band [1/2, 3/2]·ω√d at d = 50, but not at d = 2 (the low-dimension control)
    W0 = 1e-3 * torch.randn(2, 400, 50, generator=_gen(2), dtype=torch.float64)
    assert (lemmas.init_norm_ratio(W0, 1e-3) - 1).abs().max() <= 0.5
    W0 = 1e-3 * torch.randn(2, 400, 2, generator=_gen(2), dtype=torch.float64)
    assert (lemmas.init_norm_ratio(W0, 1e-3) - 1).abs().max() > 0.5


def test_lemma8_subnetwork_margin_transfers():
    """Lemma 8 is deterministic: ‖W‖_F ≤ 1, y f^J ≥ 1/Cf, ‖x‖ ≤ 2, |J^c|/m ≤ 1/(16Cf²) ⇒ y f ≥ 1/(2Cf). Checked on
    random instances and on the worst case (every J^c neuron spends its norm against y)."""
    m, Cf = 64, 1.2
    A = rfa_readout(m)[:, 0].double()
    k = int(m / (16 * Cf**2))  # the largest |J^c| allowed
    g, met = _gen(3), 0
    for trial in range(300):
        x = torch.randn(8, generator=g, dtype=torch.float64)
        x *= 2 * torch.rand(1, generator=g, dtype=torch.float64) / x.norm()
        y = 1.0 if trial % 2 else -1.0
        W = 0.1 * torch.randn(m, 8, generator=g, dtype=torch.float64)
        good = (A * y > 0).nonzero()[:, 0]
        W[good] += torch.rand(1, generator=g, dtype=torch.float64) * x / x.norm()  # margin from the subnetwork
        Jc = torch.randperm(m, generator=g)[:k]
        if trial % 3 == 0:  # worst case: J^c neurons push against y with all of their norm
            W[Jc] = 10 * torch.sign(-y * A[Jc])[:, None].clamp_min(0) * x / x.norm()
        W /= max(1.0, float(W.norm()))
        J = torch.ones(m, dtype=torch.bool)
        J[Jc] = False
        h = (W @ x).clamp_min(0) * A
        fJ, f = float(h[J].sum()), float(h.sum())
        if y * fJ >= 1 / Cf:
            met += 1
            assert y * f >= 1 / (2 * Cf) - 1e-12
    assert met >= 20  # the premises were met often enough to test the implication


def _clusters(d, sigma, n=400, eta=0.1, seeds=(0, 1), labels="xor"):
    dist = XORClusterDistribution.create(list(seeds), d, sigma, eta, noise="exact", dtype=torch.float64,
                                         labels=labels)
    return dist, dist.sample(n, list(seeds))


def test_lemma5_C1_and_lemma6_edge():
    dist, tr = _clusters(500, 1e-3)
    C1 = lemmas.lemma5_C1(tr.x, tr.cluster, tr.noisy, dist.mu, 1e-3, dist.eta, 0.05)
    assert (C1 <= lemmas.LEMMA5_C1).all() and (C1 >= 1).all()  # (b): ‖z‖²/(σ²d) ≈ 1
    dist2, tr2 = _clusters(2, 1e-3)  # d = 2: ‖z‖²/(2σ²) is χ²₂/2, whose maximum over 400 points is ≈ log 400
    assert (lemmas.lemma5_C1(tr2.x, tr2.cluster, tr2.noisy, dist2.mu, 1e-3, dist2.eta, 0.05) > 2).all()
    # Lemma 6: with σ√d ≪ ρ(0) every captured cluster point is active: edge ≈ |I^C_µ|/n ≈ (1 − η)/4
    W0 = 1e-4 * torch.randn(2, 40, 500, generator=_gen(4), dtype=torch.float64)
    dist3, tr3 = _clusters(500, 1e-9)
    edge = lemmas.lemma6_edge(W0, tr3.x, tr3.cluster, tr3.noisy, dist3.mu, 3.0)
    assert (edge > 0.15).all() and (edge < 0.26).all()
    # wide clusters and Def 7's C0: neurons with ρ(0) ≈ 0 are eligible and have no edge
    dist4, tr4 = _clusters(500, 0.05)
    edge4 = lemmas.lemma6_edge(W0, tr4.x, tr4.cluster, tr4.noisy, dist4.mu, lemmas.C0_PAPER)
    assert float(edge4.min()) < 1 / lemmas.C2_constant("gaussian")


def test_lemma4_ratio_subnet_margin_and_neuron_norms():
    J = torch.zeros(1, 4, 8, dtype=torch.bool)
    J[0, 0, :2] = J[0, 1, 2:4] = J[0, 2, 4:6] = J[0, 3, 6:] = True  # two neurons per set: exactly m/4
    assert float(lemmas.lemma4_ratio(J, 3.0)) == pytest.approx(2 / (2 * (2 / 3) ** 2))
    J[0, 1, 3] = False
    assert float(lemmas.lemma4_ratio(J, lemmas.C0_PAPER)) < 1  # Def 7's C0: each set needs ≥ m/4 neurons
    # Lemma 11's margin of the reference subnetwork w_j = ±µ for its set: f^J = (|<µ1, x>| − |<µ2, x>|)/√m·(m/4)
    mu = torch.eye(6, dtype=torch.float64)[:2][None]
    W = torch.stack([mu[0, 0], mu[0, 0], -mu[0, 0], -mu[0, 0], mu[0, 1], mu[0, 1], -mu[0, 1], -mu[0, 1]])[None]
    A = rfa_readout(8).double()
    J = torch.zeros(1, 4, 8, dtype=torch.bool)
    for k in range(4):
        J[0, k, 2 * k:2 * k + 2] = True
    x = torch.stack([mu[0, 0], -mu[0, 0], mu[0, 1], -mu[0, 1]])[None]
    yc = torch.tensor([[1.0, 1.0, -1.0, -1.0]], dtype=torch.float64)
    assert float(lemmas.subnet_margin(W, A, x, yc, J)) == pytest.approx(2 / math.sqrt(8))
    assert torch.allclose(lemmas.subnet_margin(W, A, x, yc, J), (yc * f_star(x, mu)).amin(-1) * 2 / math.sqrt(8))
    assert float(lemmas.subnet_margin(W, A, x, -yc, J)) < 0
    # Lemma 14 (1): ‖w_j‖/(2|a_j|αt), here 1/(2·(1/√8)·0.5·1)
    assert float(lemmas.neuron_norm_ratio(W, A, 0.5, 1)) == pytest.approx(math.sqrt(8))


def test_label_modes_are_the_controls_null_settings():
    dist, tr = _clusters(20, 0.01, eta=0.0, labels="linear")
    w = dist.mu[:, 0] + dist.mu[:, 1]  # the homogeneous halfspace sgn<µ1 + µ2, x> separates "linear" labels
    assert bool((torch.sign(torch.einsum("end,ed->en", tr.x, w)) == tr.y).all())
    _, xor = _clusters(20, 0.01, eta=0.0)
    assert torch.equal(xor.x, tr.x)  # same points, other labels
    assert bool((xor.y == torch.sign(f_star(xor.x, dist.mu))).all())
    _, rnd = _clusters(20, 0.01, eta=0.0, n=4000, labels="random")
    for k in range(4):  # a fair coin in every cluster
        assert abs(float(rnd.y[rnd.cluster == k].mean())) < 0.1


def test_aligned_share_follows_the_mean_a_neuron_leaned_to_at_init():
    """§3's 'nearly every neuron correlates with a cluster mean', as the proof has it: the mean of its own sign it
    leaned to at init; a neuron that turns to the opposite mean (or to the other sign's means) does not count."""
    mu = torch.eye(6, dtype=torch.float64)[:2][None]
    A = rfa_readout(4).double()  # two positive, two negative neurons
    W0 = torch.stack([mu[0, 0] + 0.1, -mu[0, 0] + 0.1, mu[0, 1] + 0.1, -mu[0, 1] + 0.1])[None] * 1e-3
    assert float(lemmas.aligned_share(W0 * 1e3, W0, A, mu)) == 1.0
    W = W0.clone() * 1e3
    W[0, 0] = -mu[0, 0]  # turned from +µ1 to −µ1: correlates with a mean, not with its own
    W[0, 2] = mu[0, 0]  # a negative neuron on µ1: not its sign's mean
    assert float(lemmas.aligned_share(W, W0, A, mu)) == 0.5
