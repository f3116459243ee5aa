"""Multi-view data of Midpoint Mixup (Chidambaram et al., ICML 2023): Def 3.1 (linear regime) and Def 4.1 (patches).

Every input is stored in the coordinates of the 2k orthonormal features (feature f = 2y + ℓ − 1 is v_{y,ℓ},
ℓ ∈ {1, 2}): there is no Gaussian noise, so every patch lies in span{v_{s,ℓ}} and these coordinates are exact.
``embed`` maps them to R^d with orthonormal features V (2k × d) for a full-dimensional simulation.

Open decisions of Def 4.1 ("via any method") are constructor arguments, each a config field of the experiment:
* ``positions``: "fixed" puts P_{y,1} = {1..C_P}, P_{y,2} = {C_P+1..2C_P} in every point (as the public code);
  "random" draws the 2C_P signal positions uniformly per point.
* ``bijection``: φ: P_{y,1} → P_{y,2}, "ordered" (i-th to i-th) or "random" (a random permutation per point).
* ``beta_law``: the symmetric law of β_{y,p} on [δ1, δ2 − δ1]: "uniform" (footnote 1's example) or "triangular"
  (mean of two uniforms).
* ``noise_classes``: the Q classes s_j of a point's feature noise: "random" (Q distinct classes ≠ y, uniformly per
  point; App. C.3 does so for Q = 1) or "next" (y+1, …, y+Q mod k, fixed per class).
* ``gamma_law``: γ_{j,ℓ} ~ U[δ3, δ4], "per-point" (one draw shared by all noise patches of a point: γ carries no
  patch index in Def 4.1) or "per-patch".
* labels are uniform on [k] (Def 4.1 step 1); ``sample(labels=...)`` fixes them (balanced test sets).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import overload

import torch

from ...data.base import Batch
from ...utils import cpu_draws, generator, per_replica


@overload
def feature_index(y: torch.Tensor, ell: int) -> torch.Tensor: ...
@overload
def feature_index(y: int, ell: int) -> int: ...
def feature_index(y: torch.Tensor | int, ell: int) -> torch.Tensor | int:
    """Coordinate of v_{y,ℓ} (ℓ ∈ {1, 2})."""
    return 2 * y + (ell - 1)


def orthonormal_features(seeds: list[int], k: int, d: int, dtype=torch.float64, device=None) -> torch.Tensor:
    """(E, 2k, d): 2k orthonormal features per replica, rows of the QR of a Gaussian d × 2k matrix."""
    def draw(g):
        q, _ = torch.linalg.qr(torch.randn(d, 2 * k, generator=g, dtype=torch.float64, device="cpu"))
        return q.T.contiguous()

    return per_replica(seeds, "features", draw, device=device, dtype=dtype)


# ------------------------------------------------------------------------------------------ Def 3.1
@dataclass
class LinearMultiView:
    """Def 3.1: x = β v_{y,1} + (1 − β) v_{y,2}, β ~ U[beta_lo, beta_hi] (0.1, 0.9), y uniform on [k]."""

    k: int
    beta_lo: float = 0.1
    beta_hi: float = 0.9
    E: int = field(default=1, kw_only=True)  # replicas: the law is the same for all, each draws its own points

    @classmethod
    def create(cls, seeds: list[int], k: int, beta_lo: float = 0.1, beta_hi: float = 0.9) -> LinearMultiView:
        return cls(k, beta_lo, beta_hi, E=len(seeds))

    @property
    def d(self) -> int:
        """Inputs are in the coordinates of the 2k features."""
        return 2 * self.k

    def sample(self, n: int, seeds: list[int], role: str = "train", dtype=torch.float64,
               labels: torch.Tensor | None = None, device=None) -> Batch:
        k = self.k

        @cpu_draws
        def draw(g):
            y = torch.randint(k, (n,), generator=g) if labels is None else labels.clone()
            beta = self.beta_lo + (self.beta_hi - self.beta_lo) * torch.rand(n, generator=g, dtype=torch.float64)
            x = torch.zeros(n, 2 * k, dtype=torch.float64)
            x[torch.arange(n), 2 * y] = beta  # Eq. 3.2
            x[torch.arange(n), 2 * y + 1] = 1 - beta
            return torch.cat([x, y[:, None].double(), beta[:, None]], 1)

        out = per_replica(seeds, f"data/{role}", draw, device=device)
        return Batch(out[..., : 2 * k].to(dtype), out[..., 2 * k].long(), {"beta": out[..., 2 * k + 1].to(dtype)})


# ------------------------------------------------------------------------------------------ Def 4.1
@dataclass
class MultiViewDistribution:
    """Def 4.1 patch data in feature coordinates: x (E, n, P, 2k)."""

    k: int
    P: int
    C_P: int = 1
    delta1: float = 0.5
    delta2: float = 2.0
    delta3: float = 0.002
    delta4: float = 0.002
    Q: int = 2
    positions: str = "fixed"
    bijection: str = "ordered"
    beta_law: str = "uniform"
    noise_classes: str = "random"
    gamma_law: str = "per-point"
    E: int = field(default=1, kw_only=True)  # replicas: the law is the same for all, each draws its own points

    def __post_init__(self):
        assert self.P >= 2 * self.C_P and self.Q < self.k and self.delta1 <= self.delta2 / 2

    @classmethod
    def create(cls, seeds: list[int], k: int, P: int, **params) -> MultiViewDistribution:
        """Def 4.1 for len(seeds) replicas; ``params``: the other fields (C_P, δ1..δ4, Q, the open decisions)."""
        return cls(k, P, **params, E=len(seeds))

    @property
    def d(self) -> int:
        """Patches are in the coordinates of the 2k features (``embed`` maps them to R^d)."""
        return 2 * self.k

    # ---------------------------------------------------------------- one replica
    @cpu_draws
    def _beta(self, g, shape):
        lo, hi = self.delta1, self.delta2 - self.delta1
        u = torch.rand(*shape, generator=g, dtype=torch.float64)
        if self.beta_law == "triangular":
            u = (u + torch.rand(*shape, generator=g, dtype=torch.float64)) / 2
        return lo + (hi - lo) * u

    @cpu_draws
    def _draw(self, g: torch.Generator, n: int, labels: torch.Tensor | None):
        k, P, C, Q = self.k, self.P, self.C_P, self.Q
        y = torch.randint(k, (n,), generator=g) if labels is None else labels.clone().long()
        beta = self._beta(g, (n, C))  # β_{y,p}, p ∈ P_{y,1}
        if self.positions == "fixed":
            pos = torch.arange(P).expand(n, P).clone()
        else:
            pos = torch.rand(n, P, generator=g).argsort(-1)
        p1, p2 = pos[:, :C], pos[:, C: 2 * C]
        if self.bijection == "random":  # φ(p1[:, c]) = p2[:, perm[c]]
            p2 = p2.gather(1, torch.rand(n, C, generator=g).argsort(-1))
        if self.noise_classes == "random":
            scores = torch.rand(n, k, generator=g)
            scores[torch.arange(n), y] = -1.0
            s = scores.topk(Q, -1).indices  # Q distinct classes ≠ y
        else:
            s = (y[:, None] + 1 + torch.arange(Q)) % k
        lo, hi = self.delta3, self.delta4
        if self.gamma_law == "per-point":
            gam = lo + (hi - lo) * torch.rand(n, 1, Q, 2, generator=g, dtype=torch.float64)
            gam = gam.expand(n, P, Q, 2)
        else:
            gam = lo + (hi - lo) * torch.rand(n, P, Q, 2, generator=g, dtype=torch.float64)
        x = torch.zeros(n, P, 2 * k, dtype=torch.float64)
        # feature noise on every patch: Σ_j Σ_ℓ γ_{j,ℓ} v_{s_j,ℓ}
        fidx = (2 * s[:, :, None] + torch.arange(2)).reshape(n, 1, 2 * Q).expand(n, P, 2 * Q)
        x.scatter_add_(2, fidx, gam.reshape(n, P, 2 * Q))
        sig = torch.zeros(n, P, dtype=torch.bool)
        sig.scatter_(1, torch.cat([p1, p2], 1), True)
        x[sig] = 0.0  # signal patches carry no noise
        rows = torch.arange(n)[:, None].expand(n, C)
        x[rows, p1, (2 * y)[:, None].expand(n, C)] = beta  # β_{y,p} v_{y,1}
        x[rows, p2, (2 * y + 1)[:, None].expand(n, C)] = self.delta2 - beta  # (δ2 − β_{y,p}) v_{y,2}
        return x, y, beta, s

    def sample(self, n: int, seeds: list[int], role: str = "train", dtype=torch.float64,
               labels: torch.Tensor | None = None, device=None) -> Batch:
        """N i.i.d. draws per replica from the (seed, data/role) stream (on the CPU, then moved to ``device``);
        ``labels`` (n,) fixes y."""
        labels = None if labels is None else labels.cpu()
        xs, ys, bs, ss = zip(*[self._draw(generator(s, f"data/{role}"), n, labels) for s in seeds])
        return Batch(torch.stack(xs).to(dtype), torch.stack(ys),
                     {"beta": torch.stack(bs).to(dtype), "noise_classes": torch.stack(ss)}).to(device)

    def sample_balanced(self, per_class: int, seeds: list[int], role: str = "test", dtype=torch.float64,
                        device=None) -> Batch:
        labels = torch.arange(self.k, device="cpu").repeat_interleave(per_class)
        return self.sample(len(labels), seeds, role, dtype, labels=labels, device=device)

    # ---------------------------------------------------------------- Def 4.5
    def single_view(self, x: torch.Tensor, y: torch.Tensor, ell: int) -> torch.Tensor:
        """Def 4.5: keep v_{y,ℓ}; replace every patch holding an instance of v_{y,3−ℓ} by the zero vector.

        x (E, n, P, 2k) in feature coordinates, y (E, n). Class-y features never appear in a class-y point's
        noise patches, so exactly the C_P patches P_{y,3−ℓ}(x) are zeroed.
        """
        other = feature_index(y, 3 - ell)  # (E, n)
        idx = other[..., None, None].expand(*x.shape[:-1], 1)
        holds = x.gather(-1, idx).squeeze(-1) != 0  # (E, n, P)
        return x.masked_fill(holds[..., None], 0.0)

    def linear_margin(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """min_i [h^{y_i} − max_{s≠y_i} h^s] of h^y = Σ_p <v_{y,1} + v_{y,2}, x^(p)> (Prop 4.4's model class).

        Positive: the data are linearly learnable (Prop 4.4's regime P·δ3 ≫ δ2 is *not* in force).
        """
        h = x.sum(-2).reshape(*x.shape[:-2], self.k, 2).sum(-1)  # (E, n, k)
        hy = h.gather(-1, y[..., None]).squeeze(-1)
        other = h.scatter(-1, y[..., None], float("-inf")).max(-1).values
        return (hy - other).min(-1).values


def embed(x: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """Feature coordinates (E, n, [P,] 2k) → R^d with features V (E, 2k, d)."""
    E = x.shape[0]
    return (x.reshape(E, -1, x.shape[-1]) @ V).reshape(*x.shape[:-1], V.shape[-1])


def compress_patches(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge patch positions whose contents agree for every replica and point: (x', multiplicity (P',)).

    Σ_p act(<w, x^(p)>) = Σ_{p'} mult_{p'} act(<w, x'^(p')>), and midpoints and mixes of two points keep the
    equality (they act patch-wise), so the merge is exact for every objective here. With fixed positions and
    per-point γ the P − 2C_P identical noise patches become one patch of multiplicity P − 2C_P.
    """
    P = x.shape[-2]
    keep, mult, taken = [], [], torch.zeros(P, dtype=torch.bool, device=x.device)
    flat = x.movedim(-2, 0).reshape(P, -1)
    for p in range(P):
        if taken[p]:
            continue
        same = (flat == flat[p]).all(-1) & ~taken
        taken |= same
        keep.append(p)
        mult.append(int(same.sum()))
    return x[..., keep, :].contiguous(), torch.tensor(mult, dtype=x.dtype, device=x.device)
