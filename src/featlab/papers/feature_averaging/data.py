"""Multi-cluster binary distribution of the Feature Averaging paper (Def 3.1, Remark A.5, App. E.1).

k clusters with centres μ_1..μ_k ∈ R^d (orthogonal, ‖μ_j‖ = √d: Assumption 3.2), partitioned into J+ and J−.
A point: j ~ Unif[k], y = +1 iff j ∈ J+, x = α μ_j + σ ξ with ξ ~ N(0, I_d). The cluster index j is kept as the
fine-grained label (§4.2). Every replica has its own centres and samples (seed-keyed generators).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from ...data.base import Batch
from ...placement import to_host, to_run
from ...utils import generator


def orthogonal_centres(k: int, d: int, mode: str, gen: torch.Generator, pairwise_cos: float = 0.0,
                       norm_scales: list[float] | None = None, norm_d: int | None = None) -> torch.Tensor:
    """(k, d) centres with ‖μ_j‖ = √d · scale_j (√norm_d · scale_j when given: the nominal d of a reduced
    simulation, whose coordinates have fewer than d entries, see :mod:`.gram`).

    mode='qr': μ_j = √d q_j with q from the QR of a Gaussian d×k matrix (rotation invariant; default).
    mode='basis': μ_j = √d e_j.
    pairwise_cos > 0 (Fig 9, construction not in the paper): μ_j = √d(√(1−c) q_j + √c q_0) with q_0 ⊥ q_j,
    which gives cos(μ_i, μ_j) = c exactly for i ≠ j.
    """
    need = k + (1 if pairwise_cos > 0 else 0)
    if mode == "qr":
        q, _ = torch.linalg.qr(torch.randn(d, need, generator=gen, dtype=torch.float64, device="cpu"))
        q = q.T  # (need, d) orthonormal rows
    elif mode == "basis":
        q = torch.eye(d, dtype=torch.float64, device="cpu")[:need]
    else:  # pragma: no cover - validated by the config
        raise ValueError(mode)
    if pairwise_cos > 0:
        c = pairwise_cos
        mu = (1 - c) ** 0.5 * q[1:] + c**0.5 * q[:1]
    else:
        mu = q
    mu = mu * (d if norm_d is None else norm_d) ** 0.5
    if norm_scales is not None:
        mu = mu * torch.tensor(norm_scales, dtype=torch.float64, device="cpu")[:, None]
    return mu


@dataclass
class MultiClusterDistribution:
    """Def 3.1 for E replicas. ``mu``: (E, k, D); ``positive``: boolean (k,) mask of J+ (entry j − 1 is
    the paper's cluster j). D = d, or in a reduced (Gram) simulation D = k + N coordinates of vectors of R^d
    (:mod:`.gram`): then ``d_nominal`` is the d the vectors live in and ``gaussians`` holds the other N(0, I_d)
    draws in the same coordinates (the initial weights, the Thm 4.6 starts), which fresh draws could not be."""

    mu: torch.Tensor
    positive: torch.Tensor
    alpha: float = 1.0  # signal scale α (Remark A.5)
    sigma: float = 1.0  # noise scale σ
    d_nominal: int | None = None  # the input dimension d when mu holds reduced coordinates
    gaussians: dict[str, torch.Tensor] | None = None  # role → (E, count, D) coordinates of N(0, I_d) draws

    @classmethod
    def create(cls, seeds: list[int], k: int, d: int, positive: list[int], *, alpha: float = 1.0,
               sigma: float = 1.0, centres: str = "qr", pairwise_cos: float = 0.0,
               norm_scales: list[float] | None = None, dtype=torch.float32, device=None) -> MultiClusterDistribution:
        """Replica i's centres from the (seeds[i], "centres") stream (see :func:`orthogonal_centres`).

        ``positive``: the clusters of J+ as 0-based indices, like every class or cluster index in featlab (the
        paper's cluster j is index j − 1, ``mu[:, j - 1]``).
        """
        mu = torch.stack([orthogonal_centres(k, d, centres, generator(s, "centres"), pairwise_cos, norm_scales)
                          for s in seeds]).to(dtype=dtype)  # drawn on the host, then moved whole
        pos = torch.zeros(k, dtype=torch.bool, device="cpu")
        pos[torch.tensor(positive, dtype=torch.long, device="cpu")] = True
        dist = cls(mu, pos, alpha, sigma)
        return dist if device is None else dist.to(device)

    def to(self, device) -> MultiClusterDistribution:
        """The same law with every tensor field (μ, J+, the Gram simulation's Gaussians) on ``device``."""
        return replace(self, mu=to_run(self.mu, device), positive=to_run(self.positive, device),
                       gaussians=to_run(self.gaussians, device))

    @property
    def E(self) -> int:
        return self.mu.shape[0]

    @property
    def k(self) -> int:
        return self.mu.shape[1]

    @property
    def d(self) -> int:
        """The input dimension d (a scale: ‖μ_j‖² = d), also in a reduced simulation."""
        return self.mu.shape[2] if self.d_nominal is None else self.d_nominal

    @property
    def dim(self) -> int:
        """The length D of the stored vectors: d, or k + N coordinates in a reduced simulation."""
        return self.mu.shape[2]

    @property
    def signs(self) -> torch.Tensor:
        """(k,) ±1: the binary label of each cluster."""
        return self.positive.to(self.mu.dtype) * 2 - 1

    def class_sums(self) -> torch.Tensor:
        """(E, 2, d): Σ_{j∈J+} μ_j and Σ_{j∈J−} μ_j."""
        p = self.positive.to(self.mu.dtype)
        return torch.stack([torch.einsum("k,ekd->ed", p, self.mu), torch.einsum("k,ekd->ed", 1 - p, self.mu)], 1)

    def averaged_direction(self) -> torch.Tensor:
        """(E, d) unit vector along Σ_{J+}μ_j − Σ_{J−}μ_j: the direction of Thm 4.5(3)'s attack."""
        s = self.class_sums()
        u = s[:, 0] - s[:, 1]
        return u / u.norm(dim=-1, keepdim=True)

    def sample(self, n: int, seeds: list[int], role: str = "train") -> Batch:
        """n points per replica; replica i draws from the (seed_i, role) stream."""
        if self.d_nominal is not None:  # a fresh point must be a row of the joint Gaussian draw (see .gram)
            raise ValueError("a reduced (Gram) simulation cannot sample fresh points; draw them with its data")
        xs, ys, cs = [], [], []
        for e, s in enumerate(seeds):
            g = generator(s, role)
            # drawn on the host stream (the same numbers on every device), then moved to the centres' device
            j = to_run(torch.randint(self.k, (n,), generator=g, device="cpu"), self.mu.device)
            xi = to_run(torch.randn(n, self.d, generator=g, dtype=torch.float64, device="cpu"), self.mu.device,
                        self.mu.dtype)
            xs.append(self.alpha * self.mu[e, j] + self.sigma * xi)  # Def 3.1 / Remark A.5
            cs.append(j)
            ys.append(self.signs[j])
        x, y, c = torch.stack(xs), torch.stack(ys), torch.stack(cs)
        return Batch(x, y, {"cluster": c})


def relabel(batch: Batch, positive: torch.Tensor, seeds: list[int], mode: str) -> Batch:
    """Training labels of a control setting (not the paper's data), from the (seed, "relabel") stream.

    ``random``: every label re-drawn at random, independent of the cluster — the binary label uniform on ±1 and
    the fine label uniform on [k] (Def 3.1's premise that the label is a function of the cluster, removed);
    ``shuffled-in-class``: each point's fine label re-assigned to a cluster of its own coarse class drawn at random
    (the binary label unchanged), so fine labels carry the coarse class and nothing more (§4.2's premise that the
    fine label names the point's cluster, removed). ``cluster``: the batch unchanged.
    """
    if mode == "cluster":
        return batch
    pos = to_host(positive)  # the draws and their bookkeeping on the host; the labels cross back once, at the end
    k = pos.numel()
    ys, cs = [], []
    for e, s in enumerate(seeds):
        g = generator(s, "relabel")
        c_true, n = to_host(batch.info["cluster"][e]), batch.y.shape[-1]
        if mode == "random":
            c = torch.randint(k, (n,), generator=g)
            y = (torch.randint(2, (n,), generator=g) * 2 - 1).to(batch.y.dtype)
        elif mode == "shuffled-in-class":
            jp, jn = pos.nonzero().flatten(), (~pos).nonzero().flatten()
            rp = jp[torch.randint(len(jp), (n,), generator=g)]
            rn = jn[torch.randint(len(jn), (n,), generator=g)]
            c, y = torch.where(pos[c_true], rp, rn), to_host(batch.y[e])
        else:  # pragma: no cover - validated by the config
            raise ValueError(mode)
        ys.append(y)
        cs.append(c)
    dev = batch.y.device
    return Batch(batch.x, to_run(torch.stack(ys), dev), {**batch.info, "cluster": to_run(torch.stack(cs), dev)})


# tiny instances of each data class, for the common checks of the distribution protocol (tests/test_common_checks.py)
EXAMPLES = {"MultiClusterDistribution": lambda seeds: MultiClusterDistribution.create(seeds, k=4, d=12,
                                                                                     positive=[0, 1])}
