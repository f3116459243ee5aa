"""fa-synthetic simulated exactly (in law) in k + N coordinates, at a cost that does not grow with d.

Full-batch GD keeps every first-layer weight in span{w_r(0), x_i} (the gradient of each neuron is a combination of
the training inputs), and every measurement of fa-synthetic is a function of the inner products among the centres,
the noise vectors, the initial weights and the test points (cosines, outputs, Thm 4.6's search, attacks that work
in span(W)). The centres are orthogonal with ‖μ_j‖ = √d: the run is rotation invariant (isotropic noise and init),
so they may be √d·e_1..√d·e_k. Stack the N Gaussian vectors of a replica (training noise, test noise, the initial
weights of both nets, the Thm 4.6 starts) as the rows of an N×d standard-normal G = [G_c | G_rest]: G_c (N×k) is
iid N(0, 1), and G_rest G_restᵀ ~ Wishart_N(d − k, I), which the Bartlett decomposition samples exactly:

    L lower-triangular,  L_ii = √χ²_{d−k−i+1},  L_ij ~ N(0, 1) (i > j),  L Lᵀ ~ Wishart_N(d − k, I).

So the rows [G_c | L] ∈ R^{k+N} have exactly the joint law of the Gram matrix of [μ, G] (needs d − k ≥ N), and the
explicit pipeline runs on them unchanged wherever d is read as a *scale* from the config (‖μ_j‖² = d, the radii,
Thm 4.6's sphere) rather than from x.shape[-1]. Memory is the N×(k+N) factor per replica; a step costs
O(n·(k+N)·M), not O(n·d·M). With the same G, the QR of G_restᵀ gives coordinates with the same Gram (up to
rounding): :func:`explicit_coordinates`, the exact test against the explicit run.

Decisions where the paper is silent: this is an implementation choice (``simulation='gram'``), not the paper's;
the draws of one replica come from its (seed, "gram") stream (the cluster indices from its (seed, "train") /
(seed, "test") streams, like the explicit run), so gram and explicit runs of a seed share no numbers, only a law.
"""

from __future__ import annotations

import numpy as np
import torch

from ...data.base import Batch
from ...errors import ConfigError
from ...placement import to_run
from ...utils import generator
from .data import MultiClusterDistribution, orthogonal_centres, relabel

# the Gaussian roles of one replica, in the order of G's rows
ROLES = ("train", "test", "init/binary", "init/multiclass", "thm46")


def role_counts(cfg) -> dict[str, int]:
    """How many N(0, I_d) rows each role needs (0 for a role the config does not have)."""
    return {"train": cfg.n, "test": int(getattr(cfg, "n_test", 0) or 0), "init/binary": 2 * cfg.m,
            "init/multiclass": cfg.k * int(getattr(cfg, "h", 1)), "thm46": int(getattr(cfg, "thm46_starts", 0))}


def n_directions(cfg) -> int:
    """The centre directions: k, plus the shared one of near-orthogonal centres (Fig 9)."""
    return cfg.k + (1 if cfg.pairwise_cos > 0 else 0)


def size(cfg) -> tuple[int, int]:
    """(N, D): the Gaussian rows per replica and the coordinates per vector, D = k (+1) + N."""
    N = sum(role_counts(cfg).values())
    return N, n_directions(cfg) + N


def bartlett(N: int, dof: int, gen: torch.Generator) -> torch.Tensor:
    """(N, N) float64 lower-triangular L with L Lᵀ ~ Wishart_N(dof, I) exactly (Bartlett decomposition).

    The χ² draws use numpy's gamma sampler (Marsaglia–Tsang, exact for any shape; at dof = 10^9 its float64 draw
    resolves the χ²'s spread √(2·dof) to ~10^-7 relative), seeded from ``gen`` so the stream stays the replica's."""
    if dof < N:
        raise ValueError(f"Bartlett needs dof >= N; got dof={dof}, N={N}")
    L = torch.randn(N, N, generator=gen, dtype=torch.float64, device="cpu").tril_(-1)
    seed = int(torch.randint(0, 2**62, (1,), generator=gen, device="cpu"))
    dofs = float(dof) - np.arange(N, dtype=np.float64)  # χ²_{dof−i+1} for the 1-based row i
    L.diagonal().copy_(torch.from_numpy(np.sqrt(np.random.default_rng(seed).chisquare(dofs))))
    return L


def coordinates(N: int, k: int, d: int, gen: torch.Generator) -> torch.Tensor:
    """(N, k + N): coordinates of N iid N(0, I_d) vectors in the basis (e_1..e_k, then the rest), exact in law."""
    return torch.cat([torch.randn(N, k, generator=gen, dtype=torch.float64, device="cpu"), bartlett(N, d - k, gen)], 1)


