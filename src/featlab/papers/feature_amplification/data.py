"""XOR cluster distribution with label noise of the Random Feature Amplification paper (§2, App. E).

Orthonormal means μ1, μ2 ∈ R^d; four clusters +μ1, −μ1 (clean label +1) and +μ2, −μ2 (clean label −1), each
with prior 1/4; x = μ + z with z log-concave, E z = 0, E zzᵀ = σ²I (§2). The observed label is the clean label
flipped with probability η(x) (§2): the noise models below are i.i.d. flips at rate η, an exact fraction per
cluster (App. E), an x-dependent η(x) that flips the points closest to f*'s boundary, and (a control's setting)
every flip in one cluster.

Cluster ids: 0 = +μ1, 1 = −μ1, 2 = +μ2, 3 = −μ2 (the opposite of cluster c is c ^ 1). Every replica has its own
means, samples and noise rate η_i; replicas with the same seed share x and differ only in their labels
(one uniform u_i per point decides the flips, so noisy sets are nested in η).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from ... import meter
from ...data.base import Batch
from ...nn.twolayer import signed_readout
from ...placement import to_host, to_run
from ...utils import cpu_draws, generator

CLEAN_LABEL = (1.0, 1.0, -1.0, -1.0)  # ỹ of clusters +μ1, −μ1, +μ2, −μ2 (§2: XOR)
# Clean labels of the clusters (+μ1, −μ1, +μ2, −μ2) per ``labels`` mode: "xor" is §2's; the others are null settings
# for the controls [not in the paper]: "linear" is separated by the homogeneous halfspace sgn<μ1 + μ2, x>, "random"
# draws ỹ as a fair coin per point, independent of x (drawn after the flips' uniforms, so x, c, u are unchanged).
# Plain numbers, not tensors: a module-level tensor would sit on the host whatever device a run uses.
LABELINGS = {"xor": CLEAN_LABEL, "linear": (1.0, -1.0, 1.0, -1.0)}


def orthonormal_means(d: int, mode: str, gen: torch.Generator) -> torch.Tensor:
    """(2, d) rows μ1, μ2: ``random`` = QR of a Gaussian d×2 matrix (a uniformly random rotation of e1, e2);
    ``axis`` = e1, e2."""
    if mode == "random":
        q, _ = torch.linalg.qr(torch.randn(d, 2, generator=gen, dtype=torch.float64))
        return q.T.contiguous()
    if mode == "axis":
        return torch.eye(d, dtype=torch.float64)[:2].clone()
    raise ValueError(mode)  # pragma: no cover - validated by the config


def cluster_noise(n: int, d: int, sigma: float, law: str, gen: torch.Generator) -> torch.Tensor:
    """z with mean 0 and covariance σ²I, i.i.d. log-concave coordinates (§2: P_clust log-concave)."""
    if law == "gaussian":
        return sigma * torch.randn(n, d, generator=gen, dtype=torch.float64)
    if law == "uniform":  # U[−√3σ, √3σ] has variance σ²
        return sigma * math.sqrt(3.0) * (2 * torch.rand(n, d, generator=gen, dtype=torch.float64) - 1)
    if law == "laplace":  # Exp(1) − Exp(1) is Laplace(0, 1), variance 2
        e = torch.empty(2, n, d, dtype=torch.float64).exponential_(generator=gen)
        return sigma / math.sqrt(2.0) * (e[0] - e[1])
    raise ValueError(law)  # pragma: no cover


def f_star(x: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """f*(x) = |<μ1,x>| − |<μ2,x>| (eq. 2): x (E, n, d), mu (E, 2, d) → (E, n)."""
    p = torch.einsum("end,ekd->enk", x, mu.to(x.dtype))
    return p[..., 0].abs() - p[..., 1].abs()


def rfa_readout(m: int) -> torch.Tensor:
    """(m, 1) second layer of eq. (1): +1/√m on the first ⌊m/2⌋ neurons, −1/√m on the next ⌊m/2⌋, a_m = 0 when
    m is odd (§2)."""
    h = m // 2
    A = signed_readout(h, h, 1 / math.sqrt(m))
    if m % 2:
        A = torch.cat([A, torch.zeros(1, 1, dtype=A.dtype, device=A.device)])
    return A


@dataclass
class XORClusterDistribution:
    """§2's P for E replicas: ``mu`` (E, 2, d) rows μ1, μ2; ``eta`` (E,) noise rate of each replica."""

    mu: torch.Tensor
    sigma: float
    eta: torch.Tensor
    law: str = "gaussian"
    noise: str = "flip"
    quantile: torch.Tensor | None = None  # (E,) boundary model: flip iff |f*(x)| < quantile (η(x) ∈ {0, 1})
    labels: str = "xor"  # clean labels: "xor" (§2), or a control's null setting "linear" / "random"

    @classmethod
    def create(cls, seeds: list[int], d: int, sigma: float, eta: float | list[float] = 0.0, *,
               law: str = "gaussian", noise: str = "flip", means: str = "random", dtype=torch.float32,
               quantile_samples: int = 20000, labels: str = "xor", mean_cos: float = 0.0,
               device=None) -> XORClusterDistribution:
        etas = [float(eta)] * len(seeds) if isinstance(eta, (int, float)) else [float(e) for e in eta]
        assert len(etas) == len(seeds), (len(etas), len(seeds))
        # built on the host (the same numbers on every device), then moved whole; sampling reads host copies
        mu = cpu_draws(orthonormal_means)
        mu = torch.stack([mu(d, means, generator(s, "means")) for s in seeds])
        if mean_cos:  # a rival's setting: µ2 turned towards µ1 (§2's means are orthogonal), both of norm 1
            mu = torch.stack([mu[:, 0], mean_cos * mu[:, 0] + math.sqrt(1 - mean_cos**2) * mu[:, 1]], 1)
        mu = mu.to(dtype=dtype)
        dist = cls(mu, float(sigma), torch.tensor(etas, dtype=torch.float64, device="cpu"), law, noise, labels=labels)
        if noise == "boundary":
            dist.quantile = torch.stack([dist._boundary_quantile(e, s, quantile_samples)
                                         for e, s in enumerate(seeds)])
        return dist if device is None else dist.to(device)

    def to(self, device) -> XORClusterDistribution:
        """The same law with every tensor field (μ, η, the boundary quantile) on ``device``."""
        return replace(self, mu=to_run(self.mu, device), eta=to_run(self.eta, device),
                       quantile=to_run(self.quantile, device))

    # ------------------------------------------------------------------------------------ properties
    @property
    def E(self) -> int:
        return self.mu.shape[0]

    @property
    def d(self) -> int:
        return self.mu.shape[2]

    @cpu_draws
    def _boundary_quantile(self, e: int, seed: int, N: int) -> torch.Tensor:
        """q with P(|f*(x)| < q) = η_e, by Monte Carlo on N clean draws (own stream): η(x) = 1{|f*(x)| < q}."""
        eta = float(self.eta[e])
        if eta <= 0:
            return torch.tensor(0.0, dtype=torch.float64)
        g = generator(seed, "eta-quantile")
        vals = []
        for lo in meter.each(range(0, N, 2000), -(-N // 2000)):  # a few chunks when an estimate is measured
            k = min(2000, N - lo)
            c = torch.randint(4, (k,), generator=g)
            x = self._centres(e)[c] + cluster_noise(k, self.d, self.sigma, self.law, g)
            vals.append(f_star(x[None], to_host(self.mu[e : e + 1]).double())[0].abs())
        return torch.quantile(torch.cat(vals), eta)

    def _centres(self, e: int) -> torch.Tensor:
        mu = to_host(self.mu[e]).double()  # sampling runs on the host
        return torch.stack([mu[0], -mu[0], mu[1], -mu[1]])  # (4, d) in cluster-id order

    # ------------------------------------------------------------------------------------ sampling
    @cpu_draws
    def sample(self, n: int, seeds: list[int], role: str = "train") -> Batch:
        """n points per replica from its (seed_i, role) stream: x, observed y, and info ``cluster``,
        ``y_clean``, ``noisy`` (E, n)."""
        xs, ys, yc, cs, nz = [], [], [], [], []
        for e, s in enumerate(seeds):
            g = generator(s, role)
            c = torch.randint(4, (n,), generator=g)
            x = self._centres(e)[c] + cluster_noise(n, self.d, self.sigma, self.law, g)  # x = μ + z (§2)
            u = torch.rand(n, generator=g, dtype=torch.float64)
            if self.labels == "random":  # null setting: ỹ independent of x [control, not in the paper]
                y_clean = torch.randint(2, (n,), generator=g).double() * 2 - 1
            else:
                y_clean = torch.tensor(LABELINGS[self.labels], dtype=torch.float64)[c]
            flip = self.flips(e, x, c, u)
            xs.append(x)
            ys.append(torch.where(flip, -y_clean, y_clean))
            yc.append(y_clean)
            cs.append(c)
            nz.append(flip)
        dtype = self.mu.dtype
        return Batch(torch.stack(xs).to(dtype), torch.stack(ys).to(dtype),
                     {"cluster": torch.stack(cs), "y_clean": torch.stack(yc).to(dtype), "noisy": torch.stack(nz)}
                     ).to(self.mu.device)

    def flips(self, e: int, x: torch.Tensor, c: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """Which labels replica e flips (§2: y = −ỹ with probability η(x))."""
        eta = float(self.eta[e])
        if self.noise == "flip":  # η(x) ≡ η, independent flips
            return u < eta
        if self.noise == "exact":  # App. E: exactly round(η·|I_c|) flips in every cluster c, chosen at random
            flip = torch.zeros_like(u, dtype=torch.bool)
            for k in range(4):
                idx = (c == k).nonzero().squeeze(1)
                r = int(round(eta * len(idx)))
                if r:
                    flip[idx[u[idx].argsort()[:r]]] = True
            return flip
        if self.noise == "cluster":  # every flip in cluster +μ1, at rate min(1, 4η) there (overall rate η)
            # [control, not in the paper: for η > 1/8 the +μ1 cluster's majority label is the wrong one, which
            # (A4) at the C the proofs need (η ≤ 1/C, so 4η ≪ 1/2 in every cluster) excludes]
            return (c == 0) & (u < min(1.0, 4 * eta))
        if self.noise == "boundary":  # η(x) = 1{|f*(x)| < q_η}: the points closest to f*'s boundary
            assert self.quantile is not None  # set by create() for this noise model
            return f_star(x[None], to_host(self.mu[e : e + 1]).double())[0].abs() < to_host(self.quantile[e])
        raise ValueError(self.noise)  # pragma: no cover


# tiny instances of each data class, for the common checks of the distribution protocol (tests/test_common_checks.py)
EXAMPLES = {"XORClusterDistribution": lambda seeds: XORClusterDistribution.create(seeds, 10, 0.1, 0.2)}