def explicit_coordinates(G: torch.Tensor, k: int) -> torch.Tensor:
    """The same construction from explicit draws G (N, d): [G_c | Rᵀ] with G_restᵀ = QR; the rows have G's Gram."""
    Q, R = torch.linalg.qr(G[:, k:].T, mode="reduced")
    return torch.cat([G[:, :k], R.T], 1)


def check_fits(cfg) -> None:
    """Bartlett needs d − k ≥ N: the N Gaussian vectors must be linearly independent of each other and of μ."""
    N, D = size(cfg)
    if cfg.d - n_directions(cfg) < N:
        raise ConfigError(f"simulation='gram' needs d >= k + N = {D} (N = {N} Gaussian vectors: n, n_test, both "
                          f"nets' neurons, thm46_starts); got d={cfg.d}: use simulation='explicit' or raise d")


def assemble(cfg, seeds, mu: torch.Tensor, rows: torch.Tensor, clusters: dict[str, torch.Tensor],
             d_nominal: int | None, dtype, device=None):
    """dist, training and test batches (Def 3.1: x = αμ_j + σξ) from the centres ``mu`` (E, k, D), the Gaussian
    ``rows`` (E, N, D) in ROLES order and the cluster indices per role (E, count); the initial weights and the
    Thm 4.6 starts stay unscaled in ``dist.gaussians``. Explicit vectors (D = d) or coordinates (D = k + N).
    ``rows`` is consumed: the data are built in place (one N×D block per replica is the whole memory)."""
    counts = role_counts(cfg)
    rows = rows.to(device=device, dtype=dtype)
    split = dict(zip(ROLES, rows.split([counts[r] for r in ROLES], dim=1)))
    pos = torch.zeros(cfg.k, dtype=torch.bool, device="cpu")
    pos[torch.tensor(cfg.positive_set(), dtype=torch.long, device="cpu")] = True
    dist = MultiClusterDistribution(mu.to(dtype=dtype), pos, cfg.alpha, cfg.sigma, d_nominal=d_nominal,
                                    gaussians={r: split[r] for r in ROLES[2:]}).to(device)  # rows: there already
    mu = dist.mu
    batches: list[Batch | None] = []
    for role in ("train", "test"):
        if not counts[role]:
            batches.append(None)
            continue
        j = to_run(clusters[role], device)
        x = split[role].mul_(cfg.sigma)
        for e in range(len(seeds)):
            x[e].add_(mu[e, j[e]], alpha=cfg.alpha)  # Def 3.1 / Remark A.5: x = αμ_j + σξ
        batches.append(Batch(x, dist.signs[j], {"cluster": j}))
    assert batches[0] is not None  # n ≥ 1 (config)
    tr = relabel(batches[0], dist.positive, list(seeds), cfg.labels)  # test labels: always the paper's
    return dist, tr, batches[1]


def draw_clusters(cfg, seeds) -> dict[str, torch.Tensor]:
    """j ~ Unif[k] per point, from the replica's (seed, role) stream as in :meth:`MultiClusterDistribution.sample`."""
    counts = role_counts(cfg)
    return {role: torch.stack([torch.randint(cfg.k, (counts[role],), generator=generator(s, role), device="cpu")
                               for s in seeds]) for role in ("train", "test")}


def centres(cfg, E: int, D: int, d_nominal: int) -> torch.Tensor:
    """(E, k, D) centres √d·e_j (or Fig 9's near-orthogonal ones) in the first coordinates: the run is rotation
    invariant, so this is the law of any orthogonal centres."""
    mu = orthogonal_centres(cfg.k, D, "basis", torch.Generator(), cfg.pairwise_cos, cfg.norm_scales, norm_d=d_nominal)
    return mu.expand(E, -1, -1)


def gram_data(cfg, seeds, dtype, device=None):
    """fa-synthetic's data in reduced coordinates: (dist, train batch, test batch or None), exact in law."""
    check_fits(cfg)
    N, D = size(cfg)
    rows = torch.empty(len(seeds), N, D, dtype=dtype, device=device)
    for e, s in enumerate(seeds):  # one float64 factor at a time, then cast: peak memory ≈ E·N·D·itemsize + 8·N·D
        rows[e] = coordinates(N, n_directions(cfg), cfg.d, generator(s, "gram"))
    return assemble(cfg, seeds, centres(cfg, len(seeds), D, cfg.d), rows, draw_clusters(cfg, seeds), cfg.d,
                    dtype, device)
